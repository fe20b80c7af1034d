"""MTEB's STS tasks on the stored STS vectors of every model of the STS tables, in MTEB's results layout and
cross-checked against this project's scores (rule ``mteb``, ``evaluation.mteb``;
defsent_plus/evaluation/mteb_eval.py)."""

from __future__ import annotations

from defsent_plus.evaluation.evaluators import Evaluator

EVALUATOR = Evaluator(
    name="mteb",
    description="MTEB's STS12-16, STSBenchmark and SICK-R task classes on the stored vectors, cross-checked",
    targets=lambda plan: plan.mteb_checks(),
)
