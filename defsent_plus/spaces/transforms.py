"""Candidate-space transforms of an entry space E [n_entries, hidden], selected by name: ``none``, ``center``,
``whiten`` (PCA whitening of all ``hidden`` components) and ``ica``, the DefSent+ recipe (Appendix A, after Yamagiwa
et al. 2023): StandardScaler, then scikit-learn FastICA(n_components=hidden, whiten="unit-variance", fun="logcosh",
max_iter=1000, tol=1e-4, random_state=42), then x 100. ``apply_transform(E, name, **params)`` returns the float32
matrix and a JSON-ready info dict describing what was done.

ICA backends: ``sklearn`` is the reference; ``torch`` runs the same parallel FastICA (same whitening, same
initial matrix ``w_init`` drawn from ``random_state``, same update, same stopping rule) with PyTorch, on the
GPU when there is one. ``auto`` (the default) picks torch when CUDA is available and sklearn otherwise.

Precision: float32 by default, as the reference computes it; ``float64`` is available, and the two may converge
to different solutions. FastICA on near-Gaussian directions is sensitive to rounding, even to the BLAS thread
count, so the CPU path runs on ONE BLAS thread by default (reproducible on any machine; measurements:
bench/bench_ica.py). ``threads`` is recorded in the info dict.
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from scipy import linalg
from sklearn.decomposition import PCA, FastICA
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler
from sklearn.utils import check_random_state
from threadpoolctl import ThreadpoolController

from defsent_plus import names
from defsent_plus.errors import DefSentError
from defsent_plus.io import write_json, write_npy
from defsent_plus.spaces.entry_matrix import check_entry_space, covariance, load_space

log = logging.getLogger(__name__)

ICA_BACKENDS = ("auto", "sklearn", "torch")
ICA_PRECISIONS = ("float64", "float32")
TORCH_WHITEN_MODES = ("unit-variance", "arbitrary-variance")


def require_whitenable(E: np.ndarray, where: str) -> None:
    """Whitening and ICA of all ``hidden`` components need n_entries >= hidden and no constant dimension (zero
    variance: whitening it would divide by zero)."""
    n_rows, n_cols = E.shape
    if n_rows < n_cols:
        raise DefSentError(where, f"needs at least as many entries as dimensions for a full-rank transform; "
                                  f"got {n_rows} entries x {n_cols} dimensions")
    constant = np.flatnonzero(np.ptp(E, axis=0) == 0)
    if constant.size:
        raise DefSentError(where, f"entry space has {constant.size} constant dimension(s) (first: column "
                                  f"{int(constant[0])}); whitening/ICA cannot scale a zero-variance dimension")


def numerical_rank(variances: np.ndarray) -> int:
    """Number of principal directions whose singular value exceeds hidden * float32 eps of the largest."""
    singular = np.sqrt(np.clip(np.asarray(variances, dtype=np.float64), 0, None))
    return int((singular > singular.max() * singular.size * np.finfo(np.float32).eps).sum())


def rank_deficiency_warning(rank: int, dim: int) -> str | None:
    """Explain a numerically rank-deficient space (e.g. LayerNorm outputs: rank hidden - 1)."""
    if rank >= dim:
        return None
    return (f"entry space has numerical rank {rank} < {dim} dimensions (LayerNorm outputs lie in a hyperplane, "
            f"so encoder spaces usually have rank {dim - 1}); whitening scales the {dim - rank} missing "
            f"direction(s) of rounding noise to unit variance (n_components={rank} would drop them)")


def require_finite_output(out: np.ndarray, where: str) -> None:
    if not np.isfinite(out).all():
        raise DefSentError(where, "result contains NaN/inf: the entry space is too rank-deficient to whiten")


def identity(E: np.ndarray) -> tuple[np.ndarray, dict]:
    """No transform."""
    return np.asarray(E, dtype=np.float32), {"transform": "none"}


def center(E: np.ndarray) -> tuple[np.ndarray, dict]:
    """Subtract the mean entry."""
    mean = E.mean(axis=0, dtype=np.float64)
    centered = (E.astype(np.float64) - mean).astype(np.float32)
    return centered, {"transform": "center", "mean_norm": float(np.linalg.norm(mean))}


def whiten(E: np.ndarray) -> tuple[np.ndarray, dict]:
    """PCA whitening with all ``hidden`` components: centered, decorrelated, unit variance per component."""
    where = "transform 'whiten'"
    require_whitenable(E, where)
    started = time.perf_counter()
    pca = PCA(n_components=E.shape[1], whiten=True, svd_solver="full")
    with np.errstate(divide="ignore", invalid="ignore"):
        whitened = pca.fit_transform(E.astype(np.float64))
    require_finite_output(whitened, where)
    rank = numerical_rank(pca.explained_variance_)
    messages = [m for m in [rank_deficiency_warning(rank, E.shape[1])] if m]
    for message in messages:
        log.warning(message)
    return whitened.astype(np.float32), {
        "transform": "whiten",
        "n_components": int(pca.n_components_),
        "numerical_rank": rank,
        "explained_variance_max": float(pca.explained_variance_[0]),
        "explained_variance_min": float(pca.explained_variance_[-1]),
        "seconds": round(time.perf_counter() - started, 3),
        "warnings": messages,
    }


def available_threads() -> int:
    """CPU cores this process may use (respects affinity masks set by schedulers)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        return os.cpu_count() or 1


