"""An entry-space matrix E [entries, hidden]: the one validator every stage uses, loading one from ``.npy``, and its
mean, covariance and Gram matrix.

Light on purpose (numpy only): transforms, isotropy, training and the reverse dictionary all check their input
here, so every stage fails the same way, naming the file (or stage) and the first bad row. The second moments are
the package's one covariance routine (isotropy metrics and the ICA transform's rank check): two passes in float64
over row blocks (the mean, then the centered scatter) avoid cancellation for spaces far from the origin, and a
200,000 x 768 float32 space is never copied whole into float64.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from defsent_plus.errors import DefSentError
from defsent_plus.io import read_npy


def check_entry_space(E: np.ndarray, where: str | Path, n_entries: int | None = None) -> np.ndarray:
    """E as a 2-d float array (integers become float32), or a DefSentError at ``where`` when it is not a matrix,
    has a row count other than ``n_entries`` (when given), is empty, or holds NaN/inf (naming the first row and
    column, and how many rows have one)."""
    E = np.asarray(E)
    if E.ndim != 2:
        raise DefSentError(where, f"entry space must be a 2-d matrix [entries, hidden], got shape {E.shape}")
    if not np.issubdtype(E.dtype, np.floating):
        E = E.astype(np.float32)
    if n_entries is not None and E.shape[0] != n_entries:
        raise DefSentError(where, f"entry space has {E.shape[0]} rows but the dataset has {n_entries} entries")
    if E.shape[0] == 0 or E.shape[1] == 0:
        raise DefSentError(where, f"entry space is empty (shape {E.shape})")
    bad_rows = np.flatnonzero(~np.isfinite(E).all(axis=1))
    if bad_rows.size:
        row = int(bad_rows[0])
        col = int(np.flatnonzero(~np.isfinite(E[row]))[0])
        kind = "NaN" if np.isnan(E[row, col]) else "inf"
        raise DefSentError(where, f"entry space contains {kind} at row {row} (column {col}); {bad_rows.size} row(s) "
                                  "have non-finite values")
    return E


def load_space(path: str | Path, n_entries: int | None = None) -> np.ndarray:
    """A checked float32 entry space from ``.npy``; errors name the file."""
    return check_entry_space(read_npy(path).astype(np.float32, copy=False), path, n_entries)


BLOCK_ROWS = 8192


@dataclass(frozen=True)
class SecondMoments:
    """Mean, covariance (``n - 1`` denominator) and uncentered Gram matrix E^T E of an entry space, in float64."""

    n_entries: int
    mean: np.ndarray
    covariance: np.ndarray
    gram: np.ndarray


def second_moments(E: np.ndarray) -> SecondMoments:
    """Two passes over row blocks: the mean, then the centered scatter (no cancellation for far-off means)."""
    n = E.shape[0]
    mean = E.mean(axis=0, dtype=np.float64)
    scatter = np.zeros((E.shape[1], E.shape[1]))
    for start in range(0, n, BLOCK_ROWS):
        block = E[start : start + BLOCK_ROWS].astype(np.float64) - mean
        scatter += block.T @ block
    gram = scatter + n * np.outer(mean, mean)
    return SecondMoments(n, mean, scatter / max(n - 1, 1), gram)


def covariance(E: np.ndarray) -> np.ndarray:
    """Covariance of the columns of E, in float64."""
    return second_moments(E).covariance
