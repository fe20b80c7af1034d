"""Stand-ins, in their real file formats, for the datasets a rehearsal cannot have offline or must cap.

Each is written into a folder with a ``sha256sum`` manifest beside it, and reaches the workflow the way the real data
does: rule ``acquire_data`` copies it from that mirror and checks it, and the workflow's own readers read it.

* ``oxford``: Ishiwatari et al.'s layout (``train/valid/test.txt``; ``word%oxford.N``, part of speech, example,
  definition; Moses-style tokens) made from WordNet 3.0's single-word entries, split 8:1:1 by headword; no
  examples (WordNet's are not in the records the workflow reads), a column the reader does not use.
* ``wiki1m``: SimCSE's one-sentence-a-line file made from SentEval's transfer-task sentences.
* ``senteval``: SentEval's data with every STS, STS-B and SICK file cut to its first ``pairs`` pairs (the transfer
  tasks whole).
"""

from __future__ import annotations

import hashlib
import re
import shutil
from collections import defaultdict
from collections.abc import Iterable, Iterator
from itertools import islice
from pathlib import Path

from defsent_plus.io import atomic_path

POS_OF_FILE = {"noun": "noun", "verb": "verb", "adj": "adjective", "adv": "adverb"}
OXFORD_SPLITS = ("train.txt",) * 8 + ("valid.txt", "test.txt")  # a headword's split by its hash's last digit
TRANSFER_FILES = ("MR/rt-polarity.pos", "MR/rt-polarity.neg", "CR/custrev.pos", "CR/custrev.neg",
                  "SUBJ/subj.objective", "SUBJ/subj.subjective", "MPQA/mpqa.pos", "MPQA/mpqa.neg")
_PUNCT = re.compile(r"([.,;:!?()\"])")


def moses_like(text: str) -> str:
    """Punctuation split off by spaces, as in Ishiwatari's files (the Oxford reader undoes it)."""
    return " ".join(_PUNCT.sub(r" \1 ", text).split())


def split_of(headword: str) -> str:
    """A headword's split, 8:1:1, by a hash of the word (every sense of a word in one split, as Ishiwatari's)."""
    return OXFORD_SPLITS[int(hashlib.sha256(headword.encode("utf-8")).hexdigest(), 16) % 10]


def write_oxford(out_dir: Path, nltk_data: Path, max_lines: int | None = None) -> Path:
    """The Oxford stand-in's split files, from WordNet's single-word entries in WordNet's order."""
    from defsent_plus.dictionary.sources import DropCounts, read_wordnet

    senses: dict[str, int] = defaultdict(int)
    files: dict[str, list[str]] = {name: [] for name in dict.fromkeys(OXFORD_SPLITS)}
    for n, definition in enumerate(d for d in read_wordnet(nltk_data, "wordnet", "error", DropCounts())
                                   if " " not in d.entry and "-" not in d.entry):
        if max_lines is not None and n >= max_lines:
            break
        pos = POS_OF_FILE[Path(definition.where.rsplit(":", 1)[0]).suffix.lstrip(".")]
        word = definition.entry
        files[split_of(word)].append(f"{word}%oxford.{senses[word]}\t{pos}\t\t{moses_like(definition.text)}")
        senses[word] += 1
    with atomic_path(out_dir) as tmp:
        tmp.mkdir()
        for name, lines in files.items():
            (tmp / name).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return out_dir


def transfer_sentences(senteval: Path) -> Iterator[str]:
    """SentEval's MR, CR, SUBJ and MPQA sentences, file by file (UTF-8, undecodable bytes replaced)."""
    for name in TRANSFER_FILES:
        for line in (senteval / name).read_bytes().decode("utf-8", errors="replace").splitlines():
            if line.strip():
                yield line.strip()


def write_wiki1m(out_dir: Path, senteval: Path, max_lines: int) -> Path:
    with atomic_path(out_dir) as tmp:
        tmp.mkdir()
        text = "".join(s + "\n" for s in islice(transfer_sentences(senteval), max_lines))
        (tmp / "wiki1m_for_simcse.txt").write_text(text, encoding="utf-8")
    return out_dir


def scored_lines(gold: Path, pairs: int) -> list[int]:
    """Line indices of the first ``pairs`` scored pairs of an STS gold file (unscored lines are empty)."""
    with open(gold, "rb") as handle:
        return [i for i, line in enumerate(handle) if line.strip()][:pairs]


def keep_lines(source: Path, target: Path, indices: Iterable[int]) -> None:
    """The lines of a file at ``indices`` (those it has), bytes unchanged."""
    with open(source, "rb") as handle:
        lines = handle.readlines()
    target.write_bytes(b"".join(lines[i] for i in indices if i < len(lines)))


def capped_copy(source: Path, target: Path, relative: Path, pairs: int) -> None:
    """A SentEval file as a stand-in keeps it: STS year files their first ``pairs`` scored pairs (input and gold
    line by line alike), STS-B's header-less csv and SICK (after its header) their first ``pairs`` lines, the rest
    whole."""
    name = relative.name
    if relative.parts[0] == "STS" and name.startswith(("STS.input.", "STS.gs.")) and name.endswith(".txt"):
        gold = source.with_name(name.replace("STS.input.", "STS.gs.", 1))
        keep_lines(source, target, scored_lines(gold if gold.is_file() else source, pairs))
    elif relative.parts[0] == "STS" and relative.suffix == ".csv":
        keep_lines(source, target, range(pairs))
    elif relative.parts[0] == "SICK":
        keep_lines(source, target, range(pairs + 1))
    else:
        shutil.copyfile(source, target)


def write_senteval(out_dir: Path, senteval: Path, pairs: int) -> Path:
    with atomic_path(out_dir) as tmp:
        for source in sorted(p for p in senteval.rglob("*") if p.is_file()):
            relative = source.relative_to(senteval)
            target = tmp / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            capped_copy(source, target, relative, pairs)
    return out_dir