def cuda_available() -> bool:
    import torch  # only the ICA job asks; center and whiten start without torch

    return bool(torch.cuda.is_available())


def resolve_backend(backend: str, whiten: Any, fun: Any, algorithm: str) -> str:
    """Map ``auto`` to a concrete backend (torch where CUDA is and it implements the FastICA options); reject torch
    for options it does not implement."""
    if backend not in ICA_BACKENDS:
        raise DefSentError("transform 'ica'", f"backend must be one of {list(ICA_BACKENDS)}, got {backend!r}")
    from defsent_plus.spaces.fastica_torch import TORCH_NONLINEARITIES

    supported = algorithm == "parallel" and whiten in TORCH_WHITEN_MODES and fun in TORCH_NONLINEARITIES
    if backend == "torch" and not supported:
        raise DefSentError("transform 'ica'", f"backend 'torch' implements algorithm='parallel', whiten in "
                                              f"{list(TORCH_WHITEN_MODES)}, fun in {list(TORCH_NONLINEARITIES)}; got "
                                              f"algorithm={algorithm!r}, whiten={whiten!r}, fun={fun!r} (use "
                                              "backend 'sklearn')")
    if backend == "auto":
        return "torch" if supported and cuda_available() else "sklearn"
    return backend


@functools.cache
def threadpool_controller() -> ThreadpoolController:
    """One controller per process (creating one scans the loaded libraries, ~1 ms)."""
    return ThreadpoolController()


@contextmanager
def limited_threads(threads: int, with_torch: bool = True) -> Iterator[None]:
    """Let numpy/scipy BLAS and (``with_torch``) torch use exactly ``threads`` threads inside the block."""
    with threadpool_controller().limit(limits=threads):
        if not with_torch:
            yield
            return
        import torch

        previous = torch.get_num_threads()
        torch.set_num_threads(threads)
        try:
            yield
        finally:
            torch.set_num_threads(previous)


