"""Every run's STS side by side, in the layout of 000's Table 2: starting models, then each method's mean ± std over
seeds and its dev-selected model (the reverse dictionary's comparison: evaluation/reverse_dictionary.py)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from defsent_plus.errors import DefSentError
from defsent_plus.evaluation.intervals import Interval
from defsent_plus.evaluation.report import aggregation_note, markdown, score_provenance
from defsent_plus.evaluation.significance import (
    OTHER_AGGREGATION,
    bootstrap_of,
    interval_rows,
    paired_rows,
    reading_note,
    uncertainty_records,
)
from defsent_plus.io import read_tsv_table, write_page, write_tsv
from defsent_plus.names import STS_COLUMNS, TRANSDUCTIVE_NOTE
from defsent_plus.provenance import provenance_footer

SCORE_COLUMNS = tuple(STS_COLUMNS)  # the seven tasks and avg


def seed_groups(table: pd.DataFrame) -> pd.Series:
    """Each row's seed group ("" for none; a table without any reads back as an all-NaN float column)."""
    return table["group"].astype(object).fillna("")


UNTRAINED = "–"  # the seeds cell of a starting model: no seed of the run trained it
SEEDS_NOTE = ("`seeds`: the training seeds behind a row: – for a starting model (the run did not train it), n for a "
              "mean ± std over n seeds, 1 for the dev-selected model (one candidate's model, one seed, chosen on STS-B "
              "dev among the final step's candidates: its spaces × seeds).")


def sts_rows(run: str, method: str, table: pd.DataFrame, chain: str = "", transductive: bool = False) -> list[dict]:
    """A run's comparison rows: its starting model, its final-step seeds (mean ± std) and its dev-selected model,
    labelled by the run as the page's interval and paired-test tables label them; ``chain``: where the run's
    starting weights come from (model → run → ...); a ``transductive`` run's method is marked †; each row's
    ``seeds`` cell as :data:`SEEDS_NOTE` reads it."""
    scores = [c for c in SCORE_COLUMNS if c in table.columns]
    ours = {"run": run, "chain": chain, "method": f"{method} †" if transductive else method}
    rows = [{"model": record.model, **dict.fromkeys(ours, ""), "seeds": UNTRAINED,
             **{c: f"{getattr(record, c):.2f}" for c in scores}} for record in table[table["step"] == 0].itertuples()]
    for group, seeds in table[seed_groups(table) != ""].groupby("group", sort=False):
        rows.append({"model": f"{run} ({group}), mean ± std", **ours, "seeds": len(seeds),
                     **{c: f"{seeds[c].mean():.2f} ± {seeds[c].std(ddof=0):.2f}" for c in scores}})
    return rows + [{"model": f"{run}, dev-selected", **ours, "seeds": 1,
                    **{c: f"{getattr(record, c):.2f}" for c in scores}}
                   for record in table[table["dev_selected"]].itertuples()]


Pairs = dict[str, dict[str, dict[str, str]]]  # run -> pooling -> "start" / "final" -> per-pair similarities file


def pairs_by_run(runs: Sequence[dict], poolings: Sequence[str], files: Sequence[str]) -> Pairs:
    """The flat per-pair file list of :meth:`Plan.comparison_pairs` (per run, per pooling: start, final) by run."""
    if len(files) != 2 * len(runs) * len(poolings):
        raise ValueError(f"expected {2 * len(runs) * len(poolings)} per-pair files, got {len(files)}")
    it = iter(files)
    return {r["run"]: {pooling: {"start": next(it), "final": next(it)} for pooling in poolings} for r in runs}


def compared_models(pairs: Pairs, pooling: str) -> tuple[list[str], list[str], list[tuple[str, int, int]]]:
    """The distinct models of one pooling's comparison (per-pair files and labels) and the paired tests: each run's
    dev-selected model against its starting model, then every two runs' dev-selected models."""
    index: dict[str, int] = {}  # each distinct file's number, in first-seen order
    start = {run: index.setdefault(files[pooling]["start"], len(index)) for run, files in pairs.items()}
    final = {run: index.setdefault(files[pooling]["final"], len(index)) for run, files in pairs.items()}
    paths = list(index)
    names = {i: Path(path).parent.name for i, path in enumerate(paths)}
    labels = {**{i: names[i] for i in start.values()}, **{i: f"{run}, dev-selected" for run, i in final.items()}}
    tests = [(f"{run} − its start ({names[start[run]]})", final[run], start[run]) for run in final]
    runs = list(final)
    tests += [(f"{a} − {b}", final[a], final[b]) for k, a in enumerate(runs) for b in runs[k + 1:]]
    return paths, [labels[i] for i in range(len(paths))], tests


