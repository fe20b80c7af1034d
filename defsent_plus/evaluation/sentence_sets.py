"""The named sentence sets the evaluators read: each is encoded once per (encoder, pooling) by the embedding stage
(rule ``embed``) and every evaluator of that set reads the stored vectors.

A set is every distinct sentence of its benchmark in first-seen order, normalised as its loader reads it, so the
evaluator that loads the benchmark finds each of its sentences in the set. Light on purpose (no torch).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from defsent_plus.errors import DefSentError
from defsent_plus.names import SENTENCE_SETS as SENTENCE_SET_NAMES
from defsent_plus.names import require_same_names
from defsent_plus.sts import STS_TASKS, StsPairs, load_sts_parts


def distinct(sentences: Iterable[str]) -> list[str]:
    """Every distinct sentence once, in first-seen order."""
    return list(dict.fromkeys(sentences))


def pair_sentences(parts: Iterable[StsPairs]) -> Iterable[str]:
    for pairs in parts:
        yield from pairs.sentences1
        yield from pairs.sentences2


def sts_sentences(senteval_dir: str | Path) -> list[str]:
    """The seven STS tasks' sentences (STS12-16 with every subset, STS-B test, SICK-R test)."""
    return distinct(s for task in STS_TASKS for s in pair_sentences(load_sts_parts(senteval_dir, task)))


def stsb_dev_sentences(senteval_dir: str | Path) -> list[str]:
    """STS-B dev's sentences: the selection score's."""
    return distinct(pair_sentences(load_sts_parts(senteval_dir, "STSB-dev")))


def transfer_sentences(senteval_dir: str | Path) -> list[str]:
    """Every split of the seven SentEval transfer tasks."""
    from defsent_plus.evaluation.senteval import TRANSFER_TASKS, load_transfer_task, sentences_of  # scikit-learn

    return distinct(s for task in TRANSFER_TASKS for data in load_transfer_task(senteval_dir, task).values()
                    for s in sentences_of(data))


SENTENCE_SETS: dict[str, Callable[[str | Path], list[str]]] = {
    "sts": sts_sentences,
    "stsb-dev": stsb_dev_sentences,
    "senteval": transfer_sentences,
}
"""Sentence-set name -> its sentences from SentEval's data directory."""
require_same_names(SENTENCE_SETS, SENTENCE_SET_NAMES, "sentence_sets.SENTENCE_SETS")

BENCHMARK_SETS = {"sts": "sts", "dev": "stsb-dev", "senteval": "senteval"}
"""The sentence set each benchmark reads."""


def sentences_of_set(name: str, senteval_dir: str | Path) -> list[str]:
    if name not in SENTENCE_SETS:
        raise DefSentError("sentence set", f"unknown sentence set {name!r}; expected one of {list(SENTENCE_SETS)}")
    return SENTENCE_SETS[name](senteval_dir)
