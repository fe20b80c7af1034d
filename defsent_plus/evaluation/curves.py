"""A run's training curves: per PST step, every candidate's loss (a running mean of its metrics table) against the
step, beside ln of the classes it ranks (a uniform guess's loss), and the in-training STS-B dev scores of methods
that select while training (SimCSE, SLT-FAI) on a second axis."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from defsent_plus.io import read_json, save_figure  # noqa: E402

CURVE_POINTS = 200  # a running mean over about len / 200 steps: an epoch of 12,000 steps reads as 200 points


def running_mean(values: pd.Series) -> pd.Series:
    """``values`` smoothed over a window of about 1/``CURVE_POINTS`` of their length (at least one step)."""
    return values.rolling(max(1, len(values) // CURVE_POINTS), min_periods=1).mean()


def candidate_label(train_json: str | Path) -> str:
    """``<space> seed<s>`` of a candidate's ``results/<run>/step<k>/<space>/seed<s>/train.json``."""
    parts = Path(train_json).parts
    return f"{parts[-3]} {parts[-2]}"


def training_curves_figure(steps: Sequence[dict], title: str):
    """One panel per PST step (``steps``: records with ``step``, the candidates' ``train`` summaries and ``metrics``
    tables, in the same order): each candidate's loss curve, ln(classes) dashed, dev scores on a right axis."""
    fig, axes = plt.subplots(len(steps), 1, figsize=(7, 3 * len(steps)), squeeze=False)
    for ax, record in zip(axes[:, 0], steps, strict=True):
        plot_step(ax, record)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_training_curves(steps: Sequence[dict], out_png: str | Path, title: str) -> None:
    """:func:`training_curves_figure` written as PNG."""
    fig = training_curves_figure(steps, title)
    save_figure(out_png, fig, 110)
    plt.close(fig)


def plot_step(ax, record: dict) -> None:
    """A PST step's panel."""
    dev_ax, chances = None, set()
    for train_json, metrics_tsv in zip(record["train"], record["metrics"], strict=True):
        table = pd.read_csv(metrics_tsv, sep="\t", comment="#")
        label = candidate_label(train_json)
        (line,) = ax.plot(table["step"], running_mean(table["loss"]), linewidth=1, label=label)
        classes = read_json(train_json).get("classes")
        if classes and classes > 1:
            chances.add(classes)
        scored = table.dropna(subset=["dev_score"])
        if len(scored):
            dev_ax = dev_ax or ax.twinx()
            dev_ax.plot(scored["step"], scored["dev_score"], "o--", color=line.get_color(), markersize=3,
                        label=f"{label}: STS-B dev")
    for classes in sorted(chances):
        ax.axhline(math.log(classes), color="grey", linestyle="--", linewidth=1,
                   label=f"ln {classes:,} (uniform guess)")
    ax.set_title(f"step {record['step']}", fontsize=10)
    ax.set_xlabel("optimisation step")
    ax.set_ylabel("training loss (running mean)")
    ax.legend(fontsize=7, loc="upper right")
    if dev_ax is not None:
        dev_ax.set_ylabel("STS-B dev Spearman × 100")
        dev_ax.legend(fontsize=7, loc="lower right")
