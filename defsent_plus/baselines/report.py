"""The grid job and its outputs: ``scores.tsv`` (every row), ``summary.md`` (best rows, and 003-style
post-processing x aggregation tables) and ``layers.png`` (STS average against the layer for CLS, mean and the prompt's
mask).

The uncertainty of the rows the summary shows: their per-pair cosines (what the evaluator's per-pair files hold), one
bootstrap over all of them (:class:`~defsent_plus.evaluation.intervals.Bootstrap`: the same resampled pairs for every
row), each row's intervals and its paired test against the plain mean (the encoder's own mean pooling of its last
layer, no template, no post-processing: what a trained model's "base" row is)."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from defsent_plus.baselines.grid import CachedEmbeddings, score_grid  # noqa: E402
from defsent_plus.baselines.sentences import EvaluationSet, evaluation_set, read_lines  # noqa: E402
from defsent_plus.baselines.spec import (  # noqa: E402
    ENCODER,
    INDEX,
    NO_FIT,
    NO_TEMPLATE,
    STATIC_LAYER,
    combinations,
    layer_set_name,
)
from defsent_plus.evaluation.intervals import Bootstrap, TaskPairs  # noqa: E402
from defsent_plus.evaluation.report import honest_ylim, label_plot, markdown, write_png  # noqa: E402
from defsent_plus.evaluation.significance import (  # noqa: E402
    difference_text,
    interval_rows,
    interval_text,
    paired_rows,
    reading_note,
)
from defsent_plus.evaluation.sts import STS_TASKS  # noqa: E402
from defsent_plus.io import read_json, write_page, write_tsv  # noqa: E402
from defsent_plus.names import STS_COLUMNS  # noqa: E402

log = logging.getLogger(__name__)
SETTING = ["source", "template", "layers", "aggregation", "postprocess", "fit"]
SHAPE_COLUMNS = {"alignment": "align", "uniformity": "uniform", "isoscore": "IsoScore", "mean_cosine": "cos"}
BEST_ROWS = 15
BEST_TRANSDUCTIVE = 5
PLOTTED = ("cls", "mean", "mask")  # 003 Figure 4's lines: CLS, mean (avg.), a prompt's [MASK]
PLAIN_MEAN = {"source": ENCODER, "template": NO_TEMPLATE, "aggregation": "mean", "postprocess": "none", "fit": NO_FIT}


def plain_mean_label(n_layers: int) -> str:
    """The plain-mean row as the summary names combinations (source, template, layers, aggregation, post-processing)."""
    return combination_name({**PLAIN_MEAN, "layers": layer_set_name((n_layers,))})


def plain_mean_index(table: pd.DataFrame, n_layers: int) -> int | None:
    """The grid index of the plain-mean row (a grid row before a layer-sweep row of the same combination), or None
    when the grid has none."""
    matches = table[(table[list(PLAIN_MEAN)] == pd.Series(PLAIN_MEAN)).all(axis=1)
                    & (table["layers"] == layer_set_name((n_layers,)))]
    return None if matches.empty else int(matches.sort_values("sweep", kind="stable").index[0])


def task_pairs(pairs: Sequence[dict[str, np.ndarray]], evaluation: EvaluationSet) -> dict[str, TaskPairs]:
    """Every STS task's gold, subset bounds (its parts in file order) and the per-pair cosines of each grid row of
    ``pairs``: the evaluator's per-pair files without writing them."""
    out = {}
    for task, parts in evaluation.tasks.items():
        ends = np.cumsum([len(p.gold) for p in parts]).tolist()
        out[task] = TaskPairs(np.concatenate([p.gold for p in parts]).astype(np.float64),
                              list(zip([0, *ends[:-1]], ends, strict=True)), [cosines[task] for cosines in pairs])
    return out


@dataclass(frozen=True)
class RowUncertainty:
    """Intervals of the shown rows and their paired tests against the plain mean (``reference``: its position in
    ``indices``, or None when the grid has no plain-mean row)."""

    indices: list[int]
    bootstrap: Bootstrap
    reference: int | None
    options: dict

    def position(self, index: int) -> int:
        return self.indices.index(index)


def row_uncertainty(shown: Sequence[int], reference: int | None, pairs: dict[int, dict[str, np.ndarray]],
                    evaluation: EvaluationSet, aggregation: str, options: dict) -> RowUncertainty:
    """One bootstrap (``options``: config ``evaluation.bootstrap``) over the ``shown`` grid rows and the reference,
    the reference first."""
    indices = list(dict.fromkeys([*([] if reference is None else [reference]), *shown]))
    bootstrap = Bootstrap.of_pairs(task_pairs([pairs[index] for index in indices], evaluation), aggregation, options)
    return RowUncertainty(indices, bootstrap, None if reference is None else 0, options)


