"""The README's measured table, generated from a run's comparison files (never typed by hand): every starting
model and dev-selected model of ``compare/sts.tsv``, then each run's paired difference against its start from
``compare/sts_uncertainty.tsv`` (the average with its interval, n.s. where it covers 0).

    .venv/bin/python -m defsent_plus.evaluation.headline results/compare [--pooling mean]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from defsent_plus.io import read_tsv_table
from defsent_plus.names import STS_COLUMNS

TASKS = tuple(STS_COLUMNS)
HEADER = ("model", *STS_COLUMNS.values())


def score_rows(scores: pd.DataFrame) -> list[list[str]]:
    """Starting models and dev-selected models, as the comparison labels them."""
    shown = scores[scores["run"].isna() | scores["model"].str.endswith(", dev-selected")]
    return [[row["model"], *(f"{float(row[task]):.2f}" for task in TASKS)] for _, row in shown.iterrows()]


def difference_cell(row: pd.Series, with_interval: bool) -> str:
    mark = "" if row["distinguishable"] else " n.s."
    bounds = f" [{row['low']:+.2f}, {row['high']:+.2f}]" if with_interval else ""
    return f"{row['value']:+.2f}{bounds}{mark}".replace("-", "−")


def paired_rows(uncertainty: pd.DataFrame, pooling: str) -> list[list[str]]:
    """Each run's dev-selected model minus its start: the average with its interval, the tasks' values."""
    paired = uncertainty[(uncertainty["kind"] == "paired") & (uncertainty["pooling"] == pooling)]
    rows = []
    for comparison, tests in paired.groupby("model", sort=False):
        if "its start" not in comparison:
            continue
        by_task = tests.set_index("task")
        rows.append([f"{comparison}, paired {uncertainty['level'].iloc[0]:.0%} interval",
                     *(difference_cell(by_task.loc[task], task == "avg") for task in TASKS)])
    return rows


def headline_table(compare_dir: str | Path, pooling: str = "mean") -> str:
    """The markdown table of ``compare_dir``'s scores and paired differences."""
    compare_dir = Path(compare_dir)
    scores = read_tsv_table(compare_dir / "sts.tsv")
    rows = score_rows(scores) + paired_rows(read_tsv_table(compare_dir / "sts_uncertainty.tsv"), pooling)
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    return "\n".join([*lines, *("| " + " | ".join(row) + " |" for row in rows)]) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("compare_dir", type=Path)
    parser.add_argument("--pooling", default="mean")
    args = parser.parse_args()
    print(headline_table(args.compare_dir, args.pooling), end="")


if __name__ == "__main__":
    main()
