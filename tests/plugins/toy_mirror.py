"""A toy training method from outside the package, as a user would add one: Mirror-BERT-like identity augmentation.

Each sentence is its own positive: the pooled vector of the loop's forward pass and a second dropout draw of it,
contrasted with InfoNCE against the batch's other sentences. Registered through config ``method_plugins``.
"""

from __future__ import annotations

from defsent_plus.methods.base import Method


def build_task(inputs):
    import torch
    import torch.nn.functional as F
    from torch import nn

    from defsent_plus.encoders.encoding import get_pooling
    from defsent_plus.training.task import TrainingTask, unused_targets

    class IdentityViews(nn.Module):
        def __init__(self, pooling: str, temperature: float, dropout: float):
            super().__init__()
            self.pooling, self.temperature, self.dropout = get_pooling(pooling), temperature, nn.Dropout(dropout)

        def forward(self, batch):
            pooled = self.pooling.pool(batch.hidden, batch.attention_mask, None)
            z1, z2 = F.normalize(self.dropout(pooled), dim=-1), F.normalize(self.dropout(pooled), dim=-1)
            loss = F.cross_entropy(z1 @ z2.T / self.temperature, torch.arange(len(z1), device=z1.device))
            return loss, {"mirror_nce": loss.item()}

    options = inputs.options
    objective = IdentityViews(inputs.pooling, options["temperature"], options["dropout"])
    return TrainingTask(objective, list(inputs.texts), unused_targets(inputs.texts),
                        card={"classes": inputs.batch_size})


METHOD = Method(
    name="mirror",
    paper="toy: Mirror-BERT-like identity augmentation (Liu et al. 2021)",
    target="mirror",
    options={"max_length": {"type": "integer", "minimum": 8, "default": 32},
             "temperature": {"type": "number", "exclusiveMinimum": 0, "default": 0.04},
             "dropout": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.1}},
    build_task=build_task,
    deviations=("a toy: dropout on the pooled vector instead of Mirror-BERT's span masking and encoder dropout",),
    max_steps=1,
)
