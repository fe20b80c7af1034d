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
    apart), and per (source, template) the STS average of aggregation x post-processing at the first configured layer
    set, fitted on the corpus."""
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
    return text


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
