"""A train job's per-step losses and metrics: kept on the device while it trains, then a TSV table appended while the
job runs, so ``tail -f`` follows the training.

A step records its loss, its named parts and its gradient norm as device tensors (:class:`LossTally`); nothing is
read on the host until :meth:`LossTally.read`, which the loop calls at a logging step, before a saved state, before
a dev score and at the end: one transfer for every step since the last read. A non-finite loss stops training
there, naming the step at which it first appeared (steps count from 1).

The table (:class:`MetricsTable`) has one row per optimisation step: step (counted from 1 over all epochs), epoch,
the learning rate the step used, its loss, gradient norm (where the method clips) and named loss parts, and the
STS-B dev score where the method scored one after that step (empty elsewhere). Rows reach the file when the loop
reads the device (no extra host read); the last row read waits for the next read, since a dev score may still follow
it. A resumed job rewrites the rows its saved state holds and goes on from there, so every step is in the table once.
A rehearsal's table starts with its banner as a ``#`` line (read with ``comment="#"``). The examples per second of
the logging interval that read a row go to the trackers with it and to the log, not to the file, so two runs'
tables compare byte for byte.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from defsent_plus import banner

COLUMNS = ("step", "epoch", "lr", "loss", "grad_norm", "dev_score")
PACE = "examples_per_second"  # the trackers' and the log's, not the file's: results hold no timing


class MetricsTable:
    """The rows so far (``rows``, also what a saved state keeps), the file they are appended to (None: none) and the
    ``sinks`` (experiment trackers, :mod:`.trackers`) that get each row when the file does."""

    def __init__(self, path: str | Path | None, rows: Iterable[dict] = (), sinks: Sequence = ()):
        self.path = None if path is None else Path(path)
        self.rows: list[dict] = [dict(row) for row in rows]
        self.sinks = list(sinks)
        self.scores: dict[int, float] = {}  # dev scores of steps not read yet
        self.written = 0
        self.parts: list[str] = []
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text("", encoding="utf-8")
        self._write(len(self.rows) - 1)  # a resumed job's rows: the file and the trackers start over with them

    def extend(self, rows: list[dict], examples_per_second: float) -> None:
        """The rows of one read (every step since the previous one)."""
        for row in rows:
            row.update(examples_per_second=examples_per_second, dev_score=self.scores.pop(row["step"], None))
        self.rows.extend(rows)
        self._write(len(self.rows) - 1)

    def dev_score(self, step: int, score: float) -> None:
        """STS-B dev scored after ``step``: into its row if read, else kept until it is."""
        if self.rows and self.rows[-1]["step"] == step:
            self.rows[-1]["dev_score"] = score
        else:
            self.scores[step] = score

    def close(self) -> None:
        """Write every row left (at the end of training)."""
        self._write(len(self.rows))

    def _write(self, upto: int) -> None:
        """Rows ``written`` to ``upto`` to the file (the header first: the loss parts of the rows so far name the
        last columns) and the sinks."""
        if upto <= self.written:
            return
        new, lines = self.rows[self.written : upto], []
        if self.written == 0:
            self.parts = sorted({k for row in self.rows for k in row} - {*COLUMNS, PACE})
            lines.append(banner.comment_line() + "\t".join([*COLUMNS, *self.parts]))
        lines += ["\t".join(cell(row.get(name)) for name in [*COLUMNS, *self.parts]) for row in new]
        if self.path is not None:
            with self.path.open("a", encoding="utf-8") as out:
                out.write("\n".join(lines) + "\n")
        for sink in self.sinks:
            sink.log(new)
        self.written = upto


def parts_of(row: dict) -> dict[str, float]:
    """A row's named loss parts."""
    return {k: v for k, v in row.items() if k not in (*COLUMNS, PACE)}


def cell(value) -> str:
    """A TSV cell: empty for no value, integers as such, floats with full precision (``repr``)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return repr(float(value)) if isinstance(value, float) else str(value)


class NonFiniteLoss(FloatingPointError):
    """A step's loss was NaN or infinite."""


@dataclass
class StepRecord:
    loss: torch.Tensor  # 0-d, detached
    parts: dict[str, torch.Tensor | float]
    grad_norm: torch.Tensor | None
    epoch: int  # 0-based
    lr: float  # the learning rate the step used


class LossTally:
    """Pending step records on the device (``pending``); ``first_step``: the 1-based number of the first pending
    step."""

    def __init__(self, first_step: int, lr: float):
        self.first_step = first_step
        self.lr = lr
        self.pending: list[StepRecord] = []

    def read(self) -> list[dict]:
        """Every pending step's row (step, epoch, lr, loss, gradient norm and named parts), in one device-to-host
        transfer."""
        if not self.pending:
            return []
        tensors = [value for record in self.pending for value in device_values(record)]
        values = iter(torch.stack([t.detach().float() for t in tensors]).tolist())
        rows = [row_of(self.first_step + offset, record, values) for offset, record in enumerate(self.pending)]
        for row in rows:
            if not math.isfinite(row["loss"]):
                raise NonFiniteLoss(f"training loss became {row['loss']} at step {row['step']} (lr {self.lr}); "
                                    "stopping")
        self.first_step += len(self.pending)
        self.pending = []
        return rows


def device_values(record: StepRecord) -> list[torch.Tensor]:
    """A record's device tensors in reading order: loss, tensor parts (in their order), gradient norm."""
    parts = [v for v in record.parts.values() if isinstance(v, torch.Tensor)]
    return [record.loss, *parts, *([] if record.grad_norm is None else [record.grad_norm])]


def row_of(step: int, record: StepRecord, values: Iterator[float]) -> dict:
    """A step's row, its device values taken from ``values`` in :func:`device_values`' order."""
    loss = next(values)
    parts = {k: (next(values) if isinstance(v, torch.Tensor) else float(v)) for k, v in record.parts.items()}
    norm = None if record.grad_norm is None else next(values)
    return {"step": step, "epoch": record.epoch + 1, "lr": record.lr, "loss": loss, "grad_norm": norm, **parts}
