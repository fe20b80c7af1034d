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
    epoch: int = 0  # host values the loop knows when it adds the step
    lr: float | None = None


@dataclass
class Reading:
    """What one read brought to the host: each pending step's loss and its row (step, epoch, lr, loss, gradient
    norm and named parts), and the last step's parts and gradient norm."""

    losses: list[float]
    parts: dict[str, float] = field(default_factory=dict)
    grad_norm: float | None = None
    rows: list[dict] = field(default_factory=list)


class LossTally:
    """Pending step records on the device; ``first_step``: the 1-based number of the first pending step."""

    def __init__(self, first_step: int = 1, lr: float | None = None):
        self.first_step = first_step
        self.lr = lr
        self.pending: list[StepRecord] = []

    def add(self, record: StepRecord) -> None:
        self.pending.append(record)

    def read(self) -> Reading:
        """Every pending step's loss, parts and gradient norm, in one device-to-host transfer."""
        if not self.pending:
            return Reading([])
        tensors = [value for record in self.pending for value in device_values(record)]
        values = iter(torch.stack([t.detach().float() for t in tensors]).tolist())
        rows = [self._row(self.first_step + offset, record, values) for offset, record in enumerate(self.pending)]
        losses = [row["loss"] for row in rows]
        last = rows[-1]
        reading = Reading(losses, {k: last[k] for k in self.pending[-1].parts}, last["grad_norm"], rows)
        self._check_finite(losses)
        self.first_step += len(self.pending)
        self.pending = []
        return reading

    @staticmethod
    def _row(step: int, record: StepRecord, values) -> dict:
        """A step's row, its device values taken from ``values`` in :func:`device_values`' order."""
        loss = next(values)
        parts = {k: (next(values) if isinstance(v, torch.Tensor) else float(v)) for k, v in record.parts.items()}
        norm = None if record.grad_norm is None else next(values)
        return {"step": step, "epoch": record.epoch + 1, "lr": record.lr, "loss": loss, "grad_norm": norm, **parts}

    def _check_finite(self, losses: list[float]) -> None:
        for offset, loss in enumerate(losses):
            if not math.isfinite(loss):
                raise NonFiniteLoss(f"training loss became {loss} at step {self.first_step + offset}"
                                    f"{'' if self.lr is None else f' (lr {self.lr})'}; stopping")


def device_values(record: StepRecord) -> list[torch.Tensor]:
    """A record's device tensors in reading order: loss, tensor parts (in their order), gradient norm."""
    parts = [v for v in record.parts.values() if isinstance(v, torch.Tensor)]
    return [record.loss, *parts, *([] if record.grad_norm is None else [record.grad_norm])]
