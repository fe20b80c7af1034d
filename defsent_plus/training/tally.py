"""The losses of the steps since the last read, kept on the device and read in one transfer at logging intervals.

A step records its loss, its named parts and its gradient norm as device tensors; nothing is read on the host until
:meth:`LossTally.read`, which the loop calls at a logging step, before a saved state, before a dev score and at the
end. A non-finite loss stops training there, naming the step at which it first appeared (steps count from 1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch


class NonFiniteLoss(FloatingPointError):
    """A step's loss was NaN or infinite."""


@dataclass
class StepRecord:
    loss: torch.Tensor  # 0-d, detached
    parts: dict[str, torch.Tensor | float]
    grad_norm: torch.Tensor | None = None


@dataclass
class Reading:
    """What one read brought to the host: each pending step's loss, and the last step's parts and gradient norm."""

    losses: list[float]
    parts: dict[str, float] = field(default_factory=dict)
    grad_norm: float | None = None


class LossTally:
    """Pending step records on the device; ``first_step``: the 1-based number of the first pending step."""

    def __init__(self, first_step: int = 1, lr: float | None = None):
        self.first_step = first_step
        self.lr = lr
        self.pending: list[StepRecord] = []

    def add(self, record: StepRecord) -> None:
        self.pending.append(record)

    def read(self) -> Reading:
        """Every pending loss, the last step's parts and gradient norm, in one device-to-host transfer."""
        if not self.pending:
            return Reading([])
        last = self.pending[-1]
        tensor_parts = {k: v for k, v in last.parts.items() if isinstance(v, torch.Tensor)}
        extra = [*tensor_parts.values(), *([] if last.grad_norm is None else [last.grad_norm])]
        values = torch.stack([r.loss.float() for r in self.pending] + [v.detach().float() for v in extra]).tolist()
        losses, rest = values[: len(self.pending)], values[len(self.pending):]
        parts = {k: (rest.pop(0) if k in tensor_parts else float(v)) for k, v in last.parts.items()}
        reading = Reading(losses, parts, rest.pop(0) if last.grad_norm is not None else None)
        self._check_finite(losses)
        self.first_step += len(self.pending)
        self.pending = []
        return reading

    def _check_finite(self, losses: list[float]) -> None:
        for offset, loss in enumerate(losses):
            if not math.isfinite(loss):
                raise NonFiniteLoss(f"training loss became {loss} at step {self.first_step + offset}"
                                    f"{'' if self.lr is None else f' (lr {self.lr})'}; stopping")
