"""Post-processing of sentence embeddings (003 Section 3.4), as scikit-learn transformers fitted on one set of
sentences and applied to another.

- ``center``: minus the fit mean; ``zscore``: per dimension (x - mean) / std (StandardScaler).
- ``quantile``: each dimension mapped through its fit quantiles onto a uniform distribution ("quantile-u",
  QuantileTransformer).
- ``whiten``: PCA whitening, all components (uncorrelated, unit variance on the fit data).
- ``abtt``/``abtt<d>``: all-but-the-top (Mu & Viswanath 2018): centre, then remove the top-d principal directions.
- ``l2``: every vector scaled to unit norm (fits nothing).

A chain (``zscore+l2``) is a Pipeline fitted step by step on the fit sentences. Where a step is fitted decides what
it sees: fitted on the fit corpus (003's "W" variant) it never sees the evaluated sentences.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.decomposition import PCA
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer, Normalizer, QuantileTransformer, StandardScaler

from defsent_plus.baselines.spec import parse_chain
from defsent_plus.errors import DefSentError

QUANTILES = 1000  # scikit-learn's default; fewer when fitted on fewer sentences


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
        return centred - (centred @ self.components_.T) @ self.components_


def make_step(name: str, d: int | None, n_fit: int):
    if name == "center":
        return StandardScaler(with_std=False)
    if name == "zscore":
        return StandardScaler()
    if name == "quantile":
        return QuantileTransformer(n_quantiles=min(QUANTILES, n_fit), output_distribution="uniform", subsample=None,
                                   random_state=0)
    if name == "whiten":
        return PCA(whiten=True, svd_solver="full")
    if name == "abtt":
        return AllButTheTop(d)
    if name == "l2":
        return Normalizer()
    raise KeyError(name)


def minimum_fit_size(name: str, d: int | None, dim: int) -> int:
    """Sentences a step needs to be fitted: whitening all components needs more sentences than dimensions; ABTT
    more than d."""
    return {"whiten": dim + 1, "abtt": (d or 1) + 1, "quantile": 2, "zscore": 2}.get(name, 1)


def fit_chain(chain: str, fit: np.ndarray, abtt_components: int, where: str) -> Pipeline:
    """The post-processing ``chain`` fitted on ``fit`` [n, dim] (float64); ``where`` names the config key of the fit
    sentences in errors."""
    steps = parse_chain(chain, "baselines postprocess", abtt_components)
    n, dim = fit.shape
    for name, d in steps:
        if n < minimum_fit_size(name, d, dim):
            raise DefSentError(where, f"post-processing {name!r} in {chain!r} needs at least "
                                      f"{minimum_fit_size(name, d, dim)} fit sentences for {dim} dimensions, got {n}")
        if name == "abtt" and d >= dim:
            raise DefSentError(where, f"abtt removes {d} directions of a {dim}-dimensional space: nothing would "
                                      "be left")
    pipeline = Pipeline([(f"{k}_{name}", make_step(name, d, n)) for k, (name, d) in enumerate(steps)]
                        or [("none", FunctionTransformer())])
    return pipeline.fit(fit)


def apply_chain(chain: str, fit: np.ndarray, evaluated: np.ndarray, abtt_components: int, where: str) -> np.ndarray:
    """``evaluated`` post-processed by ``chain`` fitted on ``fit`` (both float64 inside)."""
    if chain == "none":
        return evaluated
    pipeline = fit_chain(chain, np.asarray(fit, dtype=np.float64), abtt_components, where)
    return pipeline.transform(np.asarray(evaluated, dtype=np.float64))