def ica(
    E: np.ndarray,
    *,
    n_components: int | None = None,
    whiten: str = "unit-variance",
    fun: str | Callable = "logcosh",
    fun_args: dict | None = None,
    algorithm: str = "parallel",
    whiten_solver: str = "svd",
    max_iter: int = 1000,
    tol: float = 1e-4,
    random_state: int | None = 42,
    scale: float = 100.0,
    backend: str = "auto",
    precision: str = "float32",
    threads: int | None = None,
    device: str | None = None,
) -> tuple[np.ndarray, dict]:
    """StandardScaler -> FastICA -> x ``scale`` (the DefSent+ recipe); FastICA options as in scikit-learn.
    ``precision``: the type of the standardisation and the ICA iterations (see module); ``threads`` defaults to 1 for
    sklearn (the exact reference, and the fastest on CPU at these sizes) and to all cores for torch; ``device`` (torch
    only) defaults to cuda when present."""
    where = "transform 'ica'"
    require_whitenable(E, where)
    if precision not in ICA_PRECISIONS:
        raise DefSentError(where, f"precision must be one of {list(ICA_PRECISIONS)}, got {precision!r}")
    chosen = resolve_backend(backend, whiten, fun, algorithm)
    threads = threads or (1 if chosen == "sklearn" else available_threads())
    # float32 as the reference computes it: StandardScaler and FastICA both on the float32 matrix (ICA-transform.py
    # passes the numpy view of a float32 tensor), not a float64 standardisation cast down afterwards
    scaled = StandardScaler().fit_transform(E.astype(precision))
    rank = numerical_rank(np.linalg.eigvalsh(covariance(scaled)))
    fastica_options = {"n_components": n_components or E.shape[1], "whiten": whiten, "fun": fun,
                       "fun_args": fun_args, "algorithm": algorithm, "whiten_solver": whiten_solver,
                       "max_iter": max_iter, "tol": tol, "random_state": random_state}
    started = time.perf_counter()
    with limited_threads(threads), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        if chosen == "sklearn":  # the reference
            model = FastICA(**fastica_options)
            sources, n_iter, device_used = model.fit_transform(scaled), model.n_iter_, "cpu"
        else:
            sources, n_iter, device_used = _ica_torch(scaled, fastica_options, device)
    seconds = time.perf_counter() - started
    require_finite_output(sources, where)
    convergence_messages = _convergence_messages(caught)
    rank_message = rank_deficiency_warning(rank, E.shape[1])
    info = {
        "transform": "ica",
        "backend": chosen,
        "backend_requested": backend,
        "device": device_used,
        "precision": precision,
        "threads": threads,
        **{key: value for key, value in fastica_options.items() if key != "fun"},
        "fun": fun if isinstance(fun, str) else getattr(fun, "__name__", "callable"),
        "scale": scale,
        "n_iter": int(n_iter),
        "converged": not convergence_messages,
        "seconds": round(seconds, 3),
        "numerical_rank": rank,
        "warnings": convergence_messages + ([rank_message] if rank_message else []),
    }
    log.log(logging.INFO if info["converged"] else logging.WARNING, "ICA (%s, %s): %d/%d iterations, %s (tol %s), %s s",
            chosen, precision, info["n_iter"], max_iter, "converged" if info["converged"] else "NOT converged", tol,
            info["seconds"])
    for message in info["warnings"]:
        log.warning(message)
    return (sources * scale).astype(np.float32), info


def _convergence_messages(caught: list[warnings.WarningMessage]) -> list[str]:
    """ConvergenceWarning messages, deduplicated; any other warning is passed on unchanged."""
    messages: list[str] = []
    for item in caught:
        if issubclass(item.category, ConvergenceWarning):
            if str(item.message) not in messages:
                messages.append(str(item.message))
        else:
            warnings.warn_explicit(item.message, item.category, item.filename, item.lineno)
    return messages


def sklearn_whitening(scaled: np.ndarray, n_components: int, solver: str) -> tuple[np.ndarray, np.ndarray]:
    """Centered data XT [hidden, n] and whitening matrix K exactly as FastICA computes them."""
    XT = scaled.T.copy()
    XT -= XT.mean(axis=-1)[:, np.newaxis]
    if solver == "eigh":
        d, u = linalg.eigh(XT.dot(scaled))
        order = np.argsort(d)[::-1]
        eps = np.finfo(d.dtype).eps * 10
        d[d < eps] = eps
        np.sqrt(d, out=d)
        d, u = d[order], u[:, order]
    elif solver == "svd":
        u, d = linalg.svd(XT, full_matrices=False, check_finite=False)[:2]
    else:
        raise DefSentError("transform 'ica'", f"whiten_solver must be 'svd' or 'eigh', got {solver!r}")
    u *= np.sign(u[0])
    K = (u / d).T[:n_components]
    return XT, K


