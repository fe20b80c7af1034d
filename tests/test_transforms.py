"""Entry-space transforms: the ICA recipe against scikit-learn, fast paths against the reference, bad input.

Tolerances (outputs are on the paper's x100 scale; unit-variance sources have |values| up to ~6 x 100):
- torch float64 vs sklearn float64: max |diff| <= 1e-3 (1e-5 in unit-variance units; measured <= 3e-7).
- float32 paths (sklearn or torch) vs sklearn float64: max |diff| <= 0.25 (2.5e-3; measured <= 0.08).
These hold on well-conditioned inputs (clearly non-Gaussian sources, convergence within a few dozen
iterations). On realistic spaces with near-Gaussian directions FastICA is chaotic: any change of rounding,
even the BLAS thread count of the reference itself, can end in a different (equally valid) solution.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import threadpoolctl
from sklearn.decomposition import FastICA
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler

from defsent_plus.errors import DefSentError
from defsent_plus.spaces.transforms import apply_transform, sklearn_initial_unmixing

TORCH_FLOAT64_ATOL = 1e-3
FLOAT32_ATOL = 0.25  # after aligned_components: float32 may order two sources of one distribution differently
MATCHED_CORRELATION = 0.99


def aligned_components(out: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """``out``'s columns in ``reference``'s order and sign, matched by |correlation|: FastICA defines sources up to
    order and sign, and in float32 two sources of the same distribution can converge to each other's rows (seen on
    an H200 and on its host's CPU, docs/gpu.md). Each match must be a near-copy, so a wrong source still fails."""
    from scipy.optimize import linear_sum_assignment

    k = reference.shape[1]
    correlation = np.corrcoef(reference.T, out.T)[:k, k:]
    rows, cols = linear_sum_assignment(-np.abs(correlation))
    matched = np.abs(correlation[rows, cols])
    assert matched.min() >= MATCHED_CORRELATION, f"a component has no near-copy: |r| = {matched.min():.3f}"
    return out[:, cols] * np.sign(correlation[rows, cols])


def mixed_sources(rows: int = 1500, cols: int = 8, seed: int = 0) -> np.ndarray:
    """Clearly non-Gaussian sources (uniform, Laplace, skewed, bimodal), randomly mixed, far from the origin."""
    rng = np.random.default_rng(seed)
    draws = [
        lambda n: rng.uniform(-1.7, 1.7, n),
        lambda n: rng.laplace(size=n),
        lambda n: rng.exponential(size=n) - 1,
        lambda n: np.sign(rng.normal(size=n)) + 0.3 * rng.normal(size=n),
    ]
    sources = np.column_stack([draws[j % len(draws)](rows) for j in range(cols)])
    return (sources @ rng.normal(size=(cols, cols)) + 5.0).astype(np.float32)


def paper_pipeline(E: np.ndarray, **overrides) -> tuple[np.ndarray, FastICA]:
    """StandardScaler + FastICA(paper settings) x 100, written out with scikit-learn directly."""
    options = dict(
        n_components=E.shape[1],
        whiten="unit-variance",
        fun="logcosh",
        max_iter=1000,
        tol=1e-4,
        random_state=42,
    )
    options.update(overrides)
    model = FastICA(**options)
    sources = model.fit_transform(StandardScaler().fit_transform(E.astype(np.float64)))
    return sources * 100, model


@pytest.fixture(scope="module")
def space() -> np.ndarray:
    return mixed_sources()


@pytest.fixture(scope="module")
def reference(space: np.ndarray) -> np.ndarray:
    return paper_pipeline(space)[0]


# --- simple transforms -------------------------------------------------------------------------------------


def test_none_returns_float32_copy_of_input(space):
    out, info = apply_transform(space.astype(np.float64), "none")
    assert out.dtype == np.float32 and info == {"transform": "none"}
    np.testing.assert_array_equal(out, space)


def test_center_subtracts_the_mean(space):
    out, info = apply_transform(space, "center")
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.mean(axis=0), 0, atol=1e-5)
    np.testing.assert_allclose(out, space - space.mean(axis=0, dtype=np.float64), atol=1e-5)
    assert info["mean_norm"] > 1


def test_whiten_gives_identity_covariance(space):
    out, info = apply_transform(space, "whiten")
    assert out.shape == space.shape and out.dtype == np.float32
    np.testing.assert_allclose(out.mean(axis=0), 0, atol=1e-5)
    np.testing.assert_allclose(np.cov(out.T.astype(np.float64)), np.eye(space.shape[1]), atol=1e-4)
    assert info["n_components"] == space.shape[1]


# --- ICA: the reference recipe ----------------------------------------------------------------------------


def test_ica_sklearn_backend_equals_paper_pipeline(space, reference):
    out, info = apply_transform(space, "ica", backend="sklearn", precision="float64")
    assert out.dtype == np.float32 and out.shape == space.shape
    np.testing.assert_allclose(out, reference, rtol=1e-6, atol=1e-4)
    assert info["backend"] == "sklearn" and info["precision"] == "float64"
    assert (info["max_iter"], info["tol"], info["random_state"], info["fun"], info["scale"]) == (
        1000,
        1e-4,
        42,
        "logcosh",
        100.0,
    )


