"""Rehearsals: any config run offline on random weights of its real architectures and capped stand-in data."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]  # the workflow's repository (its schema, rehearsals/, nltk_data/)
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