def comparison_uncertainty(pairs: Pairs, aggregation: str, options: dict
                           ) -> tuple[str, dict[str, dict[str, dict[str, Interval]]], pd.DataFrame]:
    """Markdown: the intervals of every compared model and the paired tests, per pooling (the average's verdict
    also under the other STS12-16 aggregation); per pooling each run's final model's intervals (the published
    numbers' comparison); and the TSV's rows of every interval and paired difference."""
    text = "\n## Uncertainty\n\n" + reading_note(options)
    finals: dict[str, dict[str, dict[str, Interval]]] = {}
    records: list[dict] = []
    other = OTHER_AGGREGATION[aggregation]
    for pooling in next(iter(pairs.values())):
        paths, labels, tests = compared_models(pairs, pooling)
        resampled = bootstrap_of(paths, aggregation, options)
        finals[pooling] = {run: resampled.intervals(paths.index(files[pooling]["final"]))
                           for run, files in pairs.items()}
        rows = [{"model": label, "pooling": pooling} for label in labels]
        paired = paired_rows(tests, resampled, (other, bootstrap_of(paths, other, options)))
        text += (f"### {options['level']:.0%} intervals ({pooling} pooling)\n\n"
                 + markdown(interval_rows(rows, resampled), STS_COLUMNS)
                 + f"\n### Paired tests ({pooling} pooling)\n\n" + markdown(paired, STS_COLUMNS) + "\n")
        records += uncertainty_records([{"model": label} for label in labels], tests, resampled, pooling=pooling,
                                       aggregation=aggregation, level=options["level"])
    return text, finals, pd.DataFrame(records)


def published_pooling(run: str, spec: dict, table: pd.DataFrame) -> tuple[str, pd.DataFrame]:
    """The pooling ours are read with (``published.<run>.pooling``, default the table's first) and its rows."""
    pooling = spec.get("pooling", table["pooling"].iloc[0])
    rows = table[table["pooling"] == pooling]
    if rows.empty:
        raise DefSentError(f"config: published.{run}.pooling", f"the run's STS table has no {pooling!r} rows "
                                                              f"(poolings: {sorted(set(table['pooling']))})")
    return pooling, rows


def published_seeds(run: str, spec: dict, rows: pd.DataFrame) -> tuple[str, pd.DataFrame]:
    """The group and rows of the seeds compared with a paper's mean over runs, one space's final-step seeds: ``step
    <last> <space>`` for ``published.<run>.space``, else the dev-selected model's group."""
    groups = seed_groups(rows)
    if "space" in spec:
        group = f"step {int(rows['step'].max())} {spec['space']}"
    else:
        selected = groups[rows["dev_selected"].astype(bool)]
        if selected.empty or not selected.iloc[0]:
            raise DefSentError(f"config: published.{run}.compare_with", "seeds: the run's STS table has no final-step "
                               "seed groups (they need evaluation.final: candidates); or compare with: selected")
        group = str(selected.iloc[0])
    seeds = rows[groups == group]
    if seeds.empty:
        known = sorted(set(groups) - {""})
        raise DefSentError(f"config: published.{run}.space", f"no final-step seeds of group {group!r} in the run's "
                                                             f"STS table (groups: {known})")
    return group, seeds


