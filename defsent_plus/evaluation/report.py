"""Paper-style tables and plots of a run: STS / SentEval scores per (model, pooling), PST step summaries."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from defsent_plus.evaluation.significance import (  # noqa: E402
    bootstrap_of,
    interval_columns,
    interval_rows,
    paired_rows,
    reading_note,
)
from defsent_plus.io import read_json, save_figure, write_page, write_tsv  # noqa: E402
from defsent_plus.names import STS_COLUMNS  # noqa: E402
from defsent_plus.provenance import provenance_footer  # noqa: E402


def scores_table(score_jsons: Sequence[str | Path], best_json: str | Path) -> pd.DataFrame:
    """One row per (model, pooling) with every task's score and the average; ``dev_selected`` marks the
    final step's model chosen on STS-B dev."""
    chosen = Path(read_json(best_json)["best"]["model"])
    rows = []
    for path in score_jsons:
        result = read_json(path)
        setting = {"sts_aggregation": result["sts_aggregation"]} if "sts_aggregation" in result else {}
        rows.append({"model": result["model"], "pooling": result["pooling"], **result["scores"], **setting,
                     "dev_selected": Path(result["model_dir"]) == chosen})
    return pd.DataFrame(rows)


def score_provenance(score_jsons: Sequence[str | Path]) -> list[dict]:
    """What each score was computed with (its embeddings' record; empty for older score files)."""
    return [read_json(path).get("embeddings", {}).get("provenance", {}) for path in score_jsons]


def seed_summary(table: pd.DataFrame, group: str = "group") -> pd.DataFrame:
    """Mean ± std over seeds for rows sharing ``group`` (Table 2 of 000 reports 10-seed means)."""
    numeric = [c for c in table.columns if c not in ("model", "pooling", "dev_selected", group)]
    grouped = table.groupby([group, "pooling"], sort=False)[numeric]
    mean, std, n = grouped.mean(), grouped.std(ddof=0), grouped.size()
    out = mean.map(lambda v: f"{v:.2f}") + " ± " + std.map(lambda v: f"{v:.2f}")
    out.insert(0, "seeds", n)
    return out.reset_index()


def markdown(table: pd.DataFrame, columns: dict[str, str] | None = None) -> str:
    """A markdown table with the paper's column names and two decimals."""
    shown = table.rename(columns=columns or {})
    return shown.to_markdown(index=False, floatfmt=".2f") + "\n"


SETTING_COLUMNS = ("sts_aggregation",)  # how a score was computed: in the TSV's rows, in the markdown's header


def aggregation_note(table: pd.DataFrame) -> str:
    """The markdown header line naming how STS12-16 were aggregated over their subsets (SentEval's three ways)."""
    if "sts_aggregation" not in table:
        return ""
    settings = ", ".join(f"'{value}'" for value in dict.fromkeys(table["sts_aggregation"]))
    return (f"STS12-16: Spearman over each year's subsets aggregated as {settings} (SentEval's all / mean / wmean; "
            "'all' = one correlation over the concatenated subsets, as SimCSE and DefSent+ report)\n\n")


def write_score_tables(
    rows: Sequence[dict], best_json: str | Path, out_tsv: str | Path, out_md: str | Path, title: str,
    out_png: str | Path | None = None, bootstrap: dict | None = None, columns: dict[str, str] | None = None,
    axis: str = "average Spearman × 100", unshown: str = "",
) -> pd.DataFrame:
    """TSV of all rows, plus a markdown file: the per-model table and the mean ± std over final-step seeds;
    with ``out_png``, the average per PST step as a plot. ``rows``: one record per (model, pooling) with its
    score file (``scores``), ``label``, seed ``group`` ("" for none) and PST ``step`` (0 = the starting model); for
    STS also its per-pair similarities (``pairs``), which with ``bootstrap`` (config ``evaluation.bootstrap``) give
    every score's interval and every later model's paired test against the starting model. ``columns``: the score
    keys' headers (STS's by default); ``axis``: the plot's y label; ``unshown``: the plot's line naming the PST
    steps the table does not evaluate (:func:`~defsent_plus.pipeline.plan.unshown_steps`)."""
    columns = STS_COLUMNS if columns is None else columns
    table = scores_table([row["scores"] for row in rows], best_json)
    marks = ["*" if selected else "" for selected in table["dev_selected"]]
    table["model"] = [f"{row['label']} {mark}".strip() for row, mark in zip(rows, marks, strict=True)]
    placed = table.assign(group=[row["group"] for row in rows], step=[row["step"] for row in rows])
    uncertainty = bootstrap is not None and all("pairs" in row for row in rows)
    if uncertainty:
        resampled = bootstrap_of([row["pairs"] for row in rows], table["sts_aggregation"].iloc[0], bootstrap)
        placed = pd.concat([placed, interval_columns(resampled, len(rows))], axis=1)
    write_tsv(out_tsv, placed, float_format="%.4f")
    text = f"# {title}\n\n{aggregation_note(table)}* = the final step's model selected on STS-B dev\n\n" + markdown(
        table.drop(columns=["dev_selected", *SETTING_COLUMNS], errors="ignore"), columns)
    grouped = placed.drop(columns=list(SETTING_COLUMNS), errors="ignore")
    final = grouped[grouped["group"] != ""].drop(columns="step")
    if not final.empty:
        text += "\n## Final step, mean ± std over seeds\n\n" + markdown(seed_summary(final), columns)
    if uncertainty:
        text += uncertainty_sections(table, placed["step"].tolist(), resampled, bootstrap)
    text += spread_section(table["model"].tolist(), [row["scores"] for row in rows])
    text += provenance_footer(score_provenance([row["scores"] for row in rows]))
    write_page(out_md, text)
    if out_png is not None:
        write_png(average_by_step_figure(grouped, title, axis, unshown), out_png)
    return table


