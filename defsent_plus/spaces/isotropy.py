"""How isotropic is an entry space? Metrics for logs/JSON and a two-panel picture like DefSent+ Figs. 1-2.

Metrics (``isotropy_metrics``):

- ``mean_cosine``: mean cosine similarity of random entry pairs (i != j, seeded); ~0 when isotropic, near 1
  in a narrow cone.
- ``isoscore``: IsoScore (Rudman et al., 2022): PCA-rotate, take the variance vector, rescale it to length
  sqrt(d), measure its distance to the isotropic diagonal (1, ..., 1) and map that to [0, 1]; 1 = isotropic.
- ``z_ratio`` / ``log_z_ratio``: partition-function isotropy (Mu & Viswanath 2018; Wang et al. 2020):
  Z(c) = sum_i exp(<c, e_i>) over the eigenvectors c of E^T E; reported as min Z / max Z (1 = isotropic) and
  its log. Eigenvectors are defined up to sign, so both +c and -c are used, which makes the value unique.
- ``top10_variance_share``: share of the variance in the top d/10 principal components (0.1 = isotropic).
- ``mean_abs_skewness``, ``mean_excess_kurtosis``: per-axis moments (scipy.stats), averaged over axes; ICA
  makes axes heavy-tailed (large kurtosis).

All statistics accumulate in float64 over row blocks, so a 200,000 x 768 float32 space is never copied
whole into float64.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from scipy import stats
from scipy.special import logsumexp

from defsent_plus.io import read_json, save_figure, write_json
from defsent_plus.spaces.entry_matrix import BLOCK_ROWS, check_entry_space, load_space, second_moments

BLOCK_COLUMNS = 64


def descending_eigh(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues (descending, clipped at 0) and eigenvectors of a symmetric PSD matrix.

    Each eigenvector's sign is fixed so that its largest-magnitude coordinate is positive (stable plots).
    """
    values, vectors = np.linalg.eigh(matrix)
    values, vectors = np.clip(values[::-1], 0.0, None), vectors[:, ::-1]
    signs = np.sign(vectors[np.argmax(np.abs(vectors), axis=0), np.arange(vectors.shape[1])])
    return values, vectors * np.where(signs == 0, 1.0, signs)


def mean_pair_cosine(E: np.ndarray, seed: int = 0, n_pairs: int = 100_000) -> float:
    """Mean cosine similarity of ``n_pairs`` random pairs of distinct entries (seeded)."""
    n = E.shape[0]
    if n < 2:
        return float("nan")
    rng = np.random.default_rng(seed)
    first = rng.integers(0, n, size=n_pairs)
    second = rng.integers(0, n - 1, size=n_pairs)
    second += second >= first  # uniform over entries other than ``first``
    norms = np.concatenate(
        [np.linalg.norm(E[s : s + BLOCK_ROWS].astype(np.float64), axis=1) for s in range(0, n, BLOCK_ROWS)]
    )
    total = 0.0
    for start in range(0, n_pairs, BLOCK_ROWS):
        i, j = first[start : start + BLOCK_ROWS], second[start : start + BLOCK_ROWS]
        dots = np.einsum("ij,ij->i", E[i].astype(np.float64), E[j].astype(np.float64))
        denominators = norms[i] * norms[j]
        total += float(np.divide(dots, denominators, out=np.zeros_like(dots), where=denominators > 0).sum())
    return total / n_pairs


def isoscore_from_variances(variances: np.ndarray) -> float:
    """IsoScore from the variance vector of the PCA-rotated space (Rudman et al. 2022, Algorithm 1).

    Normalize the variance vector to length sqrt(d); isotropy defect delta = ||v - 1|| / sqrt(2(d - sqrt d));
    the fraction of dimensions used phi = (d - delta^2 (d - sqrt d))^2 / d^2; IsoScore = (d phi - 1) / (d - 1).
    """
    variances = np.asarray(variances, dtype=np.float64)
    d = variances.size
    if d < 2 or not np.any(variances > 0):
        return float("nan")
    normalized = variances * np.sqrt(d) / np.linalg.norm(variances)
    defect = np.linalg.norm(normalized - 1.0) / np.sqrt(2 * (d - np.sqrt(d)))
    dims_used = (d - defect**2 * (d - np.sqrt(d))) ** 2 / d
    return float((dims_used - 1) / (d - 1))


def log_partition_functions(E: np.ndarray, directions: np.ndarray) -> np.ndarray:
    """log Z(c) = logsumexp_i <c, e_i> for each column c of ``directions``, streamed over row blocks."""
    log_z = np.full(directions.shape[1], -np.inf)
    for start in range(0, E.shape[0], BLOCK_ROWS):
        scores = E[start : start + BLOCK_ROWS].astype(np.float64) @ directions
        log_z = np.logaddexp(log_z, logsumexp(scores, axis=0))
    return log_z


def partition_ratio(E: np.ndarray, gram: np.ndarray) -> tuple[float, float]:
    """(min Z(c) / max Z(c), its log) over c = +/- the eigenvectors of E^T E."""
    _, vectors = descending_eigh(gram)
    log_z = log_partition_functions(E, np.hstack([vectors, -vectors]))
    log_ratio = float(log_z.min() - log_z.max())
    return float(np.exp(log_ratio)), log_ratio


