"""The dataset table every stage after the dictionary reads: one row per entry, row index = entry id.

Columns: ``entry``, ``definitions`` (list), ``sources`` (list, one per definition) and, in a subset with a
held-out split, ``split`` (``train``/``dev``/``test``, by headword). Its (definition, entry id) pairs are the
entry-space inputs and the training examples.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from defsent_plus.errors import DefSentError
from defsent_plus.names import SPLITS  # a subset's held-out split (column ``split``), by headword

DATASET_COLUMNS = ("entry", "definitions", "sources")
SOURCE_DATASET = "source_dataset"  # a subset's parquet metadata (``frame.attrs``): the dataset it was drawn from
EMPTY_BECAUSE = "empty_because"  # an empty dataset's parquet metadata (``frame.attrs``): why it has no entries


def check_dataset(frame: pd.DataFrame, where: str | Path) -> pd.DataFrame:
    """Fail unless ``frame`` has the dataset columns and at least one entry."""
    missing = set(DATASET_COLUMNS) - set(frame.columns)
    if missing:
        raise DefSentError(where, f"not a dictionary dataset: missing columns {sorted(missing)}")
    if frame.empty:
        because = frame.attrs.get(EMPTY_BECAUSE)
        raise DefSentError(where, "dataset has no entries" + (f": {because}" if because else ""))
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


def normalised_definition(text: str) -> str:
    """A definition as :func:`entries_defined_as` compares it: case-folded, single-spaced, without a final period."""
    return " ".join(text.casefold().split()).rstrip(".").rstrip()


def entries_defined_as(frame: pd.DataFrame, text: str) -> list[str]:
    """The entries of ``frame`` that have ``text`` as one of their definitions (see :func:`normalised_definition`)."""
    wanted = normalised_definition(text)
    return [entry for entry, definitions in zip(frame["entry"], frame["definitions"], strict=True)
            if any(normalised_definition(d) == wanted for d in definitions)]


def definition_pairs(frame: pd.DataFrame) -> tuple[list[str], np.ndarray]:
    """Every (definition, entry id) pair of a dataset, grouped by entry in row order."""
    texts = [d for defs in frame["definitions"] for d in defs]
    ids = np.repeat(np.arange(len(frame)), frame["definitions"].map(len).to_numpy())
    return texts, ids


def training_pairs(frame: pd.DataFrame) -> tuple[list[str], np.ndarray]:
    """The training examples: :func:`definition_pairs` of the entries in the ``train`` split, or all of them when
    the dataset has no split. Entry ids stay those of the whole dataset, so held-out entries remain classes."""
    texts, ids = definition_pairs(frame)
    if "split" not in frame.columns:
        return texts, ids
    keep = np.repeat(frame["split"].to_numpy() == "train", frame["definitions"].map(len).to_numpy())
    return [text for text, kept in zip(texts, keep, strict=True) if kept], ids[keep]
