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


def test_the_training_curves_draw_every_candidates_loss_per_step_beside_chance_and_the_dev_scores(tmp_path):
    amp = write_candidate(tmp_path, "amp", 0, [7.0, 6.0, 5.0, 4.0], classes=1000)
    ica = write_candidate(tmp_path, "amp.ica", 1, [7.5, 6.5, 5.5, 4.5], classes=1000, dev={2: 80.0, 4: 81.0})
    steps = [{"step": 1, "train": [amp[0]], "metrics": [amp[1]]},
             {"step": 2, "train": [amp[0], ica[0]], "metrics": [amp[1], ica[1]]}]
    fig = training_curves_figure(steps, "curves")
    first, second, dev = fig.axes  # one panel per step, a dev axis where a candidate scored dev
    labels = ["amp seed0", "amp.ica seed1", "ln 1,000 (uniform guess)"]
    assert [line.get_label() for line in second.get_lines()] == labels
    assert list(second.get_lines()[1].get_ydata()) == [7.5, 6.5, 5.5, 4.5]  # 4 steps: a window of one step
    assert second.get_lines()[2].get_ydata()[0] == pytest.approx(np.log(1000))
    assert list(dev.get_lines()[0].get_xdata()) == [2, 4] and list(dev.get_lines()[0].get_ydata()) == [80.0, 81.0]
    assert [line.get_label() for line in first.get_lines()] == ["amp seed0", "ln 1,000 (uniform guess)"]
