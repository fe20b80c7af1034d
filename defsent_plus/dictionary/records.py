"""What every dictionary source reader yields, and the count of what was skipped on the way."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Definition:
    """One (headword, definition) pair as read from a source, with where it came from."""

    entry: str
    text: str
    source: str
    where: str = ""


@dataclass
class DropCounts:
    """What was skipped and why, per source: nothing is dropped without being counted."""

    counts: Counter = field(default_factory=Counter)

    def add(self, source: str, reason: str, n: int = 1) -> None:
        self.counts[(source, reason)] += n

    def rows(self) -> list[tuple[str, str, int]]:
        return [(source, reason, n) for (source, reason), n in sorted(self.counts.items())]
