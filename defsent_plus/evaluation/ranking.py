"""Ranking metrics of the reverse dictionary, shared by every method: ranks of targets, MRR, MRR@10, top-k."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from defsent_plus.errors import DefSentError
from defsent_plus.evaluation.intervals import Bootstrap

CUTOFF = 10  # DefSent's def2word evaluation counts only hits within the top 10 in its "MRR"


def ranks_of_targets(logits: np.ndarray | torch.Tensor, targets: np.ndarray | torch.Tensor) -> np.ndarray:
    """1-based rank of each row's target among all columns; ties count against the target (pessimistic)."""
    if isinstance(logits, np.ndarray):  # on the host: no copy (a 128 x 206,546 chunk is 106 MB)
        rows = np.asarray(targets, dtype=np.int64)
        target_scores = logits[np.arange(len(rows)), rows]
        return (logits >= target_scores[:, None]).sum(1)
    targets = torch.as_tensor(np.asarray(targets, dtype=np.int64), device=logits.device)
    target_scores = logits.gather(1, targets[:, None])
    return (logits >= target_scores).sum(1).cpu().numpy()


def ranking_metrics(ranks: np.ndarray, k_list: Sequence[int] = (1, 3, 10), cutoff: int = CUTOFF) -> dict[str, float]:
    """MRR over the full ranking, ``mrr_at_<cutoff>`` (only hits within the top ``cutoff`` count, DefSent's
    "MRR"), top-k accuracy in % and the number of queries."""
    ranks = np.asarray(ranks, dtype=np.float64)
    if len(ranks) == 0 or ranks.min() < 1:
        raise DefSentError("ranking metrics", "expected at least one 1-based rank")
    reciprocal = 1.0 / ranks
    return {
        "mrr": float(reciprocal.mean()),
        f"mrr_at_{cutoff}": float(np.where(ranks <= cutoff, reciprocal, 0.0).mean()),
        **{f"top{k}": float(np.mean(ranks <= k) * 100) for k in k_list},
        "queries": int(len(ranks)),
    }


def resampled_metrics(ranks: np.ndarray, index: np.ndarray, k_list: Sequence[int] = (1, 3, 10),
                      cutoff: int = CUTOFF) -> dict[str, np.ndarray]:
    """:func:`ranking_metrics` (without ``queries``) on every resample ``index`` [B, n] of the queries at once."""
    resampled = np.asarray(ranks, dtype=np.float64)[index]
    reciprocal = 1.0 / resampled
    return {"mrr": reciprocal.mean(axis=1),
            f"mrr_at_{cutoff}": np.where(resampled <= cutoff, reciprocal, 0.0).mean(axis=1),
            **{f"top{k}": (resampled <= k).mean(axis=1) * 100 for k in k_list}}


def ranking_bootstrap(ranks: Sequence[np.ndarray], options: dict) -> Bootstrap:
    """Several models' ranks of the SAME queries, resampled together (seeded, ``options``: ``resamples``, ``level``,
    ``seed`` as evaluation.bootstrap): each model's percentile intervals of every ranking metric, and any two
    models' paired test, as for STS (:mod:`defsent_plus.evaluation.intervals`)."""
    n = len(ranks[0])
    if any(len(r) != n for r in ranks):
        raise DefSentError("ranking bootstrap", "the models ranked different numbers of queries")
    index = np.random.default_rng(options["seed"]).integers(0, n, size=(options["resamples"], n))
    points = [ranking_metrics(r) for r in ranks]
    resampled = [resampled_metrics(r, index) for r in ranks]
    return Bootstrap({key: [p[key] for p in points] for key in resampled[0]},
                     {key: [r[key] for r in resampled] for key in resampled[0]}, options["level"])
