"""Dictionary sources merged into the datasets a, b and c of DefSent+ (000, Table 1), and their statistics.

:func:`build_datasets` normalises the records of every configured source, merges them by headword and
returns one table per dataset: a (all sources), b (the primary source) and c (b's single-token entries).
"""

from __future__ import annotations

import gc
import logging
import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from defsent_plus.dictionary.sources import READERS, Definition, DropCounts, SourceNotFound
from defsent_plus.dictionary.table import EMPTY_BECAUSE
from defsent_plus.errors import DefSentError
from defsent_plus.io import atomic_path, write_tsv

log = logging.getLogger(__name__)

DATASETS = ("a", "b", "c")
SOURCES_KEY = "config: dictionary.sources"


@dataclass(frozen=True)
class SourceSpec:
    """One configured source: its name (used in tables), reader type and path."""

    name: str
    type: str
    path: str | None = None


def parse_sources(config: list[dict], where: str = SOURCES_KEY) -> list[SourceSpec]:
    """Validate the configured sources (names unique, types known, paths present where required)."""
    if not config:
        raise DefSentError(where, "expected at least one dictionary source")
    specs: list[SourceSpec] = []
    for i, item in enumerate(config):
        kind = item.get("type")
        if kind not in READERS:
            raise DefSentError(f"{where}[{i}].type", f"unknown source {kind!r}; expected one of {sorted(READERS)}")
        if kind in ("oxford", "defsentplus", "tsv") and not item.get("path"):
            raise DefSentError(f"{where}[{i}].path", f"a {kind} source needs a path")
        name = item.get("name", kind)
        earlier = [j for j, spec in enumerate(specs) if spec.name == name]
        if earlier:
            raise DefSentError(f"{where}[{i}].name", f"source name {name!r} is already used by {where}[{earlier[0]}]; "
                                                     "names must be unique (a name defaults to the source's type)")
        specs.append(SourceSpec(name, kind, item.get("path")))
    return specs


def primary_source(specs: list[SourceSpec], configured: str | None) -> str:
    """Dataset b's source: the configured one, else Oxford when present, else the first source."""
    names = [s.name for s in specs]
    if configured:
        if configured not in names:
            raise DefSentError("config: dictionary.primary", f"{configured!r} is not one of the sources {names}")
        return configured
    oxford = [s.name for s in specs if s.type == "oxford"]
    return oxford[0] if oxford else names[0]


_WHITESPACE = re.compile(r"\s+")


def normalise_records(records: Iterable[Definition], lowercase: bool, drops: DropCounts) -> Iterator[Definition]:
    """Headwords stripped (and lower-cased), definitions whitespace-normalised; empty ones dropped and counted."""
    for record in records:
        entry = _WHITESPACE.sub(" ", record.entry).strip()
        entry = entry.lower() if lowercase else entry
        text = _WHITESPACE.sub(" ", record.text).strip()
        if not entry:
            drops.add(record.source, "empty_entry", where=record.where)
        elif not text:
            drops.add(record.source, "empty_definition", where=record.where)
        else:
            yield Definition(entry, text, record.source, record.where)


def merge_by_entry(records: Iterable[Definition], drops: DropCounts) -> pd.DataFrame:
    """Entries with all their definitions (first-seen order, exact duplicates removed), sorted by entry."""
    definitions: dict[str, dict[str, str]] = {}
    for record in records:
        seen = definitions.setdefault(record.entry, {})
        if record.text in seen:
            drops.add(record.source, "duplicate_definition")
        else:
            seen[record.text] = record.source
    entries = sorted(definitions)
    return pd.DataFrame({"entry": pd.Series(entries, dtype="string"),
                         "definitions": [list(definitions[e]) for e in entries],
                         "sources": [list(definitions[e].values()) for e in entries]})


