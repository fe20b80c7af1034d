"""What a real run cost and what its training did, from its own records (docs/results.md, "Full-data MiniLM run").

    .venv/bin/python bench/full_scale_report.py WORKDIR --run minilm_full [--cost-sheet rehearsals/…/cost_sheet.tsv]

Prints markdown: every job Snakemake ran in WORKDIR with its wall and CPU seconds and peak memory (its benchmark
file), the same per rule beside the cost sheet's projection for this machine (its error), and each train job's loss
curve against ln of the number of entries it ranks (chance level).
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import pandas as pd

from defsent_plus.pipeline import dag
from defsent_plus.rehearsal.records import executed_jobs


def job_table(workdir: Path) -> pd.DataFrame:
    """One row per job that ran in ``workdir``: rule, wildcards, seconds, CPU seconds, peak MB (its benchmark)."""
    rows = [{"rule": job.rule, "job": ", ".join(f"{k}={v}" for k, v in job.wildcards.items()),
             **job.measured} for job in executed_jobs(workdir)]
    return pd.DataFrame(rows).sort_values(["rule", "job"], ignore_index=True)


def against_projection(jobs: pd.DataFrame, cost_sheet: Path) -> pd.DataFrame:
    """Measured seconds per rule beside the cost sheet's projected seconds (``real_cpu_hours``) and the error."""
    measured = jobs.groupby("rule").agg(jobs=("job", "size"), seconds=("seconds", "sum"),
                                        cpu_seconds=("cpu_seconds", "sum"))
    sheet = pd.read_csv(cost_sheet, sep="\t", comment="#").set_index("rule")
    table = measured.join((sheet["real_cpu_hours"] * 3600).rename("projected_seconds"), how="left")
    table["error_vs_wall"] = table["projected_seconds"] / table["seconds"] - 1
    table["error_vs_cpu"] = table["projected_seconds"] / table["cpu_seconds"] - 1
    return table.reset_index()


def loss_curves(workdir: Path, run: str) -> pd.DataFrame:
    """Each of the run's train jobs: steps, first and last loss, its ten segment means, and ln of the entries it
    ranks (its classes: the loss of a uniform guess)."""
    rows = []
    for summary in sorted((workdir / "results" / run).glob("step*/*/seed*/train.json")):
        train = json.loads(summary.read_text(encoding="utf-8"))
        classes = train["classes"]
        candidate = summary.parent.relative_to(workdir / "results")
        rows.append({"candidate": str(candidate), "steps": train["steps"], "examples": train["examples"],
                     "seconds": loop_seconds(workdir, candidate), "ln_entries": math.log(classes),
                     "entries": classes, "first": train["loss_first"], "last": train["loss_last"],
                     "segments": " ".join(f"{x:.2f}" for x in train["loss_curve"])})
    return pd.DataFrame(rows)


def loop_seconds(workdir: Path, candidate: Path) -> float:
    """A train job's loop seconds: its work clock (results/ holds no timing)."""
    clock = workdir / dag.work_clock_file(*candidate.parts, "train")
    return json.loads(clock.read_text(encoding="utf-8"))["seconds"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workdir", type=Path)
    parser.add_argument("--run", required=True)
    parser.add_argument("--cost-sheet", type=Path)
    args = parser.parse_args(argv)
    jobs = job_table(args.workdir)
    print("## Jobs\n\n" + jobs.to_markdown(index=False, floatfmt=".1f") + "\n")
    print(f"Longest job: {jobs.loc[jobs['seconds'].idxmax(), 'rule']} ({jobs['seconds'].max():.0f} s); peak memory: "
          f"{jobs['max_rss_mb'].max():.0f} MB ({jobs.loc[jobs['max_rss_mb'].idxmax(), 'rule']})\n")
    if args.cost_sheet:
        print("## Per rule against the cost sheet\n\n"
              + against_projection(jobs, args.cost_sheet).to_markdown(index=False, floatfmt=".2f") + "\n")
    print("## Training\n\n" + loss_curves(args.workdir, args.run).to_markdown(index=False, floatfmt=".3f"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
