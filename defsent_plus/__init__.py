"""DefSent+: sentence embeddings from definitions projected into a frozen space of entry embeddings.

Comments and docstrings cite the papers by short ids: 000 DefSent+, 001/002 DefSent, 003 the extraction study,
004 SLT-FAI (full citations: docs/references.md)."""

from __future__ import annotations

import sys
from pathlib import Path

__version__ = "0.2.0"  # as pyproject.toml and CHANGELOG.md


class DefSentError(Exception):
    """The one error type for user-facing failures: it says where (file, line or config key) and what was expected,
    worded for the user."""

    def __init__(self, where: str | Path, message: str, line: int | None = None):
        self.where = str(where)
        self.line = line
        self.message = message
        location = f"{self.where}:{line}" if line is not None else self.where
        super().__init__(f"{location}: {message}")


if "snakemake.script" in sys.modules and isinstance(getattr(sys.modules["__main__"], "snakemake", None),
                                                   sys.modules["snakemake.script"].Snakemake):
    import gc

    gc.disable()  # a workflow script's job: its libraries load without the collector; start_job (pipeline/jobs.py)
