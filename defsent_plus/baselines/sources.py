"""Token vectors without a forward pass (003 Sections 3.2.3 and 3.2.5).

- Avg.: each token's contextual vectors (of one layer set) averaged over all its occurrences in the fit corpus;
  a sentence is then aggregated from these static vectors. "encoder + Avg." averages the two sentence embeddings.
- Random embeddings: every vocabulary token a seeded N(0, std^2) vector of the model's width.
"""

from __future__ import annotations

import numpy as np
import torch


class StaticAccumulator:
    """Running per-token sums and counts of contextual vectors (one per layer set)."""

    def __init__(self, vocab_size: int, hidden: int):
        self.sums = torch.zeros(vocab_size, hidden, dtype=torch.float64)
        self.counts = torch.zeros(vocab_size, dtype=torch.int64)

    def add(self, vectors: torch.Tensor, input_ids: torch.Tensor, attention: torch.Tensor) -> None:
        """Add the real tokens of a [B, T, H] batch."""
        ids = input_ids[attention].cpu()
        self.sums.index_add_(0, ids, vectors[attention].detach().cpu().double())
        self.counts.index_add_(0, ids, torch.ones_like(ids))

    def table(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(float32 [V, H] mean vector per token (0 where unseen), bool [V] seen)."""
        seen = self.counts > 0
        means = self.sums / self.counts.clamp(min=1).unsqueeze(1).double()
        return means.float(), seen


def random_table(vocab_size: int, hidden: int, seed: int, std: float) -> torch.Tensor:
    """Seeded N(0, std^2) vectors, one per vocabulary token (float32 [V, H])."""
    rng = np.random.default_rng(seed)
    return torch.from_numpy(rng.normal(0.0, std, size=(vocab_size, hidden)).astype(np.float32))
