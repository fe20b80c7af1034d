"""The one error type for user-facing failures: it says where (file, line or config key) and what was expected."""

from __future__ import annotations

from pathlib import Path


class DefSentError(Exception):
    """A failure caused by the user's input or configuration, worded for the user."""

    def __init__(self, where: str | Path, message: str, line: int | None = None):
        self.where = str(where)
        self.line = line
        self.message = message
        location = f"{self.where}:{line}" if line is not None else self.where
        super().__init__(f"{location}: {message}")
