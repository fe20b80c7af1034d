"""Logging set-up shared by the workflow's scripts."""

from __future__ import annotations

import logging
import sys
from pathlib import Path


def log_to(path: str | Path | None, level: int = logging.INFO) -> None:
    """Send this package's log records (and Python warnings) to ``path`` and to stderr."""
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(path, mode="w", encoding="utf-8"))
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", handlers=handlers,
                        force=True)
    logging.captureWarnings(True)
    sys.excepthook = _log_uncaught


def _log_uncaught(kind, error, traceback) -> None:
    """Uncaught errors go to the job's log file too, where Snakemake tells the user to look."""
    package = logging.getLogger(__package__.partition(".")[0])
    package.critical("%s: %s", kind.__name__, error, exc_info=(kind, error, traceback))
