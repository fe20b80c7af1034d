"""The STS-by-step plot reads without the code: its legend names each pooling in words, and a line names the PST
steps its table does not evaluate and the config key that adds them."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import pytest
import yaml
from conftest import REPO
from workflow_utils import validated

from defsent_plus.evaluation.report import average_by_step_figure
from defsent_plus.pipeline.plan import Plan, unshown_steps


def default_plan(**evaluation) -> Plan:
    """config.yaml's plan (three PST steps in run ``default``), with ``evaluation`` options changed."""
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    config["evaluation"].update(evaluation)
    return Plan(validated(config), lambda run, step: pytest.fail("no selection expected"))


def table_rows(plan: Plan, evaluator: str) -> list[dict]:
    """The rows rule score_table gives run ``default``'s table of ``evaluator``."""
    return plan.score_rows(plan.table_models("default", evaluator), evaluator)


def test_the_plan_names_the_steps_a_table_does_not_evaluate_and_the_key_that_adds_them():
    assert unshown_steps(table_rows(default_plan(), "sts"), "sts") == (
        "steps 1, 2 not evaluated: evaluation.steps is final (evaluation.steps: all adds each step's best)")
    assert unshown_steps(table_rows(default_plan(steps="all"), "sts"), "sts") == ""
    assert unshown_steps(table_rows(default_plan(steps="all"), "senteval"), "senteval") == (
        "steps 1, 2 not evaluated: this table scores the starting and the final dev-selected model only")


def test_the_step_plot_names_its_missing_steps_and_its_poolings_in_words():
    unshown = unshown_steps(table_rows(default_plan(), "sts"), "sts")
    data = pd.DataFrame({"step": [0, 3, 0, 3], "avg": [70.0, 72.0, 68.0, 69.0],
                         "pooling": ["mean", "mean", "cls", "cls"], "group": ""})
    fig = average_by_step_figure(data, "STS, run default", unshown=unshown)
    (ax,) = fig.axes
    texts = " ".join(text.get_text() for text in fig.findobj(plt.Text))
    assert "steps 1, 2 not evaluated" in texts and "evaluation.steps: all" in texts
    legend = [text.get_text() for text in ax.get_legend().get_texts()]
    assert legend == ["mean pooling", "CLS-token pooling"]
    assert not any("each model" in label for label in legend)
    plt.close(fig)
