"""Post-processing of sentence embeddings (003 Section 3.4), as scikit-learn transformers fitted on one set of
sentences and applied to another.

- ``center``: minus the fit mean; ``zscore``: per dimension (x - mean) / std (StandardScaler).
- ``quantile``: each dimension mapped through its fit quantiles onto a uniform distribution ("quantile-u",
  QuantileTransformer; :class:`UniformQuantiles` gives the same numbers faster).
- ``whiten``: PCA whitening, all components (uncorrelated, unit variance on the fit data).
- ``abtt``/``abtt<d>``: all-but-the-top (Mu & Viswanath 2018): centre, then remove the top-d principal directions.
- ``l2``: every vector scaled to unit norm (fits nothing).

A chain (``zscore+l2``) is a Pipeline fitted step by step on the fit sentences. Where a step is fitted decides what
it sees: fitted on the fit corpus (003's "W" variant) it never sees the evaluated sentences.
"""

from __future__ import annotations

import numpy as np
from sklearn import config_context
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.decomposition import PCA
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer, Normalizer, QuantileTransformer, StandardScaler

from defsent_plus.baselines.spec import parse_chain
from defsent_plus.errors import DefSentError

QUANTILES = 1000  # scikit-learn's default; fewer when fitted on fewer sentences
COLUMN_BLOCK = 16  # columns UniformQuantiles transposes at a time (they stay in cache)


class AllButTheTop(TransformerMixin, BaseEstimator):
    """Centre, then remove the projection on the top-``d`` principal directions of the fit data."""

    def __init__(self, d: int = 1):
        self.d = d

    def fit(self, x: np.ndarray, y=None) -> AllButTheTop:
        self.mean_ = x.mean(0)
        self.components_ = PCA(n_components=self.d, svd_solver="full").fit(x - self.mean_).components_
        return self

    def transform(self, x: np.ndarray) -> np.ndarray:
        centred = x - self.mean_
        centred -= (centred @ self.components_.T) @ self.components_
        return centred


