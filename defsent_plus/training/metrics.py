"""A train job's per-step metrics table (TSV), appended while the job runs, so ``tail -f`` follows the training.

One row per optimisation step: step (counted from 1 over all epochs), epoch, the learning rate the step used, its
loss, gradient norm (where the method clips) and named loss parts, and the STS-B dev score where the method scored
one after that step (empty elsewhere). Rows reach the file when the loop reads the device (each logging interval,
before a saved state, at the end: no extra host read); the last row read waits for the next read, since a dev score
may still follow it. A resumed job rewrites the rows its saved state holds and goes on from there, so every step is
in the table once. A rehearsal's table starts with its banner as a ``#`` line (read with ``comment="#"``). The
examples per second of the logging interval that read a row go to the trackers with it and to the log, not to the
file, so two runs' tables compare byte for byte.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from pathlib import Path

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
        if upto <= self.written:
            return
        new = self.rows[self.written : upto]
        if self.path is not None:
            self._append(new, header=self.written == 0)
        for sink in self.sinks:
            sink.log(new)
        self.written = upto

    def _append(self, rows: list[dict], header: bool) -> None:
        lines = []
        if header:
            self.parts = sorted({k for row in self.rows for k in row} - {*COLUMNS, PACE})
            lines.append(banner.comment_line() + "\t".join([*COLUMNS, *self.parts]))
        lines += ["\t".join(cell(row.get(name)) for name in [*COLUMNS, *self.parts]) for row in rows]
        with self.path.open("a", encoding="utf-8") as out:
            out.write("\n".join(lines) + "\n")


def cell(value) -> str:
    """A TSV cell: empty for no value, integers as such, floats with full precision (``repr``)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return repr(float(value)) if isinstance(value, float) else str(value)
