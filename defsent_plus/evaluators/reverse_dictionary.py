"""The reverse dictionary on a run's held-out entries, by the protocol its method declares (rule
``reverse_dictionary``): for every run whose dataset is a subset with a held-out split and whose method has one."""

from __future__ import annotations

from defsent_plus.evaluators.base import Evaluator

EVALUATOR = Evaluator(
    name="reverse_dictionary",
    description="held-out definitions ranking their entries, by each method's protocol, with intervals",
    targets=lambda plan: plan.reverse_dictionary_targets(),
)