def write_grid(caches: dict[str, str], senteval_dir: str | Path, corpus_txt: str | Path, grid: dict,
               custom_templates: dict, options: dict, grid_key: str, outputs: dict[str, str], title: str,
               n_jobs: int = 1) -> None:
    """Score every combination of an encoder's grid (``n_jobs`` processes) and write its table, summary and
    per-layer plot."""
    start = time.perf_counter()
    evaluation = evaluation_set(senteval_dir, STS_TASKS, options["alignment"])
    corpus = read_lines(corpus_txt)
    embeddings = CachedEmbeddings(caches, evaluation, corpus)
    n_layers = read_json(Path(next(iter(caches.values()))) / INDEX)["n_layers"]
    rows = combinations(grid, n_layers, custom_templates, grid_key)
    pairs: dict = {}
    table = score_grid(rows, embeddings, evaluation, options, n_jobs, pairs)
    scored = time.perf_counter() - start
    uncertainty = row_uncertainty(shown_rows(table), plain_mean_index(table, n_layers), pairs, evaluation,
                                  options["sts_aggregation"], options["bootstrap"])
    del pairs
    log.info("95%% intervals of %d named rows and their paired tests in %.1f s", len(uncertainty.indices),
             time.perf_counter() - start - scored)
    table.insert(0, "fit_corpus", f"{len(corpus)} sentences ({options['fit_corpus'].get('file') or 'definitions'})")
    write_tsv(outputs["tsv"], table, float_format="%.4f")
    notes = [f"STS: Spearman x 100 of cosine (STS12-16 '{options['sts_aggregation']}'); align/uniform: Wang & Isola on "
             "unit vectors, STS-B train (lower is better); IsoScore and mean cosine of the fit corpus' embeddings",
             f"fit corpus: {len(corpus)} sentences; post-processing fit 'corpus' = on it (the extraction study's W), "
             "'eval' = on each evaluated task's own sentences (transductive)",
             f"{len(table)} combinations scored; intervals and paired tests of the {len(uncertainty.indices)} rows "
             "named here (their seconds: the job's log)"]
    write_page(outputs["md"], summary_markdown(table, title, notes, uncertainty, plain_mean_label(n_layers)))
    plot_layers(table, n_layers, outputs["png"], title)
    inductive = table[~table["transductive"]]
    if inductive.empty:
        log.info("%d combinations in %.0f s, all transductive (none is selected on STS-B dev)", len(table),
                 time.perf_counter() - start)
        return
    best = inductive.nlargest(1, "dev").iloc[0]
    log.info("%d combinations in %.0f s; selected on STS-B dev: %s (dev %.2f, STS avg %.2f)", len(table),
             time.perf_counter() - start, ", ".join(f"{k} {best[k]}" for k in SETTING), best["dev"], best["avg"])


def selected_per_source(table: pd.DataFrame) -> pd.DataFrame:
    """The inductive row selected on STS-B dev per source, best dev first."""
    inductive = table[~table["transductive"]]
    return inductive.loc[inductive.groupby("source", sort=False)["dev"].idxmax()].sort_values("dev", ascending=False)


def best_inductive(table: pd.DataFrame) -> pd.DataFrame:
    return table[~table["transductive"]].nlargest(BEST_ROWS, "avg")


