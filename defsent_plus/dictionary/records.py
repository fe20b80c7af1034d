"""What every dictionary source reader yields, and the count of what was skipped on the way."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

FIRST_PLACES = 5  # how many places (file:line) of each kind of skipped input a warning names


@dataclass(frozen=True)
class Definition:
    """One (headword, definition) pair as read from a source, with where it came from."""

    entry: str
    text: str
    source: str
    where: str = ""


@dataclass
class DropCounts:
    """What was skipped and why, per source, with the first places (``file:line``) of each: nothing is dropped
    without being counted."""

    counts: Counter = field(default_factory=Counter)
    places: defaultdict = field(default_factory=lambda: defaultdict(list))

    def add(self, source: str, reason: str, n: int = 1, where: str = "") -> None:
        self.counts[(source, reason)] += n
        first = self.places[(source, reason)]
        if where and len(first) < FIRST_PLACES:
            first.append(where)

    def rows(self) -> list[tuple[str, str, int]]:
        return [(source, reason, n) for (source, reason), n in sorted(self.counts.items())]

    def first_places(self, source: str, reason: str) -> list[str]:
        """The first places (``file:line``) where ``source`` dropped input for ``reason``."""
        return list(self.places.get((source, reason), []))
