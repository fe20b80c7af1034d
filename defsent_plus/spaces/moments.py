"""Mean, covariance and Gram matrix of an entry space, accumulated in float64 over row blocks.

The one covariance routine of the package: isotropy metrics and the ICA transform's rank check both use it.
Two passes (the mean, then the centered scatter) avoid cancellation for spaces far from the origin, and a
200,000 x 768 float32 space is never copied whole into float64.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

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
