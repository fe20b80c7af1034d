"""The sentences a baseline grid embeds: the evaluation set (every distinct STS sentence, and the STS-B train pairs of
alignment and uniformity) and the fit corpus (a seeded sample of dictionary definitions, or a text file).

Sampled from the dictionary, the fit corpus never contains a reverse-dictionary held-out query of the configured
subsets; a user's text file (``fit_corpus.file``) is taken as it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from defsent_plus.errors import DefSentError
from defsent_plus.io import sentences_digest  # noqa: F401 (the cache's fingerprint, used here by name)
from defsent_plus.sts import StsPairs, load_sts_parts, load_stsb, normalise_space
from defsent_plus.training.corpus import read_corpus_file

DEV = "dev"


@dataclass(frozen=True)
class ScoredPart:
    """One dataset of an STS task as rows of the evaluation set."""

    rows1: np.ndarray
    rows2: np.ndarray
    gold: np.ndarray


@dataclass(frozen=True)
class EvaluationSet:
    """Distinct sentences (first-seen order) and, as row indices into them: every STS task's datasets, the
    alignment pairs (STS-B train pairs of gold >= ``min_score``), the uniformity sample (STS-B train sentences) and
    STS-B dev."""

    sentences: list[str]
    tasks: dict[str, list[ScoredPart]]
    alignment: tuple[np.ndarray, np.ndarray]
    uniformity: np.ndarray
    dev: list[ScoredPart]  # STS-B dev: the only score a combination may be selected on

    def task_rows(self, task: str) -> np.ndarray:
        """The distinct rows of one task (``dev``: STS-B dev), sorted."""
        parts = self.dev if task == DEV else self.tasks[task]
        return np.unique(np.concatenate([np.concatenate([p.rows1, p.rows2]) for p in parts]))


def evaluation_set(senteval_dir: str | Path, tasks: Sequence[str], alignment: dict) -> EvaluationSet:
    """The evaluation set of ``tasks`` (STS12-16 as their subsets) with alignment/uniformity on STS-B train (003
    Section 3.5.5: positives are the pairs of similarity 5.0, the data distribution all the pairs' sentences)."""
    index: dict[str, int] = {}

    def rows(sentences: Sequence[str]) -> np.ndarray:
        return np.asarray([index.setdefault(s, len(index)) for s in sentences], dtype=np.int64)

    def part(pairs: StsPairs) -> ScoredPart:
        return ScoredPart(rows(pairs.sentences1), rows(pairs.sentences2), pairs.gold)

    scored = {task: [part(p) for p in load_sts_parts(senteval_dir, task)] for task in tasks}
    train = load_stsb(senteval_dir, "train")
    positive = np.flatnonzero(train.gold >= alignment["min_score"])
    if len(positive) == 0:
        raise DefSentError("config: baselines.alignment.min_score",
                           f"no STS-B train pair has a gold score >= {alignment['min_score']}")
    first = rows([train.sentences1[i] for i in positive])
    second = rows([train.sentences2[i] for i in positive])
    pool = list(dict.fromkeys([*train.sentences1, *train.sentences2]))
    rng = np.random.default_rng(alignment["seed"])
    sample = rng.choice(len(pool), size=min(alignment["uniformity_sentences"], len(pool)), replace=False)
    uniformity = rows([pool[i] for i in np.sort(sample)])
    dev = [part(p) for p in load_sts_parts(senteval_dir, "STSB-dev")]
    return EvaluationSet(list(index), scored, (first, second), uniformity, dev)




def sample_definitions(dataset: str | Path, queries: Sequence[str | Path], size: int, seed: int) -> list[str]:
    """A seeded sample of ``size`` distinct definitions of a dictionary dataset (whitespace-normalised), never a
    reverse-dictionary held-out query of ``queries`` (subsets' ``queries.parquet``)."""
    frame = pd.read_parquet(dataset, columns=["definitions"])
    excluded = {normalise_space(d) for path in queries for d in pd.read_parquet(path)["definition"]}
    definitions = [normalise_space(d) for row in frame["definitions"] for d in row]
    pool = [d for d in dict.fromkeys(definitions) if d and d not in excluded]
    if not pool:
        raise DefSentError("config: baselines.fit_corpus", f"{dataset} has no definition outside the held-out "
                                                           "queries: the fit corpus would be empty")
    rng = np.random.default_rng(seed)
    chosen = rng.choice(len(pool), size=min(size, len(pool)), replace=False)
    return [pool[i] for i in np.sort(chosen)]


def fit_corpus(options: dict, dataset: str | Path | None, queries: Sequence[str | Path]) -> list[str]:
    """The fit corpus of ``baselines.fit_corpus``: a text file (one sentence a line) or sampled definitions."""
    if options.get("file"):
        sentences = [normalise_space(s) for s in read_corpus_file(options["file"])]
        sentences = [s for s in dict.fromkeys(sentences) if s]
        if options.get("max_sentences") and len(sentences) > options["max_sentences"]:
            rng = np.random.default_rng(options["seed"])
            sentences = [sentences[i] for i in np.sort(rng.choice(len(sentences), options["max_sentences"],
                                                                   replace=False))]
    else:
        sentences = sample_definitions(dataset, queries, options["max_sentences"], options["seed"])
    if not sentences:
        raise DefSentError("config: baselines.fit_corpus", "the fit corpus is empty")
    return sentences


def write_lines(path: str | Path, sentences: Sequence[str]) -> None:
    Path(path).write_text("".join(s + "\n" for s in sentences), encoding="utf-8")


def read_lines(path: str | Path) -> list[str]:
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    if not lines:
        raise DefSentError(path, "the fit corpus is empty (config: baselines.fit_corpus)")
    return lines