def spread_text(spread: dict) -> str:
    """A SentEval task's spread as table text: std over folds, or the test set's interval."""
    if spread["kind"] == "folds":
        return f"± {spread['std']:.2f} ({len(spread['folds'])} folds)"
    return f"{spread['low']:.2f}–{spread['high']:.2f}"


def spread_section(labels: Sequence[str], score_jsons: Sequence[str | Path]) -> str:
    """Markdown: each model's spread per SentEval task (empty for scores without one, e.g. STS)."""
    spreads = [read_json(path).get("spread") for path in score_jsons]
    if not all(spreads):
        return ""
    rows = [{"model": label, **{task: spread_text(s) for task, s in spread.items()}}
            for label, spread in zip(labels, spreads, strict=True)]
    return ("\n## Spread\n\nk-fold tasks (MR, CR, SUBJ, MPQA): the std of the outer folds' accuracies (the score is "
            "their mean); tasks with a test split (SST-2, TREC, MRPC): the 95% percentile-bootstrap interval over the "
            "test examples (evaluation.bootstrap). Neither includes the encoder's seed variance.\n\n"
            + pd.DataFrame(rows).to_markdown(index=False) + "\n")


def uncertainty_sections(table: pd.DataFrame, steps: list[int], resampled, options: dict) -> str:
    """Markdown: every model's intervals, then each later model against the starting model of its pooling."""
    labels = table[["model", "pooling"]].to_dict("records")
    start = {label["pooling"]: m for m, (label, step) in enumerate(zip(labels, steps, strict=True)) if step == 0}
    comparisons = [(f"{label['model']} − {labels[start[label['pooling']]]['model']} ({label['pooling']})", m,
                    start[label["pooling"]])
                   for m, (label, step) in enumerate(zip(labels, steps, strict=True))
                   if step > 0 and label["pooling"] in start]
    text = (f"\n## {options['level']:.0%} intervals\n\n" + reading_note(options)
            + markdown(interval_rows(labels, resampled), STS_COLUMNS))
    if comparisons:
        text += ("\n## Against the starting model (paired bootstrap)\n\n"
                 + markdown(paired_rows(comparisons, resampled), STS_COLUMNS))
    return text


POOLING_NAMES = {"cls": "CLS-token"}  # a pooling's name in words where its key is an abbreviation


