"""Calibrate the cost model: a config's rehearsal projects each rule's CPU seconds for the real config; a real run of
that config on the same machine measures them. Prints, per rule, jobs, measured and projected seconds (sums over the
rule's jobs, one thread a job) and the error, then the total.

    .venv/bin/defsent-plus rehearse config.yaml                      # rehearsals/config/results/cost_sheet.tsv
    bash bin/run                                                     # the real run, with its benchmarks/
    .venv/bin/python bench/cost_calibration.py rehearsals/config .   # the rehearsal's directory, the real one's

The real run's jobs are read from its Snakemake logs (every invocation's), each with its benchmark file; a job run
twice counts once (its last benchmark).
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

import pandas as pd

from defsent_plus.io import read_tsv_table
from defsent_plus.rehearsal.costs import benchmark_of, executed_jobs


def measured_seconds(workdir: Path) -> dict[str, tuple[int, float]]:
    """Rule -> (jobs, wall seconds summed) of a real run's benchmarked jobs."""
    totals: dict[str, list] = defaultdict(lambda: [0, 0.0])
    for job in executed_jobs(workdir):
        if (workdir / job.benchmark).is_file():
            totals[job.rule][0] += 1
            totals[job.rule][1] += benchmark_of(workdir, job)["seconds"]
    return {rule: (jobs, seconds) for rule, (jobs, seconds) in totals.items()}


def calibration(rehearsal: Path, real: Path) -> pd.DataFrame:
    sheet = read_tsv_table(rehearsal / "results" / "cost_sheet.tsv")
    measured = measured_seconds(real)
    rows = []
    for row in sheet.itertuples():
        jobs, seconds = measured.get(row.rule, (0, float("nan")))
        projected = row.real_cpu_hours * 3600
        rows.append({"rule": row.rule, "real_jobs": jobs, "projected_jobs": row.real_jobs, "measured_s": seconds,
                     "projected_s": projected, "error": projected / seconds - 1 if seconds else float("nan")})
    table = pd.DataFrame(rows)
    total = {"rule": "total", "real_jobs": table["real_jobs"].sum(), "projected_jobs": table["projected_jobs"].sum(),
             "measured_s": table["measured_s"].sum(), "projected_s": table["projected_s"].sum()}
    total["error"] = total["projected_s"] / total["measured_s"] - 1
    return pd.concat([table, pd.DataFrame([total])], ignore_index=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rehearsal", type=Path, help="the rehearsal's working directory (rehearsals/<config>)")
    parser.add_argument("real", type=Path, help="the real run's working directory")
    args = parser.parse_args()
    table = calibration(args.rehearsal, args.real)
    print(table.to_markdown(index=False, floatfmt=".3g"))


if __name__ == "__main__":
    main()