class UniformQuantiles(TransformerMixin, BaseEstimator):
    """``QuantileTransformer(output_distribution="uniform", subsample=None)`` with the same numbers bit for bit,
    faster: fitted by sorting each column once (numpy's linear percentiles read off the sorted column, not one
    partition per quantile), applied by interpolating each column in a nearly sorted order (``np.interp`` is fast on
    nearly sorted keys). NaNs are left out of the fit and stay NaN, as scikit-learn does."""

    def __init__(self, n_quantiles: int = QUANTILES):
        self.n_quantiles = n_quantiles

    def fit(self, x: np.ndarray, y=None) -> UniformQuantiles:
        x = np.asarray(x, dtype=np.float64)
        self.n_quantiles_ = max(1, min(self.n_quantiles, x.shape[0]))
        self.references_ = np.linspace(0, 1, self.n_quantiles_, endpoint=True)
        if np.isnan(x).any():
            self.quantiles_ = np.nanpercentile(x, self.references_ * 100, axis=0)
        else:
            columns = np.ascontiguousarray(x.T)
            columns.sort(axis=1)
            self.quantiles_ = sorted_percentiles(columns, np.true_divide(self.references_ * 100, 100))
        return self

    def transform(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != self.quantiles_.shape[1]:
            raise ValueError(f"expected [n, {self.quantiles_.shape[1]}] rows, got shape {x.shape}")
        out = np.empty_like(x)
        for start in range(0, x.shape[1], COLUMN_BLOCK):
            block = slice(start, start + COLUMN_BLOCK)
            out[:, block] = self.uniform_columns(x[:, block].T.copy(), self.quantiles_[:, block].T.copy()).T
        return out

    def uniform_columns(self, columns: np.ndarray, knots: np.ndarray) -> np.ndarray:
        """scikit-learn's forward map of each row of ``columns`` [b, n] through its ``knots`` [b, quantiles]: the mean
        of the interpolations from below and from above (a tie among the quantiles gets the middle of its
        references), 0 and 1 at the end quantiles."""
        out = np.empty_like(columns)
        references, downward_references = self.references_, -self.references_[::-1]
        for row, column, order, knot in zip(out, columns, coarse_order(columns), knots, strict=True):
            keys = column[order]
            downward = np.interp(-keys[::-1], -knot[::-1], downward_references)[::-1]
            values = 0.5 * (np.interp(keys, knot, references) - downward)
            values[keys == knot[-1]] = 1
            values[keys == knot[0]] = 0
            row[order] = values
        return out


def sorted_percentiles(columns: np.ndarray, fractions: np.ndarray) -> np.ndarray:
    """numpy's default ("linear") percentiles [len(fractions), d] of the sorted rows of ``columns`` [d, n]: the
    same index arithmetic and interpolation as ``np.percentile``, without its partition."""
    n = columns.shape[1]
    virtual = (n - 1) * fractions
    below = np.floor(virtual)
    last = virtual >= n - 1
    below[last] = -1  # numpy takes the largest value there
    above = below + 1
    above[last] = -1
    gamma = virtual - below
    low, high = columns[:, below.astype(np.intp)], columns[:, above.astype(np.intp)]
    step = high - low
    result = low + step * gamma
    np.subtract(high, step * (1 - gamma), out=result, where=gamma >= 0.5)
    return result.T


def coarse_order(columns: np.ndarray) -> np.ndarray:
    """Per row of ``columns``, an order sorted to about 1%: by the top 16 bits of the float32 values (sign, exponent,
    7 mantissa bits; negative ones flipped so that the bits sort as the numbers), in one pass of numpy's radix sort."""
    with np.errstate(over="ignore", invalid="ignore"):
        high = (columns.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    high ^= (high.view(np.int16) >> 15).view(np.uint16) | np.uint16(0x8000)
    return np.argsort(high, axis=1, kind="stable")


def make_step(name: str, d: int | None, n_fit: int, fast: bool = False):
    """An unfitted step of a chain (``fast``: quantile-u as :class:`UniformQuantiles`, the same numbers)."""
    if name == "quantile":
        n_quantiles = min(QUANTILES, n_fit)
        return UniformQuantiles(n_quantiles) if fast else QuantileTransformer(
            n_quantiles=n_quantiles, output_distribution="uniform", subsample=None, random_state=0)
    steps = {"center": lambda: StandardScaler(with_std=False), "zscore": StandardScaler, "l2": Normalizer,
             "whiten": lambda: PCA(whiten=True, svd_solver="full"), "abtt": lambda: AllButTheTop(d)}
    return steps[name]()


def minimum_fit_size(name: str, d: int | None, dim: int) -> int:
    """Sentences a step needs to be fitted: whitening all components needs more sentences than dimensions; ABTT
    more than d."""
    return {"whiten": dim + 1, "abtt": (d or 1) + 1, "quantile": 2, "zscore": 2}.get(name, 1)


def fit_chain(chain: str, fit: np.ndarray, abtt_components: int, where: str, fast: bool = False) -> Pipeline:
    """The post-processing ``chain`` fitted on ``fit`` [n, dim] (float64); ``where`` names the config key of the fit
    sentences in errors. ``fast``: quantile-u as :class:`UniformQuantiles` (same numbers)."""
    steps = parse_chain(chain, "baselines postprocess", abtt_components)
    n, dim = fit.shape
    for name, d in steps:
        if n < minimum_fit_size(name, d, dim):
            raise DefSentError(where, f"post-processing {name!r} in {chain!r} needs at least "
                                      f"{minimum_fit_size(name, d, dim)} fit sentences for {dim} dimensions, got {n}")
        if name == "abtt" and d >= dim:
            raise DefSentError(where, f"abtt removes {d} directions of a {dim}-dimensional space: nothing would "
                                      "be left")
    pipeline = Pipeline([(f"{k}_{name}", make_step(name, d, n, fast)) for k, (name, d) in enumerate(steps)]
                        or [("none", FunctionTransformer())])
    return pipeline.fit(fit)


def transform_rows(pipeline: Pipeline, x: np.ndarray) -> np.ndarray:
    """``pipeline.transform(x)`` for float64 rows ``x`` already known to be finite (scikit-learn skips that check)."""
    with config_context(assume_finite=True):
        return pipeline.transform(x)


def fit_transform_chain(chain: str, x: np.ndarray, abtt_components: int, where: str) -> np.ndarray:
    """``x`` post-processed by ``chain`` fitted on ``x`` itself (:func:`fit_chain` with ``fast``, then
    :func:`transform_rows`)."""
    return x if chain == "none" else transform_rows(fit_chain(chain, x, abtt_components, where, fast=True), x)
