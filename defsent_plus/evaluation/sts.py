"""Unsupervised STS evaluation (STS12-16, STS-B, SICK-R) on SentEval's data layout, as in SimCSE and DefSent+.

Protocol (SimCSE's modified SentEval, which DefSent+ follows): cosine similarity of the two sentence
embeddings, Spearman correlation with the gold scores, times 100. STS12-16 use the "all" setting by default
(``sts_aggregation``; SentEval also reports "mean" and "wmean" over a year's subsets): the subsets of a year are
concatenated and one correlation is computed; pairs whose gold line is empty are
skipped. STS-B and SICK-R are scored on their test split without any training. Sentences are
whitespace-normalised (``" ".join(s.split())``) as SentEval's batcher does.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from defsent_plus.errors import DefSentError

if TYPE_CHECKING:
    from defsent_plus.encoders.models import Encoder

Embed = Callable[[list[str]], np.ndarray]

STS_TASKS = ("STS12", "STS13", "STS14", "STS15", "STS16", "STSB", "SICKR")
"""The seven STS tasks of the paper's table, in its order."""

STS_YEAR_SUBSETS = {
    "STS12": ("MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews"),
    "STS13": ("FNWN", "headlines", "OnWN"),  # SMT is not distributed (licence)
    "STS14": ("deft-forum", "deft-news", "headlines", "images", "OnWN", "tweet-news"),
    "STS15": ("answers-forums", "answers-students", "belief", "headlines", "images"),
    "STS16": ("answer-answer", "headlines", "plagiarism", "postediting", "question-question"),
}
STSB_SPLITS = {"STSB": "test", "STSB-dev": "dev"}
KNOWN_STS_TASKS = (*STS_TASKS, "STSB-dev")


@dataclass(frozen=True)
class StsPairs:
    """Sentence pairs with gold similarity scores; ``skipped`` counts pairs dropped for an empty gold line."""

    sentences1: list[str]
    sentences2: list[str]
    gold: np.ndarray
    skipped: int = 0

    def __len__(self) -> int:
        return len(self.gold)


def normalise_space(sentence: str) -> str:
    """Collapse runs of whitespace, as SentEval's ``' '.join(s.split())`` does."""
    return " ".join(sentence.split())


