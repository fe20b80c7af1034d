"""Evaluators as plugins: what an evaluator declares about itself, as data (:class:`Evaluator`), and the registry of
them; each module of this package declares one :class:`Evaluator` named ``EVALUATOR``.

An evaluator scores stored sentence embeddings (``score``: one encoder with one pooling, from the vectors the
embedding stage wrote for its ``sentence_set``), and may write a run's table of them (``table``); an evaluator with a
job of its own (MTEB's results folder, the reverse dictionary's run-level ranking) declares only what ``rule all``
builds for it (``targets``). Light on purpose (no torch, no pandas at import): the workflow reads every declaration
while parsing.

The registry below is the only list of benchmarks. The plan, the rules (rules/evaluation.smk) and the report ask a
declaration, never a benchmark's name. An evaluator from another package joins through config
(``evaluator_plugins: [my_package.my_evaluator]``) and, with a table, ``evaluation.tables``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from defsent_plus.names import SENTENCE_SETS
from defsent_plus.plugins import Registry

__all__ = ["EVALUATORS", "Evaluator", "Scored", "Table", "evaluator_of", "load_plugins", "of_job", "scored", "tabled"]

MODEL_SETS = ("evaluated", "endpoints")
"""Which of a run's models a table holds: ``evaluated`` (the starting model and the steps ``evaluation.steps`` /
``evaluation.final`` name) or ``endpoints`` (the starting model and the final dev-selected one)."""


@dataclass(frozen=True)
class Scored:
    """One encoder's scores on a benchmark: ``scores`` (task -> score, with ``avg``), ``fields`` (more of its score
    file: e.g. SentEval's per-task spread) and ``pairs`` (per-pair similarities, a DataFrame, for intervals)."""

    scores: dict[str, float]
    fields: dict[str, Any] = field(default_factory=dict)
    pairs: Any = None


ScoreFunction = Callable[[Mapping[str, np.ndarray], Path, dict, int], Scored]
"""(vectors by sentence, SentEval's data directory, the evaluator's options, threads) -> :class:`Scored`."""


@dataclass(frozen=True)
class Table:
    """A run's table of one evaluator's scores: results/<run>/<evaluator>.{tsv,md} and <evaluator>_by_step.png."""

    title: Callable[[dict], str]  # config -> the title (the run's name and marks are added)
    caption: str  # the HTML report's caption of the TSV
    category: str  # the HTML report's category
    models: str = "evaluated"  # MODEL_SETS
    columns: dict[str, str] = field(default_factory=dict)  # score key -> its column header (else the key)
    axis: str = "average score"  # the by-step plot's y label

    def __post_init__(self):
        if self.models not in MODEL_SETS:
            raise ValueError(f"table models {self.models!r}: expected one of {MODEL_SETS}")


@dataclass(frozen=True)
class Evaluator:
    """A benchmark: what it reads from the embedding stage, how it scores, what it writes, what it asks for."""

    name: str  # the score files' and the table's name (results/eval/<encoder>/<name>_<pooling>.json)
    description: str
    sentence_set: str | None = None  # the embedding stage's set it reads (defsent_plus.names.SENTENCE_SETS)
    score: ScoreFunction | None = None
    options: Callable[[dict], dict] = lambda config: {}  # config -> its score jobs' options (what re-runs them)
    paired: bool = False  # its score jobs also write per-pair similarities (<name>_<pooling>.pairs.parquet)
    table: Table | None = None
    threads: str = "one"  # "one", or "job": the config's threads per job (resources.threads)
    mem_mb: int = 2000
    runtime: Callable[[dict], int] = lambda options: 10  # minutes, from its options
    targets: Callable[[Any], list[str]] | None = None  # plan -> what ``rule all`` builds for it (own-job evaluators)

    def __post_init__(self):
        if not re.fullmatch(r"[a-z][a-z0-9_]*", self.name):
            raise ValueError(f"evaluator name {self.name!r}: expected lowercase letters, digits and _")
        if (self.score is None) != (self.sentence_set is None):
            raise ValueError(f"evaluator {self.name}: a score needs a sentence set to read, and a set a score")
        if self.sentence_set is not None and self.sentence_set not in SENTENCE_SETS:
            raise ValueError(f"evaluator {self.name}: unknown sentence set {self.sentence_set!r}; expected one of "
                             f"{SENTENCE_SETS}")
        if self.table is not None and self.score is None:
            raise ValueError(f"evaluator {self.name}: a table needs a score")
        if self.threads not in ("one", "job"):
            raise ValueError(f"evaluator {self.name}: threads {self.threads!r}: expected 'one' or 'job'")

REGISTRY = [  # one line an evaluator: the module that declares it
    "defsent_plus.evaluation.evaluators.sts",
    "defsent_plus.evaluation.evaluators.stsb_dev",
    "defsent_plus.evaluation.evaluators.senteval",
    "defsent_plus.evaluation.evaluators.mteb",
    "defsent_plus.evaluation.evaluators.reverse_dictionary",
]
EVALUATORS: Registry[Evaluator] = Registry("evaluator", "EVALUATOR", Evaluator, REGISTRY, "evaluator_plugins")


def load_plugins(modules: list[str] | tuple[str, ...] = ()) -> None:
    """Register the built-in evaluators and those of ``modules`` (config ``evaluator_plugins``)."""
    EVALUATORS.load(modules)


def evaluator_of(name: str, where: str = "config: evaluation.tables") -> Evaluator:
    """The registered evaluator called ``name``."""
    return EVALUATORS.of(name, where)


def of_job(wildcards) -> Evaluator:
    """The evaluator of an ``{evaluator}`` job."""
    return evaluator_of(wildcards.evaluator, where="rules/evaluation.smk: {evaluator}")


def scored() -> dict[str, Evaluator]:
    """The evaluators that score stored embeddings, by name."""
    return {name: e for name, e in EVALUATORS.all().items() if e.score is not None}


def tabled() -> dict[str, Evaluator]:
    """The evaluators that write a run's table, by name."""
    return {name: e for name, e in EVALUATORS.all().items() if e.table is not None}