def backend_encodings(tokenizer, texts: Sequence[str], add_special_tokens: bool) -> list | None:
    """What ``tokenizer(texts, add_special_tokens=...)`` encodes, as the fast tokenizer's own encodings; None for a
    tokenizer without a Rust backend.

    The call would also convert every encoding into Python lists, nearly doubling its time. The backend is a copy set
    as the call sets it (no truncation or padding, which a saved ``tokenizer.json`` may carry; special tokens split
    as the tokenizer says), so the tokenizer itself is left as it was.
    """
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return None
    from tokenizers import Tokenizer

    backend = Tokenizer.from_str(backend.to_str())
    backend.no_truncation()
    backend.no_padding()
    backend.encode_special_tokens = bool(getattr(tokenizer, "split_special_tokens", False))
    return backend.encode_batch_fast(list(texts), add_special_tokens=add_special_tokens)


def token_lengths(tokenizer, texts: Sequence[str], add_special_tokens: bool = True) -> list[int]:
    """Each text's number of tokens, ``len(tokenizer(text, add_special_tokens=...)["input_ids"])``, in one batch."""
    encodings = backend_encodings(tokenizer, texts, add_special_tokens)
    if encodings is None:
        return [len(ids) for ids in tokenizer(list(texts), add_special_tokens=add_special_tokens)["input_ids"]]
    return [len(encoding) for encoding in encodings]


def single_token_ids(tokenizer, words: Sequence[str]) -> list[int | None]:
    """Each word's token id when it is exactly one known token of the vocabulary, else None.

    A word is tokenised as it appears inside a sentence: after a space, without special tokens. Tokenizers that
    mark word starts (byte-level BPE's ``Ġ``, SentencePiece's ``▁``) give the word-initial form, the one a
    masked-LM head predicts inside a sentence (RoBERTa); WordPiece drops the space, so BERT gets the word itself.
    """
    spaced = [f" {word}" for word in words]
    encodings = backend_encodings(tokenizer, spaced, add_special_tokens=False)
    if encodings is None:
        ids = tokenizer(spaced, add_special_tokens=False)["input_ids"]
    else:  # only a one-token encoding's ids are looked at
        ids = [encoding.ids if len(encoding) == 1 else () for encoding in encodings]
    unknown = {tokenizer.unk_token_id, *tokenizer.all_special_ids}
    return [t[0] if len(t) == 1 and t[0] not in unknown else None for t in ids]


def single_token_entries(frame: pd.DataFrame, tokenizer) -> pd.DataFrame:
    """Entries that are one token of the tokenizer's vocabulary (:func:`single_token_ids`): dataset c."""
    keep = np.array([i is not None for i in single_token_ids(tokenizer, list(frame["entry"]))], dtype=bool)
    return frame[keep].reset_index(drop=True)


@dataclass
class Datasets:
    """The merged datasets and what was dropped while building them."""

    frames: dict[str, pd.DataFrame]
    drops: DropCounts
    raw_counts: dict[str, int]


def build_datasets(sources: list[dict], tokenizer, primary: str | None = None, lowercase: bool = True,
                   on_malformed: str = "error") -> Datasets:
    """Read, normalise and merge the configured sources into datasets a, b and c."""
    specs = parse_sources(sources)
    b_source = primary_source(specs, primary)
    drops = DropCounts()
    raw_counts: dict[str, int] = {}
    records: list[Definition] = []
    for index, spec in enumerate(specs):
        try:
            raw = list(READERS[spec.type](spec.path, spec.name, on_malformed, drops))
        except SourceNotFound as err:  # named by its config key
            raise DefSentError(f"{SOURCES_KEY}[{index}].path ({spec.name})", err.message) from err
        raw_counts[spec.name] = len(raw)
        kept = list(normalise_records(raw, lowercase, drops))
        warn_dropped(spec.name, drops)
        if not kept:
            raise DefSentError(spec.path or spec.name, f"source {spec.name!r} gave no definitions")
        records.extend(kept)
    frame_a = merge_by_entry(records, drops)
    frame_b = merge_by_entry((r for r in records if r.source == b_source), DropCounts())
    frame_c = single_token_entries(frame_b, tokenizer)
    if frame_c.empty:
        frame_c.attrs[EMPTY_BECAUSE] = (f"no entry of {b_source!r} (dataset b's source) is a single token of the "
                                        "tokenizer's vocabulary (dictionary.tokenizer)")
        log.warning("dataset c is empty: %s; a run, subset or baseline that reads dataset c stops with this reason",
                    frame_c.attrs[EMPTY_BECAUSE])
    return Datasets({"a": frame_a, "b": frame_b, "c": frame_c}, drops, raw_counts)