def named_tables(table: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The summary's tables of named rows by heading: the STS-B dev-selected row per source and the best rows by
    test average, inductive and (where there are any) transductive."""
    named = {"Selected on STS-B dev (inductive), overall and per source: the fair comparison with dev-selected "
             "trained models": selected_per_source(table),
             f"Best {BEST_ROWS} combinations by the STS test average (inductive: nothing fitted on an evaluated "
             "sentence; read, do not select, on these)": best_inductive(table)}
    if table["transductive"].any():
        named["Best transductive combinations (idf or post-processing fitted on the evaluated task)"] = \
            table[table["transductive"]].nlargest(BEST_TRANSDUCTIVE, "avg")
    return named


def shown_rows(table: pd.DataFrame) -> list[int]:
    """The grid indices of every row the summary names: the dev-selected and best rows, and each family member's
    dev-selected and best row (the rows that get intervals and paired tests)."""
    family = [index for name in FAMILIES for _, group in family_groups(table, name)
              for index in family_choice(group).values() if index is not None]
    return list(dict.fromkeys([*(int(i) for rows in named_tables(table).values() for i in rows.index), *family]))


def summary_markdown(table: pd.DataFrame, title: str, notes: list[str], uncertainty: RowUncertainty,
                     reference: str | None) -> str:
    """The STS-B dev-selected combination per source, the best rows by test average (inductive and transductive
    apart), per (source, template) the STS average of aggregation x post-processing at the first configured layer
    set, fitted on the corpus, and the best rows per family of options (:func:`family_tables`); every named row with
    its 95% intervals (``uncertainty``) and its paired test against the ``reference`` row (the plain mean, its
    label)."""
    shown = {**STS_COLUMNS, "dev": "STS-B dev", **SHAPE_COLUMNS}
    columns = [column for column in [*SETTING, *STS_COLUMNS, "dev", *SHAPE_COLUMNS] if column in table]
    text = f"# {title}\n\n" + "".join(f"- {note}\n" for note in notes)
    for heading, rows in named_tables(table).items():
        text += f"\n## {heading}\n\n" + markdown(with_uncertainty(rows[columns], uncertainty), shown)
    main = table[~table["sweep"]]
    for (source, template), rows in main.groupby(["source", "template"], sort=False):
        layers = rows["layers"].iloc[0]
        rows = rows[(rows["layers"] == layers) & rows["fit"].isin(["-", "corpus"])]
        pivot = rows.pivot_table(index="aggregation", columns="postprocess", values="avg", sort=False)
        text += (f"\n## {source}, template {template}, layers {layers}: STS avg., aggregation x post-processing "
                 "(fit: corpus)\n\n") + pivot.reset_index().to_markdown(index=False, floatfmt=".2f") + "\n"
        text += "\n" + cell_note(uncertainty) + "\n"
    return text + family_tables(table, uncertainty) + uncertainty_sections(table, uncertainty, reference)


AVG_INTERVAL, VERSUS_PLAIN = "Avg. 95%", "Avg. − plain mean"


def with_uncertainty(rows: pd.DataFrame, uncertainty: RowUncertainty) -> pd.DataFrame:
    """``rows`` with the average's interval and its paired difference from the plain mean after ``avg``."""
    rows = rows.copy()
    position = rows.columns.get_loc("avg") + 1
    rows.insert(position, AVG_INTERVAL, [average_interval(uncertainty, i) for i in rows.index])
    rows.insert(position + 1, VERSUS_PLAIN, [average_difference(uncertainty, i) for i in rows.index])
    return rows


def average_interval(uncertainty: RowUncertainty, index: int) -> str:
    return interval_text(uncertainty.bootstrap.intervals(uncertainty.position(index))["avg"])


def average_difference(uncertainty: RowUncertainty, index: int) -> str:
    """The row minus the plain mean on the STS average ("" for the plain mean itself or without one)."""
    if uncertainty.reference is None or uncertainty.position(index) == uncertainty.reference:
        return ""
    return difference_text(uncertainty.bootstrap.paired(uncertainty.position(index), uncertainty.reference)["avg"])


def cell_note(uncertainty: RowUncertainty) -> str:
    """What a pivot cell's uncertainty is, without an interval per cell."""
    widths = [interval.high - interval.low for interval in
              (uncertainty.bootstrap.intervals(m)["avg"] for m in range(len(uncertainty.indices)))]
    return (f"Cells without intervals: the named rows' STS-average intervals are {min(widths):.2f}–"
            f"{max(widths):.2f} points wide (median {float(np.median(widths)):.2f}); a difference between two cells "
            "needs a paired test (the sections below), which is narrower than either interval.\n")


def uncertainty_sections(table: pd.DataFrame, uncertainty: RowUncertainty, reference: str | None) -> str:
    """Every named row's interval per task, and its paired test against the plain mean, with how to read them."""
    labels = [{"combination": combination_name(table.loc[index])} for index in uncertainty.indices]
    text = ("\n## 95% intervals of every named row, per task\n\n" + reading_note(uncertainty.options)
            + markdown(interval_rows(labels, uncertainty.bootstrap), STS_COLUMNS))
    if uncertainty.reference is None:
        return text + "\nNo paired tests: the grid has no plain-mean row (encoder, no template, the last layer, " \
                      "mean, no post-processing) to compare with.\n"
    comparisons = [(f"{label['combination']} − plain mean", m, uncertainty.reference)
                   for m, label in enumerate(labels) if m != uncertainty.reference]
    return (text + f"\n## Paired tests: each named row minus the plain mean ({reference})\n\n"
            + markdown(paired_rows(comparisons, uncertainty.bootstrap), STS_COLUMNS))


FAMILIES = {"template": "template", "layers": "layers", "aggregation": "aggregation",
            "post-processing": "post-processing (fit)", "source": "source"}


def family_groups(table: pd.DataFrame, family: str):
    """(member, its rows) of one family of options; post-processing members name their fit: ``zscore (corpus)``,
    ``zscore (eval)``, ``none``."""
    post = table["postprocess"].where(table["fit"] == "-", table["postprocess"] + " (" + table["fit"] + ")")
    return table.assign(**{"post-processing": post}).groupby(family, sort=False)


def family_tables(table: pd.DataFrame, uncertainty: RowUncertainty | None = None) -> str:
    """003-style tables, one per family of options (template, layer set, aggregation, post-processing with its fit,
    source): per member the combination selected on STS-B dev among the inductive ones, and the member's best STS
    test average, a reading and not a selection (transductive rows, which have no selection, marked); with
    ``uncertainty``, each one's 95% interval."""
    text = ""
    for family, title in FAMILIES.items():
        rows = pd.DataFrame([{title: member, **family_row(group, uncertainty)}
                             for member, group in family_groups(table, family)])
        rows = rows.astype(object).where(rows.notna(), None)  # no selection: an empty cell, not "nan"
        text += (f"\n## Best per {title}: selected on STS-B dev, and the best test average (not a selection)\n\n"
                 + rows.to_markdown(index=False, floatfmt=".2f", missingval="") + "\n")
    return text


def family_choice(group: pd.DataFrame) -> dict[str, int | None]:
    """The grid indices of one member's dev-selected inductive row (None when all its rows are transductive) and of
    its best test average."""
    inductive = group[~group["transductive"]]
    return {"selected": None if inductive.empty else int(inductive["dev"].idxmax()),
            "best": int(group["avg"].idxmax())}


def family_row(group: pd.DataFrame, uncertainty: RowUncertainty | None = None) -> dict:
    """The dev-selected inductive row and the best test average of one member's rows (with ``uncertainty``, each
    one's 95% interval)."""
    choice = family_choice(group)
    chosen, best = (None if index is None else group.loc[index] for index in (choice["selected"], choice["best"]))
    row = {"rows": len(group), "selected on STS-B dev": "- (all transductive)", "dev": None, "STS avg": None,
           "95%": None}
    if chosen is not None:
        row.update({"selected on STS-B dev": combination_name(chosen), "dev": chosen["dev"], "STS avg": chosen["avg"],
                    "95%": None if uncertainty is None else average_interval(uncertainty, choice["selected"])})
    row.update({"best STS avg (not a selection)": combination_name(best)
                + (" [transductive]" if best["transductive"] else ""), "its STS avg": best["avg"],
                "its 95%": None if uncertainty is None else average_interval(uncertainty, choice["best"])})
    return row if uncertainty is not None else {k: v for k, v in row.items() if "95%" not in k}


def combination_name(row: pd.Series | dict) -> str:
    fit = "" if row["fit"] == "-" else f" ({row['fit']})"
    return f"{row['source']}, {row['template']}, {row['layers']}, {row['aggregation']}, {row['postprocess']}{fit}"


def plot_layers(table: pd.DataFrame, n_layers: int, out_png: str | Path, title: str) -> None:
    """STS average per single layer (no post-processing, the encoder's own vectors) for CLS, mean and mask, one line
    per (template, aggregation)."""
    order = [layer_set_name((k,)) for k in range(STATIC_LAYER, n_layers + 1)]
    rows = table[(table["source"] == ENCODER) & (table["postprocess"] == "none") & table["layers"].isin(order)
                 & table["aggregation"].isin(PLOTTED)]
    fig, ax = plt.subplots(figsize=(7, 4))
    for (template, aggregation), line in rows.groupby(["template", "aggregation"], sort=False):
        line = line.set_index("layers").reindex(order)
        ax.plot(range(len(order)), line["avg"].to_numpy(), marker="o", label=f"{template}, {aggregation}")
    if not rows.empty:
        honest_ylim(ax, rows["avg"])
    ax.set_xticks(range(len(order)), ["static" if name == "static" else name[1:] for name in order])
    label_plot(fig, ax, "layer (static = input embedding rows, 0 = embedding output)", "STS average, Spearman × 100",
               title)
    write_png(fig, out_png)
