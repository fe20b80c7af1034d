"""Isotropy metrics on synthetic spaces with known answers, and the two-panel space plot."""

from __future__ import annotations

import numpy as np
import pytest
from grid_reference import isoscore
from PIL import Image

from defsent_plus.errors import DefSentError
from defsent_plus.spaces.isotropy import (
    isoscore_from_variances,
    isotropy_metrics,
    mean_pair_cosine,
    plot_space,
)

ROWS, DIM = 20_000, 20


@pytest.fixture(scope="module")
def isotropic() -> np.ndarray:
    return np.random.default_rng(0).normal(size=(ROWS, DIM)).astype(np.float32)


@pytest.fixture(scope="module")
def narrow_cone() -> np.ndarray:
    """Like raw LM embeddings: a large common offset, and variance concentrated in a few directions."""
    rng = np.random.default_rng(1)
    spectrum = 1.0 / np.arange(1, DIM + 1) ** 2
    rotation, _ = np.linalg.qr(rng.normal(size=(DIM, DIM)))
    offset = np.full(DIM, 10.0 / np.sqrt(DIM))
    return ((rng.normal(size=(ROWS, DIM)) * np.sqrt(spectrum)) @ rotation + offset).astype(np.float32)


def test_isotropic_gaussian_is_isotropic(isotropic):
    metrics = isotropy_metrics(isotropic)
    assert metrics["n_entries"] == ROWS and metrics["dim"] == DIM
    assert abs(metrics["mean_cosine"]) < 0.01
    assert metrics["isoscore"] > 0.99
    assert metrics["z_ratio"] > 0.8 and metrics["log_z_ratio"] == pytest.approx(np.log(metrics["z_ratio"]))
    assert metrics["top10_components"] == 2
    assert metrics["top10_variance_share"] == pytest.approx(0.1, abs=0.01)
    assert metrics["mean_abs_skewness"] < 0.05
    assert abs(metrics["mean_excess_kurtosis"]) < 0.1


def test_narrow_cone_is_anisotropic(narrow_cone):
    metrics = isotropy_metrics(narrow_cone)
    assert metrics["mean_cosine"] > 0.95
    assert metrics["isoscore"] < 0.1
    assert metrics["z_ratio"] < 1e-6
    assert metrics["top10_variance_share"] > 0.6


def test_offset_alone_does_not_change_isoscore(isotropic):
    """IsoScore is defined on the PCA (centered) variances: a translation changes cosines, not IsoScore."""
    shifted = isotropic + 5.0
    assert isoscore(shifted) == pytest.approx(isoscore(isotropic), abs=1e-6)
    assert mean_pair_cosine(shifted) > 0.9


def test_isoscore_extremes_match_the_definition():
    assert isoscore_from_variances(np.ones(50)) == pytest.approx(1.0)
    assert isoscore_from_variances(np.r_[1.0, np.zeros(49)]) == pytest.approx(0.0, abs=1e-12)
    # k of n dimensions used with equal variance: IsoScore = (k - 1) / (n - 1) (Rudman et al. 2022)
    n, k = 100, 25
    assert isoscore_from_variances(np.r_[np.ones(k), np.zeros(n - k)]) == pytest.approx((k - 1) / (n - 1))
    # invariant to the overall scale of the variances
    assert isoscore_from_variances(np.r_[np.ones(k), np.zeros(n - k)] * 7.5) == pytest.approx((k - 1) / (n - 1))


def test_laplace_axes_have_excess_kurtosis_three():
    E = np.random.default_rng(2).laplace(size=(200_000, 4)).astype(np.float32)
    metrics = isotropy_metrics(E, n_pairs=1000)
    assert metrics["mean_excess_kurtosis"] == pytest.approx(3.0, abs=0.2)
    assert metrics["mean_abs_skewness"] < 0.05


def test_skewed_axes_have_known_skewness():
    E = np.random.default_rng(3).exponential(size=(200_000, 4)).astype(np.float32)  # skew 2, ex. kurtosis 6
    metrics = isotropy_metrics(E, n_pairs=1000)
    assert metrics["mean_abs_skewness"] == pytest.approx(2.0, abs=0.1)
    assert metrics["mean_excess_kurtosis"] == pytest.approx(6.0, abs=0.8)


def test_metrics_are_deterministic_for_a_seed(narrow_cone):
    assert isotropy_metrics(narrow_cone, seed=5) == isotropy_metrics(narrow_cone, seed=5)
    assert mean_pair_cosine(narrow_cone, seed=5) != mean_pair_cosine(narrow_cone, seed=6)


def test_large_norms_do_not_overflow_the_partition_function(isotropic):
    metrics = isotropy_metrics(isotropic * 1000, n_pairs=1000)
    assert np.isfinite(metrics["log_z_ratio"]) and metrics["log_z_ratio"] < 0
    assert 0 <= metrics["z_ratio"] < 1


def test_nan_in_space_is_reported(isotropic):
    E = isotropic.copy()
    E[3, 1] = np.nan
    with pytest.raises(DefSentError, match="NaN at row 3"):
        isotropy_metrics(E)


def test_plot_writes_one_valid_png_and_no_temp_files(tmp_path, narrow_cone):
    out = tmp_path / "plots" / "space.png"
    returned = plot_space(narrow_cone, out, "all-MiniLM-L6-v2 / step 1 / entry space", max_points=2000)
    assert returned == out and out.stat().st_size > 0
    with Image.open(out) as image:
        image.verify()
    with Image.open(out) as image:
        assert image.format == "PNG" and image.width > 400 and image.height > 200
    assert [p.name for p in out.parent.iterdir()] == ["space.png"]


def test_plot_handles_fewer_entries_than_max_points(tmp_path):
    E = np.random.default_rng(4).normal(size=(50, 6)).astype(np.float32)
    out = plot_space(E, tmp_path / "small.png", "tiny", max_points=5000)
    assert out.stat().st_size > 0