def published_rows(run: str, spec: dict, table: pd.DataFrame,
                   finals: dict[str, dict[str, dict[str, Interval]]] | None = None) -> list[dict]:
    """The published numbers of a run, ours (its dev-selected model, or the mean of one space's final-step seeds:
    :func:`published_seeds`) and ours − published, beside our 95% interval (selected; ``finals``: per pooling each
    run's final model's intervals) or our std over seeds (seeds)."""
    pooling, rows = published_pooling(run, spec, table)
    intervals = (finals or {}).get(pooling, {}).get(run)
    tasks = [task for task in SCORE_COLUMNS if task in spec["scores"]]
    if spec.get("compare_with", "selected") == "seeds":
        group, final = published_seeds(run, spec, rows)
        ours = {task: final[task].mean() for task in tasks}
        spread = {task: f"± {final[task].std(ddof=0):.2f} (std, {len(final)} seeds)" for task in tasks}
        label = f"ours: {group}, mean of {len(final)} seeds ({pooling})"
    else:
        selected = rows[rows["dev_selected"].astype(bool)].iloc[0]
        ours = {task: float(selected[task]) for task in tasks}
        spread = {task: (f"95%: {intervals[task].low:.2f}–{intervals[task].high:.2f}" if intervals else "")
                  for task in tasks}
        label = f"ours: dev-selected ({pooling})"
    return [{"run": run, "row": f"published: {spec['source']}", **{t: f"{spec['scores'][t]:.2f}" for t in tasks}},
            {"run": run, "row": label, **{t: f"{ours[t]:.2f}" for t in tasks}},
            {"run": run, "row": "ours − published", **{t: f"{ours[t] - spec['scores'][t]:+.2f} ({spread[t]})"
                                                       for t in tasks}}]


def published_section(published: dict, tables: dict[str, pd.DataFrame],
                      finals: dict[str, dict[str, dict[str, Interval]]]) -> str:
    """Markdown: every run with published numbers against them."""
    rows = [row for run, spec in published.items() for row in published_rows(run, spec, tables[run], finals)]
    return ("\n## Against the published numbers\n\nOurs − published, beside our 95% bootstrap interval (test-set "
            "noise of our model) or our std over seeds; a published number is a point estimate of another run, so a "
            "difference inside our interval or std is not a failure to reproduce.\n\n"
            + markdown(pd.DataFrame(rows), STS_COLUMNS))


def write_sts_comparison(runs: Sequence[dict], out_tsv: str | Path, out_md: str | Path, pairs: Pairs | None = None,
                         bootstrap: dict | None = None, published: dict | None = None,
                         out_uncertainty: str | Path | None = None) -> pd.DataFrame:
    """``runs``: one record per run (``run``, ``method``, ``sts``: its sts.tsv); ``pairs``: per run the per-pair
    files of its starting and final models (:func:`pairs_by_run`), with ``bootstrap`` (evaluation.bootstrap) the
    comparison's intervals and paired tests (every one in ``out_uncertainty``'s columns); ``published``: config
    ``published`` (runs against a paper's numbers). A starting model shared by runs is listed once."""
    tables = {r["run"]: read_tsv_table(r["sts"]) for r in runs}
    rows = [row for r in runs
            for row in sts_rows(r["run"], r["method"], tables[r["run"]], r.get("chain", ""), r.get("transductive"))]
    table = pd.DataFrame(rows).drop_duplicates(subset=["model", "run"], keep="first")
    write_tsv(out_tsv, table)
    note = aggregation_note(pd.concat(tables.values()))
    text = ("# STS of every run (Spearman x 100 of cosine)\n\n" + note +
            "Starting models, then per run its final step's candidates as mean ± std over seeds and the model "
            "selected on STS-B dev (never on a test set). " + SEEDS_NOTE + "\n\n" + markdown(table, STS_COLUMNS))
    if any(r.get("transductive") for r in runs):
        text += f"\n† {TRANSDUCTIVE_NOTE}: its numbers are not comparable with inductive rows.\n"
    finals: dict = {}
    if pairs and bootstrap is not None:
        aggregation = pd.concat(tables.values())["sts_aggregation"].iloc[0]
        uncertainty, finals, records = comparison_uncertainty(pairs, aggregation, bootstrap)
        text += uncertainty
        if out_uncertainty is not None:
            write_tsv(out_uncertainty, records, float_format="%.4f")
    if published:
        text += published_section(published, tables, finals)
    scored = dict.fromkeys(path.removesuffix(".pairs.parquet") + ".json" for files in (pairs or {}).values()
                           for models in files.values() for path in models.values()
                           if path.endswith(".pairs.parquet"))
    text += provenance_footer(score_provenance([path for path in scored if Path(path).is_file()]))
    write_page(out_md, text)
    return table
