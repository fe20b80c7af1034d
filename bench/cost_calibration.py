"""Calibrate the cost model: a config's rehearsal projects each rule's CPU seconds for the real config; a real run of
that config on the same machine measures them. Prints, per rule, jobs, measured and projected seconds (sums over the
rule's jobs, one thread a job), the error and the rule's share of the run, then the total; and the measured CPU
seconds over wall seconds (``load``: below 1, the jobs waited, e.g. for another process on their core). Snakemake's
benchmarks sample CPU time every 0.5 s for 15 s, then every 30 s: the CPU seconds of a job of 15-45 s can miss
most of its end, so the model projects wall seconds.

    taskset -c 0 .venv/bin/defsent-plus rehearse config.yaml -- --cores 1   # rehearsals/config/results/cost_sheet.tsv
    taskset -c 1 bash bin/run --cores 1                                      # the real run, with its benchmarks/
    .venv/bin/python bench/cost_calibration.py rehearsals/config .           # the rehearsal's directory, the real one's

One job at a time, each run on a core of its own: two jobs sharing a core measure how the scheduler interleaved them,
not their work (docs/rehearsal.md).

The real run's jobs are read from Snakemake's own records (defsent_plus.rehearsal.records: its extended benchmarks,
which the profiles ask for, and its metadata); a job run twice counts once (its last benchmark).
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

import pandas as pd

from defsent_plus.io import read_tsv_table
from defsent_plus.rehearsal.records import benchmark_of, executed_jobs


def measured_seconds(workdir: Path) -> dict[str, tuple[int, float, float]]:
    """Rule -> (jobs, wall seconds summed, CPU seconds summed) of a real run's benchmarked jobs."""
    totals: dict[str, list] = defaultdict(lambda: [0, 0.0, 0.0])
    for job in executed_jobs(workdir):
        benchmark = benchmark_of(workdir, job)
        totals[job.rule][0] += 1
        totals[job.rule][1] += benchmark["seconds"]
        totals[job.rule][2] += benchmark["cpu_seconds"]
    return {rule: tuple(values) for rule, values in totals.items()}


def calibration(rehearsal: Path, real: Path) -> pd.DataFrame:
    """Per rule of the rehearsal's cost sheet: the real run's jobs, measured and projected seconds, the error, the
    rule's share of the measured run and its CPU load; then the total."""
    sheet = read_tsv_table(rehearsal / "results" / "cost_sheet.tsv")
    measured = measured_seconds(real)
    rows = []
    for row in sheet.itertuples():
        jobs, seconds, cpu = measured.get(row.rule, (0, float("nan"), float("nan")))
        rows.append({"rule": row.rule, "real_jobs": jobs, "projected_jobs": row.real_jobs, "measured_s": seconds,
                     "projected_s": row.real_cpu_hours * 3600, "measured_cpu_s": cpu})
    table = pd.DataFrame(rows)
    total = {"rule": "total", **{column: table[column].sum() for column in table.columns if column != "rule"}}
    table = pd.concat([table, pd.DataFrame([total])], ignore_index=True)
    table["error"] = table["projected_s"] / table["measured_s"] - 1
    table["share"] = table["measured_s"] / total["measured_s"]
    table["load"] = table.pop("measured_cpu_s") / table["measured_s"]
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rehearsal", type=Path, help="the rehearsal's working directory (rehearsals/<config>)")
    parser.add_argument("real", type=Path, help="the real run's working directory")
    args = parser.parse_args()
    table = calibration(args.rehearsal, args.real)
    print(table.to_markdown(index=False, floatfmt=".3g"))


if __name__ == "__main__":
    main()
