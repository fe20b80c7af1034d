"""DefSent+: sentence embeddings from definitions projected into a frozen space of entry embeddings.

Comments and docstrings cite the papers by short ids: 000 DefSent+, 001/002 DefSent, 003 the extraction study,
004 SLT-FAI (full citations: docs/references.md)."""

__version__ = "0.2.0"  # as pyproject.toml and CHANGELOG.md