def test_ica_output_has_the_papers_scale(space):
    out, _ = apply_transform(space, "ica", backend="sklearn")
    np.testing.assert_allclose(out.std(axis=0), 100, rtol=1e-4)
    out_unit, info = apply_transform(space, "ica", backend="sklearn", scale=1.0)
    np.testing.assert_allclose(out, out_unit * 100, rtol=1e-5, atol=1e-3)
    assert info["scale"] == 1.0


def test_initial_matrix_is_the_one_sklearn_draws(space):
    """FastICA(w_init=our draw) and FastICA(random_state=42) give identical results."""
    k = space.shape[1]
    seeded, _ = paper_pipeline(space)
    given, _ = paper_pipeline(space, w_init=sklearn_initial_unmixing(42, k, np.dtype(np.float64)))
    np.testing.assert_array_equal(seeded, given)


def test_ica_convergence_is_reported(space):
    _, info = apply_transform(space, "ica", backend="sklearn")
    assert info["converged"] is True and 1 <= info["n_iter"] < info["max_iter"]
    assert info["numerical_rank"] == space.shape[1]
    assert info["warnings"] == [] and info["seconds"] >= 0 and info["threads"] >= 1


@pytest.mark.parametrize("backend", ["sklearn", "torch"])
def test_non_convergence_is_captured_not_spammed(space, backend):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _, info = apply_transform(space, "ica", backend=backend, max_iter=2)
    assert not [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert info["converged"] is False and info["n_iter"] == 2
    assert len(info["warnings"]) == 1 and "did not converge" in info["warnings"][0]


def test_ica_is_deterministic(space):
    first, _ = apply_transform(space, "ica", backend="torch", threads=1)
    second, _ = apply_transform(space, "ica", backend="torch", threads=1)
    np.testing.assert_array_equal(first, second)


# --- ICA: fast paths against the reference ----------------------------------------------------------------


def test_torch_float64_equals_sklearn(space, reference):
    out, info = apply_transform(space, "ica", backend="torch", precision="float64")
    _, model = paper_pipeline(space)
    assert info["backend"] == "torch" and info["n_iter"] == model.n_iter_
    assert np.abs(out - reference).max() <= TORCH_FLOAT64_ATOL


@pytest.mark.parametrize("seed", [1, 2])
def test_torch_float64_equals_sklearn_on_more_spaces(seed):
    E = mixed_sources(rows=3000, cols=16, seed=seed)
    expected, model = paper_pipeline(E)
    out, info = apply_transform(E, "ica", backend="torch", precision="float64")
    assert info["n_iter"] == model.n_iter_
    assert np.abs(out - expected).max() <= TORCH_FLOAT64_ATOL


@pytest.mark.parametrize("backend", ["sklearn", "torch"])
def test_float32_paths_match_float64_reference(space, reference, backend):
    out, info = apply_transform(space, "ica", backend=backend, precision="float32")
    assert info["precision"] == "float32"
    assert np.abs(aligned_components(out, reference) - reference).max() <= FLOAT32_ATOL


def test_aligned_components_undo_a_swap_and_a_flip_but_not_a_different_source(reference):
    swapped = reference.copy()
    swapped[:, [0, 1]] = swapped[:, [1, 0]] * [1, -1]
    assert np.array_equal(aligned_components(swapped, reference), reference)
    other = swapped.copy()
    other[:, 0] = np.random.default_rng(0).normal(size=len(other))
    with pytest.raises(AssertionError, match="no near-copy"):
        aligned_components(other, reference)


def reference_script_ica(E32: np.ndarray) -> np.ndarray:
    """ICA as the reference's ICA-transform.py computes it: the float32 matrix straight into StandardScaler and
    FastICA (paper options), on one BLAS thread as this workflow pins it, then x 100."""
    with threadpoolctl.threadpool_limits(1):
        sources = FastICA(n_components=E32.shape[1], whiten="unit-variance", fun="logcosh", max_iter=1000, tol=1e-4,
                          random_state=42).fit_transform(StandardScaler().fit_transform(E32))
    assert sources.dtype == np.float32
    return sources * 100


def test_default_ica_is_the_references_float32_computation_exactly(space):
    out, info = apply_transform(space, "ica", backend="sklearn", threads=1)
    assert info["precision"] == "float32" and info["threads"] == 1
    np.testing.assert_array_equal(out, reference_script_ica(space.astype(np.float32)))


def test_float32_and_float64_ica_are_different_computations(space):
    float32, _ = apply_transform(space, "ica", backend="sklearn", precision="float32")
    float64, _ = apply_transform(space, "ica", backend="sklearn", precision="float64")
    assert not np.array_equal(float32, float64)


@pytest.mark.parametrize("fun", ["exp", "cube"])
def test_torch_other_contrast_functions_equal_sklearn(space, fun):
    expected, _ = paper_pipeline(space, fun=fun)
    out, _ = apply_transform(space, "ica", backend="torch", fun=fun, precision="float64")
    assert np.abs(out - expected).max() <= TORCH_FLOAT64_ATOL


def test_auto_backend_is_torch_on_gpu_and_sklearn_on_cpu(space, monkeypatch):
    import defsent_plus.spaces.transforms as transforms

    assert transforms.resolve_backend("auto", "unit-variance", "logcosh", "parallel") == (
        "torch" if transforms.cuda_available() else "sklearn"
    )
    monkeypatch.setattr(transforms, "cuda_available", lambda: True)
    assert transforms.resolve_backend("auto", "unit-variance", "logcosh", "parallel") == "torch"
    assert transforms.resolve_backend("auto", "unit-variance", "logcosh", "deflation") == "sklearn"
    monkeypatch.setattr(transforms, "cuda_available", lambda: False)
    assert transforms.resolve_backend("auto", "unit-variance", "logcosh", "parallel") == "sklearn"


def test_auto_backend_falls_back_to_sklearn_for_options_torch_lacks(space):
    _, info = apply_transform(space, "ica", algorithm="deflation", max_iter=50)
    assert info["backend"] == "sklearn" and info["backend_requested"] == "auto"
    with pytest.raises(DefSentError, match="backend 'torch' implements"):
        apply_transform(space, "ica", backend="torch", algorithm="deflation")


# --- bad input --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["none", "center", "whiten", "ica"])
def test_nan_is_reported_with_its_row(space, name):
    E = space.copy()
    E[7, 3] = np.nan
    with pytest.raises(DefSentError, match=r"entry space contains NaN at row 7 \(column 3\)"):
        apply_transform(E, name)


def test_inf_is_reported_with_its_row(space):
    E = space.copy()
    E[11, 0] = -np.inf
    with pytest.raises(DefSentError, match="entry space contains inf at row 11"):
        apply_transform(E, "ica")


@pytest.mark.parametrize("name", ["whiten", "ica"])
def test_fewer_entries_than_dimensions_is_refused(name):
    E = np.random.default_rng(0).normal(size=(5, 8)).astype(np.float32)
    with pytest.raises(DefSentError, match="at least as many entries as dimensions.*5 entries x 8"):
        apply_transform(E, name)


@pytest.mark.parametrize("name", ["whiten", "ica"])
def test_constant_dimension_is_refused(space, name):
    E = space.copy()
    E[:, 2] = 0.5
    with pytest.raises(DefSentError, match=r"constant dimension\(s\) \(first: column 2\)"):
        apply_transform(E, name)


@pytest.mark.parametrize("name", ["whiten", "ica"])
def test_layernorm_like_rank_deficiency_is_reported(space, name):
    """Rows with zero coordinate mean (like LayerNorm outputs) span hidden - 1 directions: run, but say so."""
    E = space - space.mean(axis=1, keepdims=True)
    kwargs = {"backend": "sklearn", "max_iter": 50} if name == "ica" else {}
    out, info = apply_transform(E, name, **kwargs)
    assert np.isfinite(out).all()
    assert info["numerical_rank"] == space.shape[1] - 1
    assert any("numerical rank 7 < 8" in message for message in info["warnings"])


def test_full_rank_space_has_no_rank_warning(space):
    _, info = apply_transform(space, "whiten")
    assert info["numerical_rank"] == space.shape[1] and info["warnings"] == []


def test_unknown_transform_and_parameters_are_refused(space):
    with pytest.raises(DefSentError, match="unknown transform 'pca'"):
        apply_transform(space, "pca")
    with pytest.raises(DefSentError, match=r"unknown parameter\(s\) \['max_iters'\]"):
        apply_transform(space, "ica", max_iters=10)
    with pytest.raises(DefSentError, match="backend must be one of"):
        apply_transform(space, "ica", backend="jax")
    with pytest.raises(DefSentError, match="precision must be one of"):
        apply_transform(space, "ica", precision="float16")


def test_non_matrix_input_is_refused():
    with pytest.raises(DefSentError, match="2-d matrix"):
        apply_transform(np.zeros(5, dtype=np.float32), "center")


@pytest.mark.parametrize(("transform", "imports_torch"), [("center", False), ("whiten", False), ("ica", True)])
def test_only_a_transform_that_may_run_on_torch_imports_it(tmp_path, transform, imports_torch):
    """center and whiten are numpy: their jobs start without torch (seconds each) and hold no GPU slot."""
    import subprocess
    import sys

    np.save(tmp_path / "amp.npy", np.random.default_rng(0).normal(size=(60, 8)).astype(np.float32))
    code = ("import sys; from defsent_plus.spaces.transforms import write_transform; "
            f"write_transform({str(tmp_path / 'amp.npy')!r}, {transform!r}, {{'max_iter': 50}} if {transform!r} == "
            f"'ica' else {{}}, 1, {str(tmp_path / 'out.npy')!r}, {str(tmp_path / 'out.json')!r}); "
            "print('torch' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == str(imports_torch) and (tmp_path / "out.npy").is_file()
