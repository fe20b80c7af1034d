"""The grid's outputs: ``scores.tsv`` (every row), ``summary.md`` (best rows, and 003-style post-processing x
aggregation tables) and ``layers.png`` (STS average against the layer for CLS, mean and the prompt's mask)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from defsent_plus.baselines.spec import ENCODER, STATIC_LAYER, layer_set_name  # noqa: E402
from defsent_plus.evaluation.report import STS_COLUMNS, honest_ylim, markdown, save_plot  # noqa: E402
from defsent_plus.io import atomic_path  # noqa: E402

SETTING = ["source", "template", "layers", "aggregation", "postprocess", "fit"]
SHAPE_COLUMNS = {"alignment": "align", "uniformity": "uniform", "isoscore": "IsoScore", "mean_cosine": "cos"}
BEST_ROWS = 15
PLOTTED = ("cls", "mean", "mask")  # 003 Figure 4's lines: CLS, mean (avg.), a prompt's [MASK]


def write_scores(table: pd.DataFrame, out_tsv: str | Path) -> None:
    with atomic_path(out_tsv) as tmp:
        table.to_csv(tmp, sep="\t", index=False, float_format="%.4f")


def summary_markdown(table: pd.DataFrame, title: str, notes: list[str]) -> str:
    """The STS-B dev-selected combination per source, the best rows by test average (inductive and transductive
    apart), per (source, template) the STS average of aggregation x post-processing at the first configured layer
    set, fitted on the corpus, and the best rows per family of options (:func:`family_tables`)."""
    shown = {**STS_COLUMNS, "dev": "STS-B dev", **SHAPE_COLUMNS}
    columns = [*SETTING, *STS_COLUMNS, "dev", *SHAPE_COLUMNS]
    text = f"# {title}\n\n" + "".join(f"- {note}\n" for note in notes) + "\n"
    inductive, transductive = table[~table["transductive"]], table[table["transductive"]]
    selected = inductive.loc[inductive.groupby("source", sort=False)["dev"].idxmax()]
    text += ("## Selected on STS-B dev (inductive), overall and per source: the fair comparison with dev-selected "
             "trained models\n\n") + markdown(selected.sort_values("dev", ascending=False)[columns], shown)
    text += (f"\n## Best {BEST_ROWS} combinations by the STS test average (inductive: nothing fitted on an evaluated "
             "sentence; read, do not select, on these)\n\n")
    text += markdown(inductive.nlargest(BEST_ROWS, "avg")[columns], shown)
    if not transductive.empty:
        text += "\n## Best transductive combinations (idf or post-processing fitted on the evaluated task)\n\n"
        text += markdown(transductive.nlargest(5, "avg")[columns], shown)
    main = table[~table["sweep"]]
    for (source, template), rows in main.groupby(["source", "template"], sort=False):
        layers = rows["layers"].iloc[0]
        rows = rows[(rows["layers"] == layers) & rows["fit"].isin(["-", "corpus"])]
        pivot = rows.pivot_table(index="aggregation", columns="postprocess", values="avg", sort=False)
        text += (f"\n## {source}, template {template}, layers {layers}: STS avg., aggregation x post-processing "
                 "(fit: corpus)\n\n") + pivot.reset_index().to_markdown(index=False, floatfmt=".2f") + "\n"
    return text + family_tables(table)


FAMILIES = {"template": "template", "layers": "layers", "aggregation": "aggregation",
            "post-processing": "post-processing (fit)", "source": "source"}


def family_tables(table: pd.DataFrame) -> str:
    """003-style tables, one per family of options (template, layer set, aggregation, post-processing with its fit,
    source): per member the combination selected on STS-B dev among the inductive ones, and the member's best STS
    test average, a reading and not a selection (transductive rows, which have no selection, marked)."""
    table = table.assign(**{"post-processing": family_post_processing(table)})
    text = ""
    for family, title in FAMILIES.items():
        rows = pd.DataFrame([{title: member, **family_row(group)} for member, group in table.groupby(family,
                                                                                                  sort=False)])
        rows = rows.astype(object).where(rows.notna(), None)  # no selection: an empty cell, not "nan"
        text += (f"\n## Best per {title}: selected on STS-B dev, and the best test average (not a selection)\n\n"
                 + rows.to_markdown(index=False, floatfmt=".2f", missingval="") + "\n")
    return text


def family_post_processing(table: pd.DataFrame) -> pd.Series:
    """``zscore (corpus)``, ``zscore (eval)``, ``none``."""
    return table["postprocess"].where(table["fit"] == "-", table["postprocess"] + " (" + table["fit"] + ")")


def family_row(group: pd.DataFrame) -> dict:
    """The dev-selected inductive row and the best test average of one member's rows."""
    inductive = group[~group["transductive"]]
    best = group.loc[group["avg"].idxmax()]
    row = {"rows": len(group), "selected on STS-B dev": "- (all transductive)", "dev": None,
           "STS avg": None}
    if not inductive.empty:
        selected = inductive.loc[inductive["dev"].idxmax()]
        row.update({"selected on STS-B dev": combination_name(selected), "dev": selected["dev"],
                    "STS avg": selected["avg"]})
    row.update({"best STS avg (not a selection)": combination_name(best)
                + (" [transductive]" if best["transductive"] else ""), "its STS avg": best["avg"]})
    return row


def combination_name(row: pd.Series) -> str:
    fit = "" if row["fit"] == "-" else f" ({row['fit']})"
    return f"{row['source']}, {row['template']}, {row['layers']}, {row['aggregation']}, {row['postprocess']}{fit}"


def layer_order(n_layers: int) -> list[str]:
    return [layer_set_name((k,)) for k in range(STATIC_LAYER, n_layers + 1)]


def plot_layers(table: pd.DataFrame, n_layers: int, out_png: str | Path, title: str) -> None:
    """STS average per single layer (no post-processing, the encoder's own vectors) for CLS, mean and mask, one line
    per (template, aggregation)."""
    order = layer_order(n_layers)
    rows = table[(table["source"] == ENCODER) & (table["postprocess"] == "none") & table["layers"].isin(order)
                 & table["aggregation"].isin(PLOTTED)]
    fig, ax = plt.subplots(figsize=(7, 4))
    for (template, aggregation), line in rows.groupby(["template", "aggregation"], sort=False):
        line = line.set_index("layers").reindex(order)
        ax.plot(range(len(order)), line["avg"].to_numpy(), marker="o", label=f"{template}, {aggregation}")
    if not rows.empty:
        honest_ylim(ax, rows["avg"])
    ax.set_xticks(range(len(order)), ["static" if name == "static" else name[1:] for name in order])
    ax.set_xlabel("layer (static = input embedding rows, 0 = embedding output)")
    ax.set_ylabel("STS average, Spearman × 100")
    save_plot(fig, ax, title, out_png)
