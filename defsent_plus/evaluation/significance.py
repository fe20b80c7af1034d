"""The uncertainty of the STS tables: each model's 95% intervals and the paired tests between models, as table rows
and the note that says how to read them (:mod:`defsent_plus.evaluation.intervals` computes them)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from defsent_plus.evaluation.intervals import Bootstrap, Interval, PairedTest
from defsent_plus.evaluation.sts import STS_TASKS
from defsent_plus.io import read_parquet_file


def reading_note(options: dict) -> str:
    """How the intervals and tests were computed and what they do not cover (markdown)."""
    return (f"Intervals: {options['level']:.0%} percentile bootstrap over each test set's pairs "
            f"({options['resamples']:,} resamples, each STS12-16 subset resampled within itself, "
            f"seed {options['seed']}); the average's interval resamples the distinct sentence pairs of all seven "
            "sets at once, a pair shared by several sets (STS-B's test pairs are mostly STS12-16's) with one "
            "Poisson weight in all of them. They measure test-set noise only: the mean ± std over seeds is the "
            "training noise, which they do not include. Paired test: both models scored on the same resampled "
            "pairs (the paired bootstrap of Koehn 2004 / Berg-Kirkpatrick et al. 2012; for Spearman it needs no "
            "assumption that Steiger's or Williams' test for dependent correlations would); p is two-sided, and a "
            "difference whose interval covers 0 is marked n.s. (not distinguishable from 0). The average is the "
            "verdict; the seven per-task cells of a row are exploratory (seven tests, unadjusted: one of them "
            "excluding 0 by chance is likely; the TSV has Holm-adjusted p). `Avg. under <other>` gives the "
            "average's verdict under the other STS12-16 aggregation (both are standard), flagged where it "
            "differs.\n\n")


def bootstrap_of(pairs_files: Sequence[str], aggregation: str, options: dict) -> Bootstrap:
    """One resampling shared by every model of a table (same test pairs, same resamples)."""
    return Bootstrap.of([read_parquet_file(path) for path in pairs_files], STS_TASKS, aggregation, options)


def interval_text(interval: Interval) -> str:
    return f"{interval.low:.2f}–{interval.high:.2f}"


def interval_rows(labels: Sequence[dict], bootstrap: Bootstrap) -> pd.DataFrame:
    """One row per model (``labels``: its ``model`` and ``pooling``): every task's interval."""
    return pd.DataFrame([{**label, **{k: interval_text(v) for k, v in bootstrap.intervals(m).items()}}
                         for m, label in enumerate(labels)])


def interval_columns(bootstrap: Bootstrap, n_models: int) -> pd.DataFrame:
    """``<task>_low`` and ``<task>_high`` per model, for the TSV."""
    return pd.DataFrame([{f"{k}_{end}": getattr(v, end) for k, v in bootstrap.intervals(m).items()
                          for end in ("low", "high")} for m in range(n_models)])


def difference_text(test: PairedTest) -> str:
    mark = "" if test.distinguishable else " n.s."
    return f"{test.difference.value:+.2f} [{test.difference.low:+.2f}, {test.difference.high:+.2f}]{mark}"


OTHER_AGGREGATION = {"all": "mean", "mean": "all", "wmean": "all"}  # the average's verdict is also given under


def paired_rows(comparisons: Sequence[tuple[str, int, int]], bootstrap: Bootstrap,
                other: tuple[str, Bootstrap] | None = None) -> pd.DataFrame:
    """One row per ``(label, a, b)``: model a minus model b on every task, the average's p-value and verdict; with
    ``other`` (an aggregation and its bootstrap of the same models) the average under it, flagged where its verdict
    differs."""
    rows = []
    for label, a, b in comparisons:
        tests = bootstrap.paired(a, b)
        row = {"comparison": label, **{k: difference_text(t) for k, t in tests.items()},
               "p (Avg.)": f"p = {tests['avg'].p_value:.3f}",
               "Avg. difference": f"{'' if tests['avg'].distinguishable else 'not '}distinguishable from 0"}
        if other is not None:
            aggregation, resampled = other
            test = resampled.paired(a, b)["avg"]
            differs = test.distinguishable != tests["avg"].distinguishable
            row[f"Avg. under {aggregation}"] = difference_text(test) + (" ⚑ verdict differs" if differs else "")
        rows.append(row)
    return pd.DataFrame(rows)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of a family of p-values (each at most 1, monotone in the sorted order)."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted, running = [0.0] * len(p_values), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def uncertainty_records(labels: Sequence[dict], comparisons: Sequence[tuple[str, int, int]], bootstrap: Bootstrap,
                        **context) -> list[dict]:
    """The TSV's long rows: every model's interval per task, and every paired difference per task with its bounds,
    p and Holm-adjusted p over the row's seven tasks (the average, the primary verdict, is not adjusted)."""
    rows = []
    for m, label in enumerate(labels):
        rows += [{**context, "kind": "interval", **label, "task": task, "value": v.value, "low": v.low,
                  "high": v.high} for task, v in bootstrap.intervals(m).items()]
    for name, a, b in comparisons:
        tests = bootstrap.paired(a, b)
        tasks = [task for task in tests if task != "avg"]
        adjusted = dict(zip(tasks, holm([tests[task].p_value for task in tasks]), strict=True))
        rows += [{**context, "kind": "paired", "model": name, "task": task, "value": t.difference.value,
                  "low": t.difference.low, "high": t.difference.high, "p": t.p_value,
                  "p_holm": adjusted.get(task, t.p_value), "distinguishable": t.distinguishable}
                 for task, t in tests.items()]
    return rows