def average_by_step_figure(data: pd.DataFrame, title: str, axis: str = "average Spearman × 100",
                           unshown: str = ""):
    """Average score per PST step (0 = the run's starting model): every evaluated model as a point, a line in
    the same colour through the steps' means, and for each group of seeds (a final-step space) its mean ± std
    (ddof 0, as in the markdown table); ``unshown``: a line under the plot naming the steps not evaluated."""
    fig, ax = plt.subplots(figsize=(6, 4.4 if unshown else 4))
    for pooling, rows in data.groupby("pooling", sort=False):
        name = f"{POOLING_NAMES.get(pooling, pooling)} pooling"
        points = ax.scatter(rows["step"], rows["avg"], alpha=0.6, label=name)
        if "avg_low" in rows:  # each model's test-set interval (evaluation.bootstrap)
            ax.errorbar(rows["step"] - 0.04, rows["avg"], fmt="none", ecolor="grey", capsize=3, alpha=0.6,
                        yerr=[rows["avg"] - rows["avg_low"], rows["avg_high"] - rows["avg"]])
        per_step = rows.groupby("step")["avg"].mean()
        several = bool((rows.groupby("step").size() > 1).any())  # a step's mean differs from its one point
        ax.plot(per_step.index, per_step.to_numpy(), alpha=0.4, color=points.get_facecolor()[0],
                label=f"{name}, mean of a step's models" if several else "_nolegend_")
        for i, (group, seeds) in enumerate(rows[rows["group"] != ""].groupby("group", sort=False), start=1):
            x = seeds["step"].iloc[:1] + 0.08 * i  # side by side, right of the step's points
            ax.errorbar(x, [seeds["avg"].mean()], yerr=[seeds["avg"].std(ddof=0)], fmt="o",
                        capsize=4, label=f"{name}, {group}: mean ± std over {len(seeds)} seed(s)")
    honest_ylim(ax, data["avg"])
    xlabel = "\n".join(["PST step (0 = starting model)", *textwrap.wrap(unshown, 80)])
    ax.set_xticks(sorted(data["step"].unique()))
    label_plot(fig, ax, xlabel, axis, title)
    return fig


MIN_SCORE_RANGE = 4.0  # Spearman × 100 points: a plot never magnifies differences smaller than this to full height


def honest_ylim(ax, values: pd.Series, min_range: float = MIN_SCORE_RANGE) -> None:
    """A y-range of at least ``min_range`` points centred on the data (autoscaling would stretch a 0.05-point
    difference over the whole plot); with errorbars already drawn, their extent is kept too."""
    low, high = ax.get_ylim()
    low, high = min(low, float(values.min())), max(high, float(values.max()))
    if high - low < min_range:
        middle = (high + low) / 2
        low, high = middle - min_range / 2, middle + min_range / 2
    ax.set_ylim(low, high)


def write_png(fig, out_png: str | Path) -> None:
    """The figure written as PNG atomically, then closed."""
    save_figure(out_png, fig, 120)
    plt.close(fig)


def label_plot(fig, ax, xlabel: str, ylabel: str, title: str) -> None:
    """A plot's axis labels, title and legend, laid out."""
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
    ax.legend(fontsize=7)
    fig.tight_layout()


def steps_table(steps: Sequence[dict]) -> pd.DataFrame:
    """Per PST step and candidate: space, seed, dev score, chosen or not, first and final loss, classes, the
    chance-level loss ln(classes) and whether the final loss left it (train.json's ``fit``).
    ``steps``: one record per step with its selection file (``best``) and its candidates' training summaries
    (``train``)."""
    rows = []
    for record in steps:
        best = read_json(record["best"])
        for candidate, train_json in zip(best["candidates"], record["train"], strict=True):
            train = read_json(train_json)
            rows.append({
                "step": record["step"], "space": candidate["space"], "seed": candidate["seed"],
                "dev_score": candidate["dev_score"], "chosen": candidate["model"] == best["best"]["model"],
                "loss_first": train["loss_first"], "loss_last": train["loss_last"], "classes": train.get("classes"),
                **{key: train.get("fit", {}).get(key) for key in ("chance_loss", "fitted")},
            })
    return pd.DataFrame(rows)


def plot_steps(steps: pd.DataFrame, base_dev: float, out_png: str | Path, title: str) -> None:
    """STS-B dev score per PST step: every (space, seed) as a point, the chosen one joined by a line."""
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.axhline(base_dev, color="grey", linestyle="--", label="starting model (untrained by this run)")
    for space, rows in steps.groupby("space", sort=False):
        ax.scatter(rows["step"], rows["dev_score"], label=f"{space} (each seed)", alpha=0.7)
    chosen = steps[steps["chosen"]].sort_values("step")
    ax.plot(chosen["step"], chosen["dev_score"], "k-o", label="chosen (dev-selected)")
    honest_ylim(ax, pd.concat([steps["dev_score"], pd.Series([base_dev])]))
    ax.set_xticks(sorted(steps["step"].unique()))
    label_plot(fig, ax, "PST step", "STS-B dev Spearman × 100", title)
    write_png(fig, out_png)


def write_steps_report(
    steps: Sequence[dict], start_dev_json: str | Path, out_tsv: str | Path, out_png: str | Path, title: str,
) -> pd.DataFrame:
    """The steps table (TSV, with the starting model's dev score) and its plot."""
    steps = steps_table(steps)
    base_dev = read_json(start_dev_json)["dev_score"]
    write_tsv(out_tsv, steps.assign(start_dev_score=base_dev), float_format="%.4f")
    plot_steps(steps, base_dev, out_png, title)
    return steps