DROP_REASONS = {  # what a warning says of each kind of dropped input; blank lines and duplicates are only counted
    "malformed_line": "malformed lines (too few columns, or not the format's)",
    "extra_columns": "lines with more columns than the format's",
    "empty_entry": "definitions with an empty headword",
    "empty_definition": "empty definitions",
    "definition_without_text": "definitions without text",
}


def warn_dropped(source: str, drops: DropCounts) -> None:
    """One WARNING per kind of input a source dropped: how many, and the first places (file:line)."""
    for name, reason, n in drops.rows():
        if name == source and reason in DROP_REASONS:
            places = ", ".join(drops.first_places(source, reason))
            log.warning("dictionary source %r: %s: %d dropped (first at %s)", source, DROP_REASONS[reason], n, places)


def dataset_stats(datasets: Datasets, tokenizer) -> pd.DataFrame:
    """Table 1 of the paper in long form (scope, metric, value), plus what was read and dropped per source."""
    rows = []
    unique = list(dict.fromkeys(d for frame in datasets.frames.values() for defs in frame["definitions"] for d in defs))
    token_counts = dict(zip(unique, token_lengths(tokenizer, unique), strict=True))  # each distinct text once
    for name, frame in datasets.frames.items():
        definitions = [d for defs in frame["definitions"] for d in defs]
        lengths = np.fromiter(map(token_counts.__getitem__, definitions), dtype=np.int64, count=len(definitions))
        used = sorted({s for sources in frame["sources"] for s in sources})
        rows += [(f"dataset:{name}", "sources", "+".join(used)), (f"dataset:{name}", "definitions", len(definitions)),
                 (f"dataset:{name}", "entries", len(frame))]
        if len(lengths):  # an empty dataset (c without a single-token entry) has no lengths
            rows += [(f"dataset:{name}", "max_length_tokens", int(lengths.max())),
                     (f"dataset:{name}", "median_length_tokens", float(np.median(lengths)))]
    for source, n in datasets.raw_counts.items():
        rows.append((f"source:{source}", "definitions_read", n))
    for source, reason, n in datasets.drops.rows():
        rows.append((f"source:{source}", f"dropped_{reason}", n))
    return pd.DataFrame(rows, columns=["scope", "metric", "value"])


@contextmanager
def paused_gc() -> Iterator[None]:
    """Python's cyclic garbage collector paused: reading and merging the sources makes millions of objects that
    live to the end of the stage, which the collector would scan again and again to find next to no garbage."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def write_dictionary_stage(sources: list[dict], tokenizer_path: str | Path, outputs: dict[str, str | Path],
                           stats_path: str | Path, primary: str | None = None, lowercase: bool = True,
                           on_malformed: str = "error") -> pd.DataFrame:
    """Build datasets a, b, c and write them and their stats; outputs appear only when all succeeded."""
    from defsent_plus.encoders.models import load_tokenizer  # torch + transformers: only when the stage runs

    tokenizer = load_tokenizer(tokenizer_path)
    with paused_gc():
        datasets = build_datasets(sources, tokenizer, primary, lowercase, on_malformed)
        stats = dataset_stats(datasets, tokenizer)
    for name, frame in datasets.frames.items():
        log.info("dataset %s: %d entries, %d definitions", name, len(frame), frame["definitions"].map(len).sum())
        with atomic_path(outputs[name]) as tmp:
            frame.to_parquet(tmp, index=False)
    for _, row in stats.iterrows():
        log.info("%s %s = %s", row.scope, row.metric, row.value)
    write_tsv(stats_path, stats)
    return stats
