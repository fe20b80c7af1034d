"""(definition, entry id) pairs of a dataset: the entry-space inputs and the training examples."""

from __future__ import annotations

import numpy as np
import pandas as pd


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
