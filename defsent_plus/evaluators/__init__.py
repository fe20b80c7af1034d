"""Evaluators as plugins: each module of this package declares one :class:`Evaluator` named ``EVALUATOR``.

The registry below is the only list of benchmarks. The plan, the rules (rules/evaluation.smk) and the report ask a
declaration, never a benchmark's name. An evaluator from another package joins through config
(``evaluator_plugins: [my_package.my_evaluator]``) and, with a table, ``evaluation.tables``.
"""

from __future__ import annotations

from defsent_plus.evaluators.base import Evaluator, Scored, Table
from defsent_plus.plugins import Registry

__all__ = ["EVALUATORS", "Evaluator", "Scored", "Table", "evaluator_of", "load_plugins", "of_job", "scored", "tabled"]

REGISTRY = [  # one line an evaluator: the module that declares it
    "defsent_plus.evaluators.sts",
    "defsent_plus.evaluators.stsb_dev",
    "defsent_plus.evaluators.senteval",
    "defsent_plus.evaluators.mteb",
    "defsent_plus.evaluators.reverse_dictionary",
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
