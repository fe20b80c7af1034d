"""This machine's pace of scoring sentence vectors against an entry space: a memory-bound product whose pace
FLOPs undercount (the cost sheet's ``entry_scoring_rate``)."""

from __future__ import annotations

import statistics
from functools import cache

SCORING_ALLOCATIONS, SCORING_WARMUP, SCORING_REPEATS = 5, 1, 3


@cache
def entry_scoring_seconds(classes: int, rows: int, hidden: int, threads: int, backward: bool) -> float:
    """Seconds this machine takes, at ``threads``, to score ``rows`` sentence vectors against ``classes`` entries
    (h · Eᵀ and each row's rank of its target; ``backward``: the training objective's cross-entropy and its gradient
    to h instead): a memory-bound product whose pace depends on where its matrix lands in memory (MiniLM's step
    over all of dataset a: 160 to 270 ms by allocation, within 10% for one), so the median over
    ``SCORING_ALLOCATIONS`` fresh matrices of each one's median of ``SCORING_REPEATS`` after ``SCORING_WARMUP``."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        generator = torch.Generator().manual_seed(0)
        return statistics.median(scoring_pace(classes, rows, hidden, backward, generator)
                                 for _ in range(SCORING_ALLOCATIONS))
    finally:
        torch.set_num_threads(before)


def scoring_pace(classes: int, rows: int, hidden: int, backward: bool, generator) -> float:
    """The median seconds of scoring against one freshly allocated entry matrix (:func:`entry_scoring_seconds`)."""
    import time

    import torch
    import torch.nn.functional as F

    entries = torch.randn(classes, hidden, generator=generator)
    h = torch.randn(rows, hidden, generator=generator, requires_grad=backward)
    targets = torch.randint(0, classes, (rows,), generator=generator)
    times = []
    for _ in range(SCORING_WARMUP + SCORING_REPEATS):
        start = time.perf_counter()
        logits = h @ entries.T
        if backward:
            F.cross_entropy(logits, targets).backward()
        else:
            (logits >= logits.gather(1, targets[:, None])).sum(1)
        times.append(time.perf_counter() - start)
    return statistics.median(times[SCORING_WARMUP:])
