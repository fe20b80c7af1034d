"""A run's training curves (defsent_plus/evaluation/curves.py), drawn from its candidates' metrics tables."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from defsent_plus.evaluation.curves import training_curves_figure


def write_candidate(root: Path, space: str, seed: int, losses: list[float], classes: int,
                    dev: dict[int, float] | None = None) -> tuple[str, str]:
    folder = root / "results" / "r" / "step1" / space / f"seed{seed}"
    folder.mkdir(parents=True)
    (folder / "train.json").write_text(json.dumps({"classes": classes}))
    table = pd.DataFrame({"step": range(1, len(losses) + 1), "epoch": 1, "lr": 1e-3, "loss": losses,
                          "grad_norm": 1.0, "examples_per_second": 10.0, "dev_score": float("nan")})
    for step, score in (dev or {}).items():
        table.loc[step - 1, "dev_score"] = score
    table.to_csv(folder / "metrics.tsv", sep="\t", index=False)
    return str(folder / "train.json"), str(folder / "metrics.tsv")


def loss_panels(fig) -> dict[str, object]:
    """The figure's loss panels by title (the dev scores' twin axes have none)."""
    return {ax.get_title(): ax for ax in fig.axes if ax.get_title()}


def test_the_training_curves_draw_every_candidates_loss_per_step_beside_chance_and_the_dev_scores(tmp_path):
    amp = write_candidate(tmp_path, "amp", 0, [7.0, 6.0, 5.0, 4.0], classes=1000)
    ica = write_candidate(tmp_path, "amp.ica", 1, [7.5, 6.5, 5.5, 4.5], classes=1000, dev={2: 80.0, 4: 81.0})
    steps = [{"step": 1, "train": [amp[0]], "metrics": [amp[1]]},
             {"step": 2, "train": [amp[0], ica[0]], "metrics": [amp[1], ica[1]]}]
    fig = training_curves_figure(steps, "curves")
    panels = loss_panels(fig)  # one panel per step and space, a dev axis where a candidate scored dev
    assert list(panels) == ["step 1: amp", "step 2: amp", "step 2: amp.ica"] and len(fig.axes) == 4
    chance = "ln 1,000 = 6.91 (uniform guess)"
    second = panels["step 2: amp.ica"]
    assert [line.get_label() for line in second.get_lines()] == ["amp.ica seed1", chance]
    assert list(second.get_lines()[0].get_ydata()) == [7.5, 6.5, 5.5, 4.5]  # 4 steps: a window of one step
    assert second.get_lines()[1].get_ydata()[0] == pytest.approx(np.log(1000))
    dev = next(ax for ax in fig.axes if ax not in panels.values())
    assert list(dev.get_lines()[0].get_xdata()) == [2, 4] and list(dev.get_lines()[0].get_ydata()) == [80.0, 81.0]
    assert [line.get_label() for line in panels["step 1: amp"].get_lines()] == ["amp seed0", chance]


def test_each_entry_space_has_a_panel_and_a_scale_of_its_own_and_the_axis_says_what_is_drawn(tmp_path):
    """A space whose loss is hundreds (ICA) does not flatten another's (a few nats) into a line; the y label says
    raw where nothing is smoothed, and the running mean's window where it is."""
    amp = write_candidate(tmp_path, "amp", 0, [7.0, 6.0, 5.0, 4.0], classes=1000)
    ica = write_candidate(tmp_path, "amp.ica", 0, [500.0, 420.0, 350.0, 300.0], classes=1000)
    long = write_candidate(tmp_path, "amp.whiten", 0, list(np.linspace(7.0, 3.0, 1000)), classes=1000)
    steps = [{"step": 1, "train": [amp[0], ica[0]], "metrics": [amp[1], ica[1]]},
             {"step": 2, "train": [long[0]], "metrics": [long[1]]}]
    fig = training_curves_figure(steps, "curves")
    panels = loss_panels(fig)
    assert list(panels) == ["step 1: amp", "step 1: amp.ica", "step 2: amp.whiten"]
    amp_low, amp_high = panels["step 1: amp"].get_ylim()
    assert 3.5 < amp_low < 4.0 and 7.0 < amp_high < 7.5  # its own range: the loss and ln(1,000) = 6.91
    ica_low, ica_high = panels["step 1: amp.ica"].get_ylim()
    assert 280 < ica_low < 300 and 500 < ica_high < 520  # ln(1,000) is far below: not stretched to it
    assert "below this panel's range" in panels["step 1: amp.ica"].get_lines()[1].get_label()
    assert panels["step 1: amp"].get_ylabel() == "training loss (raw, every step)"
    assert panels["step 2: amp.whiten"].get_ylabel() == "training loss (running mean over 5 steps)"
