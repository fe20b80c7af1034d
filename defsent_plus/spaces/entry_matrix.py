"""An entry-space matrix E [entries, hidden]: the one validator every stage uses, and loading one from ``.npy``.

Light on purpose (numpy only): transforms, isotropy, training and the reverse dictionary all check their input
here, so every stage fails the same way, naming the file (or stage) and the first bad row.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from defsent_plus.errors import DefSentError
from defsent_plus.io import read_npy


def check_entry_space(E: np.ndarray, where: str | Path, n_entries: int | None = None) -> np.ndarray:
    """E as a 2-d float array (integers become float32), or a DefSentError at ``where`` when it is not a matrix,
    has a row count other than ``n_entries`` (when given), is empty, or holds NaN/inf (first row and column)."""
    E = np.asarray(E)
    if E.ndim != 2:
        raise DefSentError(where, f"entry space must be a 2-d matrix [entries, hidden], got shape {E.shape}")
    if not np.issubdtype(E.dtype, np.floating):
        E = E.astype(np.float32)
    if n_entries is not None and E.shape[0] != n_entries:
        raise DefSentError(where, f"entry space has {E.shape[0]} rows but the dataset has {n_entries} entries")
    if E.shape[0] == 0 or E.shape[1] == 0:
        raise DefSentError(where, f"entry space is empty (shape {E.shape})")
    require_finite(E, where)
    return E


def require_finite(E: np.ndarray, where: str | Path) -> None:
    """Fail naming the first NaN/inf (row, column) and how many rows have one."""
    bad_rows = np.flatnonzero(~np.isfinite(E).all(axis=1))
    if bad_rows.size:
        row = int(bad_rows[0])
        col = int(np.flatnonzero(~np.isfinite(E[row]))[0])
        kind = "NaN" if np.isnan(E[row, col]) else "inf"
        raise DefSentError(
            where,
            f"entry space contains {kind} at row {row} (column {col}); {bad_rows.size} row(s) have non-finite values",
        )


def load_space(path: str | Path, n_entries: int | None = None) -> np.ndarray:
    """A checked float32 entry space from ``.npy``; errors name the file."""
    return check_entry_space(read_npy(path).astype(np.float32, copy=False), path, n_entries)
