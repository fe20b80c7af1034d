"""A run's training curves: one panel per PST step and entry space (each on its own loss scale: spaces' losses can
differ by orders of magnitude), every candidate's loss against the step (raw, or a running mean of its metrics
table on long runs; the y label says which), beside ln of the classes it ranks (a uniform guess's loss), and the
in-training STS-B dev scores of methods that select while training (SimCSE, SLT-FAI) on a second axis."""

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
CHANCE_REACH = 1.0  # a panel's y-range stretches to its chance line only within this many loss spans of its curves


def loss_axis_label(windows: Sequence[int]) -> str:
    """The y label of a panel whose curves were smoothed over ``windows`` steps: raw, or the running mean's span."""
    low, high = min(windows), max(windows)
    if high == 1:
        return "training loss (raw, every step)"
    span = f"{low}" if low == high else f"{low}–{high}"
    return f"training loss (running mean over {span} steps)"


def step_panels(record: dict) -> dict[str, list[tuple[str, str]]]:
    """A PST step's candidates (train.json, metrics.tsv) by entry space (``<space>`` of a candidate's
    ``results/<run>/step<k>/<space>/seed<s>/train.json``), in config order."""
    panels: dict[str, list[tuple[str, str]]] = {}
    for train_json, metrics_tsv in zip(record["train"], record["metrics"], strict=True):
        panels.setdefault(Path(train_json).parts[-3], []).append((train_json, metrics_tsv))
    return panels


def training_curves_figure(steps: Sequence[dict], title: str):
    """One row per PST step (``steps``: records with ``step``, the candidates' ``train`` summaries and ``metrics``
    tables, in the same order), one panel per entry space of the step, each with its own y-range: its candidates'
    loss curves, ln(classes) dashed, dev scores on a right axis."""
    panels = [step_panels(record) for record in steps]
    columns = max(len(spaces) for spaces in panels)
    fig, axes = plt.subplots(len(steps), columns, figsize=(6 * columns, 3 * len(steps)), squeeze=False)
    for row, record, spaces in zip(axes, steps, panels, strict=True):
        for ax, (space, candidates) in zip(row, spaces.items(), strict=False):
            plot_panel(ax, f"step {record['step']}: {space}", candidates)
        for unused in row[len(spaces):]:
            fig.delaxes(unused)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_training_curves(steps: Sequence[dict], out_png: str | Path, title: str) -> None:
    """:func:`training_curves_figure` written as PNG."""
    fig = training_curves_figure(steps, title)
    save_figure(out_png, fig, 110)
    plt.close(fig)


def plot_panel(ax, title: str, candidates: Sequence[tuple[str, str]]) -> None:
    """One entry space's panel of a PST step: its candidates' loss curves on a y-range of their own."""
    dev_ax, chances, windows, losses = None, set(), [], []
    for train_json, metrics_tsv in candidates:
        table = pd.read_csv(metrics_tsv, sep="\t", comment="#")
        label = " ".join(Path(train_json).parts[-3:-1])  # <space> seed<s>
        windows.append(max(1, len(table) // CURVE_POINTS))  # a window of 1: the losses themselves
        curve = table["loss"].rolling(windows[-1], min_periods=1).mean()
        losses.append(curve)
        (line,) = ax.plot(table["step"], curve, linewidth=1, label=label)
        classes = read_json(train_json).get("classes")
        if classes and classes > 1:
            chances.add(classes)
        scored = table.dropna(subset=["dev_score"])
        if len(scored):
            dev_ax = dev_ax or ax.twinx()
            dev_ax.plot(scored["step"], scored["dev_score"], "o--", color=line.get_color(), markersize=3,
                        label=f"{label}: STS-B dev")
    plot_chance_levels(ax, sorted(chances), pd.concat(losses).dropna())
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("optimisation step")
    ax.set_ylabel(loss_axis_label(windows))
    ax.legend(fontsize=7, loc="upper right")
    if dev_ax is not None:
        dev_ax.set_ylabel("STS-B dev Spearman × 100")
        dev_ax.legend(fontsize=7, loc="lower right")


def plot_chance_levels(ax, classes: Sequence[int], losses: pd.Series) -> None:
    """ln(classes) dashed, and the panel's y-range: its loss curves', stretched to a chance line only where it lies
    within :data:`CHANCE_REACH` spans of them (a line far away is named in the legend as outside the range)."""
    low, high = (float(losses.min()), float(losses.max())) if len(losses) else (math.inf, -math.inf)
    reach = CHANCE_REACH * max(high - low, abs(high) * 1e-3, 1e-6) if len(losses) else math.inf
    for count in classes:
        chance = math.log(count)
        shown = low - reach <= chance <= high + reach
        place = "" if shown else f"; {'below' if chance < low else 'above'} this panel's range"
        ax.axhline(chance, color="grey", linestyle="--", linewidth=1,
                   label=f"ln {count:,} = {chance:.2f} (uniform guess{place})")
        if shown:
            low, high = min(low, chance), max(high, chance)
    if low <= high:
        margin = 0.05 * max(high - low, abs(high) * 1e-3, 1e-6)
        ax.set_ylim(low - margin, high + margin)