def read_tsv(path: Path, encoding: str = "utf-8") -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of a tab-separated file, quotes taken literally (csv.QUOTE_NONE), any line end."""
    if not path.is_file():
        raise DefSentError(path, "file not found (expected SentEval's data/downstream layout)")
    with open(path, encoding=encoding, newline="") as handle:
        reader = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        for fields in reader:
            yield reader.line_num, fields


def parse_score(text: str, path: Path, line: int) -> float:
    try:
        return float(text)
    except ValueError:
        raise DefSentError(path, f"expected a numeric similarity score, got {text!r}", line=line) from None


MIN_SCORED_PAIRS = 1  # with none, the subset has no similarity to score (and scoring failed inside numpy)


def load_sts_subset(input_path: str | Path, gold_path: str | Path) -> StsPairs:
    """One STS subset: ``STS.input.X.txt`` (sentence TAB sentence) with ``STS.gs.X.txt`` (score or empty)."""
    input_path, gold_path = Path(input_path), Path(gold_path)
    pairs = list(read_tsv(input_path))
    golds = list(read_tsv(gold_path))
    if len(pairs) != len(golds):
        raise DefSentError(gold_path, f"has {len(golds)} lines but {input_path.name} has {len(pairs)}")
    s1, s2, gold, skipped = [], [], [], 0
    for (line, fields), (_, gold_fields) in zip(pairs, golds, strict=True):
        if len(fields) != 2:
            raise DefSentError(input_path, f"expected 2 tab-separated sentences, got {len(fields)} fields", line)
        gold_text = "\t".join(gold_fields).strip()
        if not gold_text:
            skipped += 1
            continue
        gold.append(parse_score(gold_text, gold_path, line))
        s1.append(normalise_space(fields[0]))
        s2.append(normalise_space(fields[1]))
    if len(gold) < MIN_SCORED_PAIRS:
        raise DefSentError(gold_path, f"{len(gold)} scored pairs ({skipped} unscored lines): a subset needs at least "
                                      f"{MIN_SCORED_PAIRS}")
    return StsPairs(s1, s2, np.asarray(gold, dtype=np.float64), skipped)


def load_scored_pairs(path: Path, columns: tuple[int, int, int], header: bool = False) -> StsPairs:
    """Pairs from a tab-separated file given 0-based (score, sentence 1, sentence 2) columns."""
    score_col, col1, col2 = columns
    s1, s2, gold = [], [], []
    for line, fields in read_tsv(path):
        if header and line == 1:
            continue
        if len(fields) < max(columns) + 1:
            raise DefSentError(path, f"expected at least {max(columns) + 1} tab-separated fields, got {len(fields)}",
                               line=line)
        gold.append(parse_score(fields[score_col].strip(), path, line))
        s1.append(normalise_space(fields[col1]))
        s2.append(normalise_space(fields[col2]))
    return StsPairs(s1, s2, np.asarray(gold, dtype=np.float64))


def load_stsb(senteval_dir: str | Path, split: str = "test") -> StsPairs:
    """STS Benchmark ``sts-{split}.csv``: score in column 5, sentences in columns 6 and 7 (1-based)."""
    return load_scored_pairs(Path(senteval_dir) / "STS" / "STSBenchmark" / f"sts-{split}.csv", (4, 5, 6))


def load_sickr(senteval_dir: str | Path) -> StsPairs:
    """SICK-R test: header line, relatedness score in column 4, sentences in columns 2 and 3 (1-based)."""
    return load_scored_pairs(Path(senteval_dir) / "SICK" / "SICK_test_annotated.txt", (3, 1, 2), header=True)


def load_sts_task(senteval_dir: str | Path, task: str) -> StsPairs:
    """Any task of :data:`KNOWN_STS_TASKS` (STS12-16: the year's subsets concatenated)."""
    parts = load_sts_parts(senteval_dir, task)
    return StsPairs([s for p in parts for s in p.sentences1], [s for p in parts for s in p.sentences2],
                    np.concatenate([p.gold for p in parts]), sum(p.skipped for p in parts))


def subset_names(task: str) -> tuple[str, ...]:
    """The names of a task's datasets, in :func:`load_sts_parts` order."""
    return STS_YEAR_SUBSETS.get(task, (task,))


def load_sts_parts(senteval_dir: str | Path, task: str) -> list[StsPairs]:
    """A task's datasets: the subsets of an STS12-16 year (in SentEval's order), or the one dataset of STS-B and
    SICK-R."""
    if task in STS_YEAR_SUBSETS:
        folder = Path(senteval_dir) / "STS" / f"{task}-en-test"
        return [load_sts_subset(folder / f"STS.input.{name}.txt", folder / f"STS.gs.{name}.txt")
                for name in STS_YEAR_SUBSETS[task]]
    if task in STSB_SPLITS:
        return [load_stsb(senteval_dir, STSB_SPLITS[task])]
    if task == "SICKR":
        return [load_sickr(senteval_dir)]
    raise DefSentError("tasks", f"unknown STS task {task!r}; expected one of {list(KNOWN_STS_TASKS)}")


STS_AGGREGATIONS = ("all", "mean", "wmean")


def aggregate_spearman(predicted: Sequence[np.ndarray], gold: Sequence[np.ndarray], aggregation: str) -> float:
    """Spearman x 100 over a task's datasets as SentEval reports it: ``all`` on the concatenated pairs (SimCSE's and
    DefSent+'s setting), ``mean`` the plain mean over datasets, ``wmean`` their mean weighted by pairs."""
    if aggregation == "all":
        return spearman_percent(np.concatenate(predicted), np.concatenate(gold))
    per_dataset = [spearman_percent(p, g) for p, g in zip(predicted, gold, strict=True)]
    if aggregation == "mean":
        return float(np.mean(per_dataset))
    if aggregation == "wmean":
        return float(np.average(per_dataset, weights=[len(g) for g in gold]))
    raise DefSentError("config: evaluation.sts_aggregation", f"unknown aggregation {aggregation!r}; expected one of "
                                                             f"{list(STS_AGGREGATIONS)}")


def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine similarity (a zero vector gets similarity 0)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return np.einsum("ij,ij->i", a, b) / np.maximum(norms, 1e-12)


def spearman_percent(predicted: np.ndarray, gold: np.ndarray) -> float:
    from scipy.stats import spearmanr  # 0.8 s to import: only the jobs that correlate pay it (not the embed jobs)

    return float(spearmanr(predicted, gold).correlation * 100)


def embed_unique(embed: Embed, sentences: Sequence[str]) -> dict[str, np.ndarray]:
    """Call ``embed`` once on the distinct sentences (first-seen order); map each sentence to its row."""
    unique = list(dict.fromkeys(sentences))
    vectors = np.asarray(embed(unique))
    if vectors.ndim != 2 or len(vectors) != len(unique):
        raise ValueError(f"embed returned shape {vectors.shape} for {len(unique)} sentences")
    return dict(zip(unique, vectors, strict=True))


PAIR_COLUMNS = ("task", "subset", "pair", "key", "gold", "similarity")
"""The per-pair similarities of a scoring (stored beside its scores, so intervals and tests need no encoding);
``key`` identifies the sentence pair across tasks (STS-B and STS12-16 share pairs; the average's interval resamples a
shared pair once)."""


def pair_key(sentence1: str, sentence2: str) -> int:
    """A stable 63-bit identity of an ordered sentence pair (the same pair in two tasks has the same key)."""
    import hashlib

    digest = hashlib.blake2b(f"{sentence1}\t{sentence2}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


def pair_similarities(vectors: Mapping[str, np.ndarray], senteval_dir: str | Path,
                      tasks: Sequence[str] = STS_TASKS) -> pd.DataFrame:
    """One row per scored pair of ``tasks`` (task, subset, pair index, gold score, cosine of the two sentences'
    vectors looked up in ``vectors``), in task, subset and file order."""
    frames = []
    for task in tasks:
        for subset, pairs in zip(subset_names(task), load_sts_parts(senteval_dir, task), strict=True):
            similarity = cosine_rows(np.stack([vectors[s] for s in pairs.sentences1]),
                                     np.stack([vectors[s] for s in pairs.sentences2]))
            keys = [pair_key(a, b) for a, b in zip(pairs.sentences1, pairs.sentences2, strict=True)]
            frames.append(pd.DataFrame({"task": task, "subset": subset, "pair": np.arange(len(pairs)),
                                        "key": np.asarray(keys, dtype=np.int64), "gold": pairs.gold,
                                        "similarity": similarity}))
    return pd.concat(frames, ignore_index=True)


def scores_of_pairs(pairs: pd.DataFrame, tasks: Sequence[str], aggregation: str = "all") -> dict[str, float]:
    """Spearman x 100 per task (STS12-16 aggregated over their subsets by ``aggregation``) and ``avg`` over
    ``tasks``, from :func:`pair_similarities`' rows."""
    scores = {}
    for task in tasks:
        subsets = [group for _, group in pairs[pairs["task"] == task].groupby("subset", sort=False)]
        scores[task] = aggregate_spearman([g["similarity"].to_numpy() for g in subsets],
                                          [g["gold"].to_numpy() for g in subsets], aggregation)
    scores["avg"] = float(np.mean([scores[task] for task in tasks]))
    return scores


def sts_scores(embed: Embed, senteval_dir: str | Path, tasks: Sequence[str] = STS_TASKS,
               aggregation: str = "all") -> dict[str, float]:
    """Spearman x 100 of cosine similarity per task and ``avg`` over ``tasks``; every distinct sentence across all
    tasks is embedded exactly once."""
    sentences = [s for task in tasks for pairs in load_sts_parts(senteval_dir, task)
                 for s in (*pairs.sentences1, *pairs.sentences2)]
    pairs = pair_similarities(embed_unique(embed, sentences), senteval_dir, tasks)
    return scores_of_pairs(pairs, tasks, aggregation)


def encoder_embed(
    encoder: Encoder, pooling: str = "mean", batch_size: int = 128, max_length: int = 128, progress: bool = False
) -> Embed:
    """An ``embed`` callable: sentences -> float32 ``[n, hidden]`` with one pooling of ``encoder``."""

    def embed(sentences: list[str]) -> np.ndarray:
        return encoder.encode(sentences, pooling, batch_size=batch_size, max_length=max_length, progress=progress)

    return embed
