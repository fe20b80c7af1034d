"""The dataset table every stage after the dictionary reads: one row per entry, row index = entry id.

Columns: ``entry``, ``definitions`` (list), ``sources`` (list, one per definition) and, in a subset with a
held-out split, ``split`` (``train``/``dev``/``test``, by headword).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from defsent_plus.errors import DefSentError

DATASET_COLUMNS = ("entry", "definitions", "sources")
SPLITS = ("train", "dev", "test")  # a subset's held-out split (column ``split``), by headword


def check_dataset(frame: pd.DataFrame, where: str | Path) -> pd.DataFrame:
    """Fail unless ``frame`` has the dataset columns and at least one entry."""
    missing = set(DATASET_COLUMNS) - set(frame.columns)
    if missing:
        raise DefSentError(where, f"not a dictionary dataset: missing columns {sorted(missing)}")
    if frame.empty:
        raise DefSentError(where, "dataset has no entries")
    if "split" in frame.columns and not frame["split"].isin(SPLITS).all():
        unknown = sorted(set(frame["split"]) - set(SPLITS))
        raise DefSentError(where, f"unknown split values {unknown}; expected {list(SPLITS)}")
    return frame


def read_dataset(path: str | Path) -> pd.DataFrame:
    """A dataset parquet written by the dictionary or subset stage, checked (row index = entry id)."""
    path = Path(path)
    if not path.is_file():
        raise DefSentError(path, "dataset file not found")
    frame = pd.read_parquet(path)
    frame["definitions"] = frame["definitions"].map(list)
    frame["sources"] = frame["sources"].map(list)
    return check_dataset(frame, path)
