"""The reverse dictionary on a run's held-out entries, by the protocol its method declares (rule
``reverse_dictionary``): for every run whose dataset is a subset with a held-out split and whose method has one; and
every such run side by side (rule ``compare_reverse_dictionary``), each method's rows read by its own protocol
(defsent_plus/evaluation/reverse_dictionary.py)."""

from __future__ import annotations

from defsent_plus.evaluation.evaluators import Evaluator

EVALUATOR = Evaluator(
    name="reverse_dictionary",
    description="held-out definitions ranking their entries, by each method's protocol, with intervals",
    targets=lambda plan: [record["json"] for record in plan.reverse_dictionary_comparison()],
)
