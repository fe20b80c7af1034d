"""DefSent+'s objective (000, Eq. 5): the pooled, pooler-projected definition scored against a frozen entry space.

Logits h · Eᵀ against the entry matrix E (built by the previous PST step's dev-selected encoder, never trained),
cross-entropy on the definition's entry id. The reverse dictionary ranks entries with the same logits.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from defsent_plus.encoders.encoding import get_pooling
from defsent_plus.encoders.models import Pooler
from defsent_plus.errors import DefSentError
from defsent_plus.training.task import Batch, TaskInputs, TrainingTask


class EntryProjection(nn.Module):
    """Softmax over a frozen entry space of the pooled, pooler-projected sentence."""

    def __init__(self, entry_space: torch.Tensor, pooler: Pooler, pooling: str):
        super().__init__()
        self.register_buffer("entry_space", entry_space.float(), persistent=False)
        self.entry_space.requires_grad_(False)
        self.pooler = pooler
        self.pooling = get_pooling(pooling)

    def logits(self, hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.scores(self.pooling.pool(hidden, attention_mask, None))

    def scores(self, pooled: torch.Tensor) -> torch.Tensor:
        """h · Eᵀ of pooled sentences (h: their pooler projection)."""
        h = self.pooler(pooled)
        with torch.autocast(device_type=h.device.type, enabled=False):
            return h.float() @ self.entry_space.T

    def forward(self, batch: Batch) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        loss = F.cross_entropy(self.logits(batch.hidden, batch.attention_mask), batch.entry_ids)
        return loss, {"entry_ce": loss.detach()}


def build_task(inputs: TaskInputs) -> TrainingTask:
    """Each training definition's class is its entry; logits against the frozen entry space."""
    if inputs.space is None:
        raise DefSentError(inputs.where, "this method trains against an entry space, and none was given")
    return TrainingTask(EntryProjection(inputs.space, inputs.encoder.pooler, inputs.pooling), inputs.texts,
                        inputs.entry_ids, card={"classes": len(inputs.frame)})
