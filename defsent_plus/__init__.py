"""DefSent+: sentence embeddings from definitions projected into a frozen space of entry embeddings.

Comments and docstrings cite the papers by short ids: 000 DefSent+, 001/002 DefSent, 003 the extraction study,
004 SLT-FAI (full citations: docs/references.md)."""

import sys

__version__ = "0.2.0"  # as pyproject.toml and CHANGELOG.md

if "snakemake.script" in sys.modules and isinstance(getattr(sys.modules["__main__"], "snakemake", None),
                                                   sys.modules["snakemake.script"].Snakemake):
    import gc

    gc.disable()  # a workflow script's job: its libraries load without the collector; start_job (pipeline/jobs.py)
