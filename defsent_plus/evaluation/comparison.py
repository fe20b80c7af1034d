"""Every run side by side: STS in the layout of 000's Table 2 (starting models, then each method's mean ± std over
seeds and its dev-selected model) and one reverse-dictionary table with each method's protocol in its header."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from defsent_plus.evaluation.report import STS_COLUMNS, aggregation_note, markdown, score_provenance
from defsent_plus.evaluation.significance import bootstrap_of, interval_rows, paired_rows, reading_note
from defsent_plus.io import atomic_path, read_json
from defsent_plus.methods import method_of
from defsent_plus.methods.base import resolve
from defsent_plus.names import RANKING_METRICS as METRIC_COLUMNS
from defsent_plus.provenance import provenance_footer

SCORE_COLUMNS = ("STS12", "STS13", "STS14", "STS15", "STS16", "STSB", "SICKR", "avg")


def sts_rows(run: str, method: str, table: pd.DataFrame, chain: str = "") -> list[dict]:
    """A run's comparison rows: its starting model, its final-step seeds (mean ± std) and its dev-selected model;
    ``chain``: where the run's starting weights come from (model → run → ...)."""
    scores = [c for c in SCORE_COLUMNS if c in table.columns]
    rows = []
    for record in table[table["step"] == 0].itertuples():
        rows.append({"model": record.model, "run": "", "chain": "", "method": "", "seeds": "",
                     **{c: f"{getattr(record, c):.2f}" for c in scores}})
    final = table[table["group"].fillna("") != ""]
    for group, seeds in final.groupby("group", sort=False):
        rows.append({"model": f"{method} ({group}), mean ± std", "run": run, "chain": chain, "method": method,
                     "seeds": len(seeds),
                     **{c: f"{seeds[c].mean():.2f} ± {seeds[c].std(ddof=0):.2f}" for c in scores}})
    for record in table[table["dev_selected"]].itertuples():
        rows.append({"model": f"{method}, dev-selected", "run": run, "chain": chain, "method": method, "seeds": "",
                     **{c: f"{getattr(record, c):.2f}" for c in scores}})
    return rows


def compared_models(runs: Sequence[dict], pooling: str) -> tuple[list[str], list[str], list[tuple[str, int, int]]]:
    """The distinct models of one pooling's comparison (per-pair files and labels) and the paired tests: each run's
    dev-selected model against its starting model, then every two runs' dev-selected models."""
    paths: list[str] = []

    def index(path: str) -> int:
        if path not in paths:
            paths.append(path)
        return paths.index(path)

    start = {r["run"]: index(r["pairs"][pooling]["start"]) for r in runs}
    final = {r["run"]: index(r["pairs"][pooling]["final"]) for r in runs}
    names = {i: Path(path).parent.name for i, path in enumerate(paths)}
    labels = {**{i: names[i] for i in start.values()}, **{i: f"{run}, dev-selected" for run, i in final.items()}}
    tests = [(f"{run} − its start ({names[start[run]]})", final[run], start[run]) for run in final]
    names_runs = list(final)
    tests += [(f"{a} − {b}", final[a], final[b]) for k, a in enumerate(names_runs) for b in names_runs[k + 1:]]
    return paths, [labels[i] for i in range(len(paths))], tests


def comparison_uncertainty(runs: Sequence[dict], aggregation: str, options: dict) -> str:
    """Markdown: the intervals of every compared model and the paired tests, per pooling."""
    text = "\n## Uncertainty\n\n" + reading_note(options)
    for pooling in runs[0]["pairs"]:
        paths, labels, tests = compared_models(runs, pooling)
        resampled = bootstrap_of(paths, aggregation, options)
        rows = [{"model": label, "pooling": pooling} for label in labels]
        text += (f"### {options['level']:.0%} intervals ({pooling} pooling)\n\n"
                 + markdown(interval_rows(rows, resampled), STS_COLUMNS)
                 + f"\n### Paired tests ({pooling} pooling)\n\n" + markdown(paired_rows(tests, resampled), STS_COLUMNS)
                 + "\n")
    return text


def write_sts_comparison(runs: Sequence[dict], out_tsv: str | Path, out_md: str | Path,
                         bootstrap: dict | None = None) -> pd.DataFrame:
    """``runs``: one record per run (``run``, ``method``, ``sts``: its sts.tsv; with ``bootstrap``, ``pairs``: per
    pooling the per-pair files of its starting and final models). A starting model shared by runs is listed once."""
    tables = {r["run"]: pd.read_csv(r["sts"], sep="\t") for r in runs}
    rows = [row for r in runs for row in sts_rows(r["run"], r["method"], tables[r["run"]], r.get("chain", ""))]
    table = pd.DataFrame(rows).drop_duplicates(subset=["model", "run"], keep="first")
    with atomic_path(out_tsv) as tmp:
        table.to_csv(tmp, sep="\t", index=False)
    note = aggregation_note(pd.concat(tables.values()))
    text = ("# STS of every run (Spearman x 100 of cosine)\n\n" + note +
            "Starting models, then per run its final step's candidates as mean ± std over seeds and the model "
            "selected on STS-B dev (never on a test set).\n\n" + markdown(table, STS_COLUMNS))
    if bootstrap is not None:
        aggregation = pd.concat(tables.values())["sts_aggregation"].iloc[0]
        text += comparison_uncertainty(runs, aggregation, bootstrap)
    scored = dict.fromkeys(path.replace(".pairs.parquet", ".json") for r in runs
                           for files in r.get("pairs", {}).values() for path in files.values())
    text += provenance_footer(score_provenance([path for path in scored if Path(path).is_file()]))
    with atomic_path(out_md) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return table


def reverse_dictionary_rows(run: str, result: dict) -> list[dict]:
    """One row per (model, protocol, split) of a run's reverse_dictionary.json, whatever its method."""
    method = result["method"]
    splits_of = resolve(method_of(method, f"{run}: reverse_dictionary.json").reverse_dictionary.splits)
    rows = []
    for label in ("trained", "base"):
        model = result[label]
        for protocol, splits in splits_of(model).items():
            for split, metrics in splits.items():
                rows.append({"run": run, "method": method, "model": label, "protocol": protocol, "split": split,
                             "candidates": model["candidates"], "queries": metrics["queries"],
                             **{k: metrics.get(k) for k in METRIC_COLUMNS}})
    return rows


def write_reverse_dictionary_comparison(runs: Sequence[dict], out_tsv: str | Path, out_md: str | Path
                                        ) -> pd.DataFrame:
    """``runs``: one record per run (``run``, ``json``: its reverse_dictionary.json)."""
    table = pd.DataFrame([row for r in runs for row in reverse_dictionary_rows(r["run"], read_json(r["json"]))])
    with atomic_path(out_tsv) as tmp:
        table.to_csv(tmp, sep="\t", index=False, float_format="%.4f")
    methods = dict.fromkeys(table["method"])
    header = "\n".join(f"* {method_of(m).reverse_dictionary.description}" for m in methods)
    text = ("# Reverse dictionary of every run\n\nThe methods rank different candidates (the `candidates` column), "
            "so compare numbers within a protocol:\n\n" + header + "\n\n`model`: trained = the run's final "
            "dev-selected model, base = its starting model untrained by the run. MRR over the full ranking, MRR@10 "
            "(hits beyond the top 10 count 0), top-k accuracy in %.\n\n" +
            table.to_markdown(index=False, floatfmt=".3f") + "\n")
    with atomic_path(out_md) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return table
