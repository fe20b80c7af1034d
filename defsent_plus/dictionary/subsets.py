"""The subset stage: a seeded sub-sample of a dataset's entries, optionally with its held-out split and queries."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd

from defsent_plus.dictionary.heldout import check_queries, hold_out_queries, parse_heldout, split_by_headword
from defsent_plus.dictionary.table import SOURCE_DATASET, read_dataset
from defsent_plus.io import atomic_path

log = logging.getLogger(__name__)


def subsample_entries(frame: pd.DataFrame, max_entries: int | None, seed: int) -> pd.DataFrame:
    """At most ``max_entries`` entries drawn without replacement (seeded), kept sorted by entry."""
    if not max_entries or len(frame) <= max_entries:
        return frame.reset_index(drop=True)
    rng = np.random.default_rng(seed)
    keep = np.sort(rng.choice(len(frame), size=max_entries, replace=False))
    return frame.iloc[keep].reset_index(drop=True)


def with_heldout_queries(frame: pd.DataFrame, heldout: dict, where: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The subset with its ``split`` column and without its queries, and the queries (see :mod:`.heldout`)."""
    split = parse_heldout(heldout, where)
    kept, queries, counts = hold_out_queries(frame.assign(split=split_by_headword(frame, split, where)), split.seed)
    check_queries(counts, where)
    return kept, queries


def write_subset(
    dataset_path: str | Path,
    out_path: str | Path,
    max_entries: int | None,
    seed: int,
    heldout: dict | None = None,
    queries_path: str | Path | None = None,
    where: str = "config: subsets",
) -> pd.DataFrame:
    """Write a seeded sub-sample of a dataset's entries (all definitions of each kept entry).

    With ``heldout`` (``{dev, test, seed}``, the subset's config at ``where``), the entries are split by headword
    and one definition of each held-out entry becomes a reverse-dictionary query, written to ``queries_path`` and
    removed from the subset. Nothing is written unless every table was built.
    """
    frame = subsample_entries(read_dataset(dataset_path), max_entries, seed)
    tables = {out_path: frame}
    if heldout is not None:
        if queries_path is None:
            raise ValueError("a held-out split needs a queries path")
        frame, queries = with_heldout_queries(frame, heldout, where)
        tables = {out_path: frame, queries_path: queries}
    frame.attrs[SOURCE_DATASET] = str(dataset_path)  # the whole dataset, for a search beyond the subset
    log.info("subset of %s: %d entries, %d definitions", dataset_path, len(frame), frame["definitions"].map(len).sum())
    for path, table in tables.items():
        with atomic_path(path) as tmp:
            table.to_parquet(tmp, index=False)
    return frame