def top_variance_share(variances: np.ndarray, fraction: float = 0.1) -> tuple[float, int]:
    """Share of total variance in the top ``fraction`` of principal components, and how many that is."""
    k = max(1, round(variances.size * fraction))
    total = variances.sum()
    return (float(variances[:k].sum() / total) if total > 0 else float("nan")), k


def axis_moments(E: np.ndarray) -> tuple[float, float]:
    """Mean |skewness| and mean excess (Fisher) kurtosis over the axes (columns) of E."""
    skews, kurtoses = [], []
    for start in range(0, E.shape[1], BLOCK_COLUMNS):
        block = E[:, start : start + BLOCK_COLUMNS].astype(np.float64)
        skews.append(stats.skew(block, axis=0))
        kurtoses.append(stats.kurtosis(block, axis=0, fisher=True))
    return float(np.nanmean(np.abs(np.concatenate(skews)))), float(np.nanmean(np.concatenate(kurtoses)))


def isotropy_metrics(E: np.ndarray, seed: int = 0, n_pairs: int = 100_000) -> dict:
    """All isotropy metrics of the entry space E [n_entries, dim] as a JSON-ready dict (see module doc)."""
    E = check_entry_space(E, "isotropy metrics")
    moments = second_moments(E)
    variances, _ = descending_eigh(moments.covariance)
    z_ratio, log_z_ratio = partition_ratio(E, moments.gram)
    share, top_k = top_variance_share(variances)
    mean_abs_skewness, mean_excess_kurtosis = axis_moments(E)
    return {
        "n_entries": int(E.shape[0]),
        "dim": int(E.shape[1]),
        "mean_cosine": mean_pair_cosine(E, seed=seed, n_pairs=n_pairs),
        "isoscore": isoscore_from_variances(variances),
        "z_ratio": z_ratio,
        "log_z_ratio": log_z_ratio,
        "top10_variance_share": share,
        "top10_components": top_k,
        "mean_abs_skewness": mean_abs_skewness,
        "mean_excess_kurtosis": mean_excess_kurtosis,
        "mean_norm": float(np.linalg.norm(moments.mean)),
        "n_pairs": int(n_pairs),
        "seed": int(seed),
    }


def plot_space(E: np.ndarray, out_png: str | Path, title: str, max_points: int = 5000, seed: int = 0) -> Path:
    """Write one PNG: left, 2-d SVD of the uncentered space; right, 2-d whitened PCA (DefSent+ Figs. 1-2).

    Directions come from all entries (the right singular vectors are the eigenvectors of E^T E; the whitened
    axes are the covariance's, each divided by sqrt(its eigenvalue)); at most ``max_points`` entries (seeded sample)
    are drawn.
    """
    E = check_entry_space(E, "plot_space")
    moments = second_moments(E)
    rng = np.random.default_rng(seed)
    rows = np.sort(rng.choice(E.shape[0], size=min(max_points, E.shape[0]), replace=False))
    _, singular = descending_eigh(moments.gram)
    values, principal = descending_eigh(moments.covariance)
    scale = np.sqrt(np.where(values[:2] > 0, values[:2], 1.0))
    drawn = E[rows].astype(np.float64)
    panels = [
        ("SVD, uncentered", drawn @ singular[:, :2], ("1st singular vector", "2nd singular vector")),
        ("whitened PCA", (drawn - moments.mean) @ principal[:, :2] / scale, ("PC1 / sqrt(λ1)", "PC2 / sqrt(λ2)")),
    ]
    figure = Figure(figsize=(11, 5.2), layout="constrained")
    FigureCanvasAgg(figure)
    for axes, (name, points, (xlabel, ylabel)) in zip(figure.subplots(1, 2), panels, strict=True):
        axes.scatter(points[:, 0], points[:, 1], s=3, alpha=0.35, linewidths=0, color="tab:blue")
        axes.axhline(0, color="0.6", linewidth=0.6)
        axes.axvline(0, color="0.6", linewidth=0.6)
        axes.set_aspect("equal", adjustable="datalim")
        axes.set(title=name, xlabel=xlabel, ylabel=ylabel)
    figure.suptitle(f"{title}  ({len(rows):,} of {E.shape[0]:,} entries, dim {E.shape[1]})")
    out_png = Path(out_png)
    save_figure(out_png, figure, 110)
    return out_png


TRANSFORM_RECORD = ("backend", "precision", "threads", "n_iter", "max_iter", "converged", "numerical_rank")


def write_isotropy(spaces: dict[str, str | Path], plots: list[str | Path], out_json: str | Path, title: str,
                   transforms: dict[str, str | Path] | None = None, seed: int = 0, n_pairs: int = 100_000,
                   plot_points: int = 5000) -> dict:
    """Isotropy metrics of every named space (one JSON) and each space's SVD/PCA plot; ``title`` may name
    ``{space}``. ``transforms``: the record of each transformed space (``<space>.json``), whose precision, BLAS
    threads, iterations and convergence go into its entry, so the report shows how an ICA space was computed."""
    metrics = {}
    for (name, path), png in zip(spaces.items(), plots, strict=True):
        space = load_space(path)
        metrics[name] = isotropy_metrics(space, seed=seed, n_pairs=n_pairs)
        if transforms and name in transforms:
            record = read_json(transforms[name])
            metrics[name]["transform"] = {key: record[key] for key in TRANSFORM_RECORD if key in record}
        plot_space(space, png, title.format(space=name), max_points=plot_points, seed=seed)
    write_json(out_json, metrics)
    return metrics