def sklearn_initial_unmixing(random_state: int | None, n_components: int, dtype: np.dtype) -> np.ndarray:
    """The w_init FastICA draws: ``check_random_state(random_state).normal(size=(k, k))``."""
    rng = check_random_state(random_state)
    return np.asarray(rng.normal(size=(n_components, n_components)), dtype=dtype)


def _ica_torch(scaled: np.ndarray, options: dict, device: str | None) -> tuple[np.ndarray, int, str]:
    """Whitening and final unmixing as FastICA does them; the fixed-point iterations in torch."""
    import torch

    from defsent_plus.spaces.fastica_torch import torch_parallel_fastica

    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    n_samples = scaled.shape[0]
    n_components = min(options["n_components"], *scaled.shape)
    XT, K = sklearn_whitening(scaled, n_components, options["whiten_solver"])
    whitened = np.dot(K, XT).T  # [n, k]: FastICA's X1.T
    whitened *= np.sqrt(n_samples)
    w_init = sklearn_initial_unmixing(options["random_state"], n_components, whitened.dtype)
    W, n_iter, converged = torch_parallel_fastica(whitened, w_init, fun=options["fun"],
                                                  alpha=(options["fun_args"] or {}).get("alpha", 1.0),
                                                  max_iter=options["max_iter"], tol=options["tol"], device=device)
    if not converged:
        warnings.warn("FastICA did not converge. Consider increasing tolerance or the maximum number of iterations.",
                      ConvergenceWarning, stacklevel=2)
    sources = np.linalg.multi_dot([W.astype(XT.dtype), K, XT]).T
    if options["whiten"] == "unit-variance":
        sources /= np.std(sources, axis=0, keepdims=True)
    return sources, n_iter, device


# The candidate-space transforms of names.TRANSFORMS (the ``<base>.<transform>`` spaces), and ``none``.
CANDIDATE_TRANSFORMS: dict[str, Callable[..., tuple[np.ndarray, dict]]] = {
    "center": center,
    "whiten": whiten,
    "ica": ica,
}
names.require_same_names(CANDIDATE_TRANSFORMS, names.TRANSFORMS, "transforms.CANDIDATE_TRANSFORMS")
TRANSFORMS: dict[str, Callable[..., tuple[np.ndarray, dict]]] = {"none": identity, **CANDIDATE_TRANSFORMS}


def apply_transform(E: np.ndarray, name: str, **params: Any) -> tuple[np.ndarray, dict]:
    """Transform entry space E by the named transform; returns (float32 matrix, info dict)."""
    if name not in TRANSFORMS:
        raise DefSentError("transform", f"unknown transform {name!r}; expected one of {sorted(TRANSFORMS)}")
    where = f"transform {name!r}"
    transform = TRANSFORMS[name]
    allowed = [p for p in inspect.signature(transform).parameters if p != "E"]
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise DefSentError(where, f"unknown parameter(s) {unknown}; allowed: {allowed}")
    E = check_entry_space(E, where)
    return transform(E, **params)


def write_transform(space_path: str, transform: str, options: dict, threads: int, out_space: str,
                    out_info: str) -> dict:
    """Transform the entry space in ``space_path`` on at most ``threads`` CPU threads (ICA: also its own thread
    setting) and write the result and its record (input, transform, convergence, warnings; its seconds go to the
    log, so two runs' records compare byte for byte). Only a transform that may run on torch
    (``names.TORCH_TRANSFORMS``) imports it."""
    options = {**options, "threads": threads} if transform == "ica" else dict(options)
    with limited_threads(threads, with_torch=transform in names.TORCH_TRANSFORMS):
        space, info = apply_transform(load_space(space_path), transform, **options)
    write_npy(out_space, space)
    info = {"input": str(space_path), "transform": transform, **info}
    log.info("%s of %s: %s s", transform, space_path, info.get("seconds", "under a second"))
    write_json(out_info, {key: value for key, value in info.items() if key != "seconds"})
    return info
