"""Each rehearsal job's start and each rule's seconds per unit of work, fitted on its measurements at one or two
work sizes (the model, :mod:`defsent_plus.rehearsal.costs`)."""

from __future__ import annotations

import statistics
from collections import defaultdict

from defsent_plus.rehearsal.units import unit_of


def start_seconds(rows: list[dict]) -> float:
    """The fixed part of a job (start, imports, loading): the intercept of seconds against sentences over the
    embedding jobs."""
    import numpy as np

    points = [(r["units"], r["seconds"]) for r in rows if unit_of(r["rule"]).fits_start and r["units"] > 0]
    if len({u for u, _ in points}) < 2:
        return min((s for r in rows for s in [r["seconds"]] if unit_of(r["rule"]).encodes), default=0.0)
    slope, intercept = np.polyfit([u for u, _ in points], [s for _, s in points], 1)
    return max(float(intercept), 0.0)


def with_larger_size(rows: list[dict], larger: list[dict]) -> list[dict]:
    """Each job's row with its measurement at the rehearsal's second work size (``larger_units``, ``larger_seconds``,
    ``larger_rss_mb``), matched by its benchmark file; a job the second run lacks keeps its row."""
    by_benchmark = {r["benchmark"]: r for r in larger}
    paired = []
    for row in rows:
        other = by_benchmark.get(row.get("benchmark"))
        paired.append(row if other is None else {**row, "larger_units": other["units"],
                                                 "larger_seconds": other["seconds"],
                                                 "larger_work_seconds": other.get("work_seconds"),
                                                 "larger_rss_mb": other["max_rss_mb"]})
    return paired


def measured_twice(row: dict) -> bool:
    """Whether a job was measured at two work sizes, its work grown between them."""
    return bool(row["units"]) and row.get("larger_units", 0.0) > row["units"]


def pooled_lines(jobs: list[dict]) -> list[tuple[float, float]]:
    """(start seconds, seconds per unit) of jobs measured at two work sizes: one rate fitted by least squares over
    all of them, each job with its own start (fixed effects), so that a job whose work hardly grew (STS-B dev's few
    sentences) weighs little beside one whose work grew much; rate and starts at least 0."""
    import numpy as np

    design, seconds = [], []
    for i, row in enumerate(jobs):
        for work, measured in ((row["units"], row["seconds"]), (row["larger_units"], row["larger_seconds"])):
            design.append([*(1.0 if j == i else 0.0 for j in range(len(jobs))), work])
            seconds.append(measured)
    solution, *_ = np.linalg.lstsq(np.array(design), np.array(seconds), rcond=None)
    rate = max(float(solution[-1]), 0.0)
    return [(max((row["seconds"] + row["larger_seconds"] - rate * (row["units"] + row["larger_units"])) / 2, 0.0),
             rate) for row in jobs]


def job_line(row: dict) -> tuple[float, float] | None:
    """(start seconds, seconds per unit) of one job measured at two work sizes: the line through its two
    measurements; None where it was not."""
    return pooled_lines([row])[0] if measured_twice(row) else None


def fixed_seconds(row: dict) -> float:
    """Seconds of a job without a work unit: its measurement at the larger size where there is one."""
    return row.get("larger_seconds", row["seconds"])


def on_own_clock(row: dict) -> dict:
    """A job measured twice, its work's seconds in place of its wall seconds where its record times its work at both
    sizes: the rate then comes from the work alone, not from two wall times whose starts (a few seconds each, loading
    Python and the model) vary by as much as the work grew (the entry space of all of dataset a: a rate from the
    wall times projected 670 s, from the work's 1,013 s; measured on an idle machine 1,096 s). The start stays the
    wall time's remainder."""
    if row.get("work_seconds") is None or row.get("larger_work_seconds") is None:
        return row
    rate = (row["larger_work_seconds"] - row["work_seconds"]) / (row["larger_units"] - row["units"])
    start = (row["seconds"] + row["larger_seconds"] - rate * (row["units"] + row["larger_units"])) / 2
    return {**row, "seconds": start + rate * row["units"], "larger_seconds": start + rate * row["larger_units"]}


def job_lines(jobs: list[dict], start: float) -> list[tuple[float, float]]:
    """(start, seconds per unit) of each job of a rule: where it was measured at two sizes, the rule's rate for its
    model (and training method: an example of SimCSE costs two encoder passes, of SLT-FAI three, of DefSent+ one)
    pooled over those jobs (pooled_lines) and its own start; else the common ``start`` and the rule's median rate
    over its one-size jobs; a job without work: its seconds, rate 0."""
    lines: dict[int, tuple[float, float]] = {}
    by_model: dict[tuple[str | None, str | None], list[int]] = defaultdict(list)
    for i, row in enumerate(jobs):
        if measured_twice(row):
            by_model[row["model"], row.get("method")].append(i)
    for indices in by_model.values():
        lines.update(zip(indices, pooled_lines([on_own_clock(jobs[i]) for i in indices]), strict=True))
    rates = [(r["seconds"] - start) / r["units"] for i, r in enumerate(jobs) if i not in lines and r["units"] > 0]
    rate = max(statistics.median(rates), 0.0) if rates else 0.0
    return [lines[i] if i in lines else (start, rate) if rate and r["units"] else (fixed_seconds(r), 0.0)
            for i, r in enumerate(jobs)]
