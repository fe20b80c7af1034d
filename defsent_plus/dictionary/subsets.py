"""The subset stage: a seeded sub-sample of a dataset's entries, optionally with its held-out split and queries.

The held-out split serves the reverse dictionary: a seeded permutation of the headwords decides each entry's split
(train/dev/test); one definition of every dev/test entry (one no other entry shares) leaves the dataset and becomes
a query, so it reaches neither an entry embedding nor a training example.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from defsent_plus.dictionary.table import SOURCE_DATASET, read_dataset
from defsent_plus.errors import DefSentError
from defsent_plus.io import atomic_path
from defsent_plus.names import HELDOUT_SPLITS

log = logging.getLogger(__name__)

HELDOUT_KEYS = ("dev", "test", "seed")


@dataclass(frozen=True)
class HeldOut:
    """Fractions of a subset's headwords held out of training for dev and test, and the seed of the split."""

    dev: float = 0.1
    test: float = 0.1
    seed: int = 0


def parse_heldout(config: dict, where: str) -> HeldOut:
    """A subset's ``heldout`` config; both fractions in (0, 1) and together below 1."""
    unknown = set(config) - set(HELDOUT_KEYS)
    if unknown:
        raise DefSentError(where, f"unknown keys {sorted(unknown)}; expected {', '.join(HELDOUT_KEYS)}")
    split = HeldOut(**config)
    for name in HELDOUT_SPLITS:
        value = getattr(split, name)
        if not 0 < value < 1:
            raise DefSentError(f"{where}.{name}", f"expected a fraction of the entries in (0, 1), got {value}")
    if split.dev + split.test >= 1:
        raise DefSentError(where, f"dev + test = {split.dev + split.test:g} leaves no entries for training; "
                                  "expected a sum below 1")
    return split


def share_of(fraction: float, n: int) -> int:
    """``fraction`` of ``n`` rounded half up (unlike round(), which rounds half to even)."""
    return int(fraction * n + 0.5)


def split_by_headword(frame: pd.DataFrame, heldout: HeldOut, where: str = "config: subsets.heldout") -> np.ndarray:
    """``train``/``dev``/``test`` per entry: a seeded permutation of the headwords (case-folded, so case variants
    kept apart by ``dictionary.lowercase: false`` share a split) cut into test, dev and train."""
    keys = frame["entry"].astype(str).str.casefold().to_numpy()
    headwords = sorted(set(keys))
    n = len(headwords)
    n_test, n_dev = share_of(heldout.test, n), share_of(heldout.dev, n)
    if min(n_test, n_dev) < 1 or n - n_test - n_dev < 1:
        raise DefSentError(where, f"the subset has {n} headwords, too few to hold out dev {heldout.dev:g} and test "
                                  f"{heldout.test:g} with at least one headword each and some left for training")
    order = np.random.default_rng(heldout.seed).permutation(n)
    labels = np.full(n, "train", dtype=object)
    labels[order[:n_test]] = "test"
    labels[order[n_test : n_test + n_dev]] = "dev"
    position = {headword: i for i, headword in enumerate(headwords)}
    return labels[[position[key] for key in keys]].astype(str)


def query_key(definition: str) -> str:
    """A definition compared for query uniqueness: case-folded, without trailing punctuation and spaces."""
    return definition.casefold().rstrip(" .;,:")


def hold_out_queries(frame: pd.DataFrame, seed: int) -> tuple[pd.DataFrame, pd.DataFrame, Counter]:
    """Move one definition (seeded choice) of every dev/test entry out of the dataset into a query table.

    Only an entry with at least two definitions can give one up (it must keep a definition for its entry
    embedding), and only a definition no other entry has, compared case-folded and without final punctuation
    (a query text, or a near-copy of it, must not contribute to any entry embedding). Returns the dataset
    without the queries, the queries (``entry_id, entry, definition, split``) and counts per split:
    ``<split>_entries``, ``<split>_queries``, ``<split>_single_definition`` and
    ``<split>_shared_definitions_only`` (held-out entries without a query).
    """
    occurrences = Counter(query_key(d) for defs in frame["definitions"] for d in defs)
    rng = np.random.default_rng([seed, 1])  # a stream apart from the split's permutation
    definitions, sources = list(frame["definitions"].map(list)), list(frame["sources"].map(list))
    queries, counts = [], Counter()
    for entry_id, (entry, split) in enumerate(zip(frame["entry"], frame["split"], strict=True)):
        if split == "train":
            continue
        counts[f"{split}_entries"] += 1
        own = [i for i, text in enumerate(definitions[entry_id]) if occurrences[query_key(text)] == 1]
        if len(definitions[entry_id]) < 2:
            counts[f"{split}_single_definition"] += 1
        elif not own:
            counts[f"{split}_shared_definitions_only"] += 1
        else:
            chosen = own[int(rng.integers(len(own)))]
            queries.append((entry_id, entry, definitions[entry_id].pop(chosen), split))
            sources[entry_id].pop(chosen)
            counts[f"{split}_queries"] += 1
    kept = frame.assign(definitions=definitions, sources=sources)
    table = pd.DataFrame(queries, columns=["entry_id", "entry", "definition", "split"]).astype(
        {"entry_id": "int64", "entry": "string", "definition": "string", "split": "string"})
    return kept, table, counts


def check_queries(counts: Counter, where: str) -> None:
    """Log what was held out; fail when a held-out split has no query at all."""
    for split in HELDOUT_SPLITS:
        log.info("%s: %d entries, %d queries; without a query: %d with a single definition, %d whose definitions "
                 "other entries share too", split, counts[f"{split}_entries"], counts[f"{split}_queries"],
                 counts[f"{split}_single_definition"], counts[f"{split}_shared_definitions_only"])
        if not counts[f"{split}_queries"]:
            raise DefSentError(where, f"no {split} entry has a definition to hold out as a query ({split} entries "
                                      "need at least two definitions, one not shared with another entry); "
                                      f"raise heldout.{split} or max_entries")


def subsample_entries(frame: pd.DataFrame, max_entries: int | None, seed: int) -> pd.DataFrame:
    """At most ``max_entries`` entries drawn without replacement (seeded), kept sorted by entry."""
    if not max_entries or len(frame) <= max_entries:
        return frame.reset_index(drop=True)
    rng = np.random.default_rng(seed)
    keep = np.sort(rng.choice(len(frame), size=max_entries, replace=False))
    return frame.iloc[keep].reset_index(drop=True)


def with_heldout_queries(frame: pd.DataFrame, heldout: dict, where: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The subset with its ``split`` column and without its queries, and the queries."""
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
    """Write a seeded sub-sample of a dataset's entries (all definitions of each kept entry) and, with ``heldout``
    (``{dev, test, seed}``, the subset's config at ``where``), its held-out split, its queries going to
    ``queries_path`` (see module). Nothing is written unless every table was built."""
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
