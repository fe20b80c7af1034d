"""The uncertainty of the STS tables: each model's 95% intervals and the paired tests between models, as table rows
and the note that says how to read them (:mod:`defsent_plus.evaluation.intervals` computes them)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from defsent_plus.evaluation.intervals import Bootstrap, Interval, PairedTest
from defsent_plus.io import read_parquet_file

TASK_KEYS = ("STS12", "STS13", "STS14", "STS15", "STS16", "STSB", "SICKR", "avg")
STS_TASK_KEYS = TASK_KEYS[:-1]


def reading_note(options: dict) -> str:
    """How the intervals and tests were computed and what they do not cover (markdown)."""
    return (f"Intervals: {options['level']:.0%} percentile bootstrap over each test set's pairs "
            f"({options['resamples']:,} resamples, each STS12-16 subset resampled within itself, "
            f"seed {options['seed']}); the average's "
            "interval resamples all seven sets at once. They measure test-set noise only: the mean ± std over "
            "seeds is the training noise, which they do not include. Paired test: both models scored on the same "
            "resampled pairs (the paired bootstrap of Koehn 2004 / Berg-Kirkpatrick et al. 2012; for Spearman it "
            "needs no assumption that Steiger's or Williams' test for dependent correlations would); p is "
            "two-sided, and a difference whose interval covers 0 is marked n.s. (not distinguishable from 0).\n\n")


def bootstrap_of(pairs_files: Sequence[str], aggregation: str, options: dict) -> Bootstrap:
    """One resampling shared by every model of a table (same test pairs, same resamples)."""
    return Bootstrap.of([read_parquet_file(path) for path in pairs_files], STS_TASK_KEYS, aggregation, options)


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


def paired_rows(comparisons: Sequence[tuple[str, int, int]], bootstrap: Bootstrap) -> pd.DataFrame:
    """One row per ``(label, a, b)``: model a minus model b on every task, the average's p-value and verdict."""
    rows = []
    for label, a, b in comparisons:
        tests = bootstrap.paired(a, b)
        verdict = "distinguishable from 0" if tests["avg"].distinguishable else "not distinguishable from 0"
        rows.append({"comparison": label, **{k: difference_text(t) for k, t in tests.items()},
                     "p (Avg.)": f"p = {tests['avg'].p_value:.3f}", "Avg. difference": verdict})
    return pd.DataFrame(rows)
