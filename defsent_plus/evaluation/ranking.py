"""Ranking metrics of the reverse dictionary, shared by every method: ranks of targets, MRR, MRR@10, top-k."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from defsent_plus.errors import DefSentError

CUTOFF = 10  # DefSent's def2word evaluation counts only hits within the top 10 in its "MRR"


def ranks_of_targets(logits: np.ndarray | torch.Tensor, targets: np.ndarray | torch.Tensor) -> np.ndarray:
    """1-based rank of each row's target among all columns; ties count against the target (pessimistic)."""
    logits = torch.as_tensor(np.array(logits) if isinstance(logits, np.ndarray) else logits)  # copy: writable
    targets = torch.as_tensor(np.array(targets, dtype=np.int64), device=logits.device)
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
