"""The cost code's outputs over every shipped config, against snapshots taken before the cost code was restructured
(issue 46): ``estimate``'s table digit for digit, and every job's SLURM request (runtime, mem_mb) on a GPU node and on
a CPU node.

The requests are stored in ``snapshots/requests-<config>.tsv``, one row per rule and request: the row's jobs are
every combination of the wildcard values it lists (``key=value value ...``, one column per wildcard). The test
expands the rows and compares job by job, so a change of one job's request, or a job more or less, fails. A change
that moves a number fails here; a deliberate one re-takes the snapshots with ``DEFSENT_TAKE_SNAPSHOTS=1`` (written
from the code, never at a normal test run) and says why in its commit."""

from __future__ import annotations

import itertools
import os
from collections import defaultdict
from pathlib import Path

import pytest
from conftest import REPO

from defsent_plus.pipeline import job_model, requests
from defsent_plus.pipeline.plan import Plan
from defsent_plus.rehearsal.estimate import estimate, markdown_table, read_config

SNAPSHOTS = Path(__file__).parent / "snapshots"
CONFIGS = sorted((REPO / "configs").glob("*.yaml")) + [REPO / "config.yaml"]
TAKING = bool(os.environ.get("DEFSENT_TAKE_SNAPSHOTS"))
REQUEST = ("gpu_runtime", "gpu_mem_mb", "cpu_runtime", "cpu_mem_mb")
WIDTH = 120  # a row's longest list of values wraps onto lines that start with a tab
HEADER = "\t".join(("rule", *REQUEST, "jobs: every combination of the wildcard values"))

Job = tuple[str, tuple[tuple[str, str], ...]]  # (rule, its wildcards sorted by name)
Requests = dict[Job, tuple[int, ...]]  # a job -> its runtime and mem_mb on a GPU node, then on a CPU node


def job_requests(config: dict) -> Requests:
    """Every projected job of a config with its request on a GPU node and on a CPU node (train: per run, its
    wildcard ``run``, as the snapshots were taken before train's jobs were in the job model)."""
    plan = Plan(config, lambda run, step: {})

    def figures(request) -> tuple[int, ...]:
        return tuple(vars(request)[key] for key in ("runtime", "mem_mb"))

    found = [(("train", (("run", run),)), figures(requests.training_request(config, plan, run, True))
              + figures(requests.training_request(config, plan, run, False))) for run in config["runs"]]
    for rule, kind in job_model.projected_kinds().items():
        if rule != "train":
            found += [((rule, tuple(sorted(job.items()))), figures(kind.request(config, plan, job, True))
                       + figures(kind.request(config, plan, job, False)))
                      for job in job_model.distinct_jobs(kind.jobs(plan))]
    jobs = dict(found)
    assert len(jobs) == len(found), "a job is projected twice"
    return jobs


# ---------------------------------------------------------------------------------------------------- the table


def products(wildcards: list[tuple[tuple[str, str], ...]]) -> list[tuple[tuple[str, tuple[str, ...]], ...]]:
    """Jobs of equal wildcard names as few disjoint products (per name a tuple of values, standing for every
    combination): jobs that differ in one wildcard only merge, name after name, until none does."""
    boxes = {tuple((name, (value,)) for name, value in job) for job in wildcards}
    merged = True
    while merged:
        merged = False
        for i in range(len(next(iter(boxes)))):
            rests: dict[tuple, set[str]] = defaultdict(set)
            for box in boxes:
                rests[box[:i] + box[i + 1:]].update(box[i][1])
            if len(rests) < len(boxes):
                name = next(iter(boxes))[i][0]
                boxes = {rest[:i] + ((name, tuple(sorted(values))),) + rest[i:] for rest, values in rests.items()}
                merged = True
    return sorted(boxes)


def table(jobs: Requests) -> str:
    """The snapshot's text: one row per rule, request and product of wildcard values."""
    groups: dict[tuple, list] = defaultdict(list)
    for (rule, wildcards), request in jobs.items():
        groups[rule, request, tuple(name for name, _ in wildcards)].append(wildcards)
    rows = [HEADER]
    for (rule, request, _), members in sorted(groups.items()):
        for box in products(members):
            for name, values in box:
                assert all(value and not set(value) & set("\t =") for value in values), f"{rule} {name}={values}"
            rows += row_lines([rule, *map(str, request)], sorted(box, key=lambda item: (len(item[1]), item[0])))
    return "\n".join(rows) + "\n"


def row_lines(fixed: list[str], box: list[tuple[str, tuple[str, ...]]]) -> list[str]:
    """A row; its last (longest) list of values goes on over lines that start with a tab, ``WIDTH`` wide."""
    *short, (name, values) = box or [("", ())]
    lines = ["\t".join((*fixed, *(f"{n}={' '.join(v)}" for n, v in short), *([f"{name}={values[0]}"] if box else [])))]
    for value in values[1:]:
        if len(lines[-1]) + 1 + len(value) > WIDTH:
            lines.append("\t" + value)
        else:
            lines[-1] += " " + value
    return lines


def expanded(text: str, where: Path) -> Requests:
    """The jobs a snapshot's rows stand for, each with its request."""
    lines = text.splitlines()
    assert lines and lines[0] == HEADER, f"{where}: the first line is not the header {HEADER!r}"
    rows: list[tuple[int, str]] = []
    for number, line in enumerate(lines[1:], start=2):
        if line.startswith("\t"):
            assert rows, f"{where}:{number}: a continued line before any row"
            rows[-1] = (rows[-1][0], f"{rows[-1][1]} {line[1:]}")
        else:
            rows.append((number, line))
    jobs: Requests = {}
    for number, row in rows:
        rule, *figures = row.split("\t")[: 1 + len(REQUEST)]
        names_values = [column.split("=", 1) for column in row.split("\t")[1 + len(REQUEST):]]
        names = [name for name, _ in names_values]
        for values in itertools.product(*(values.split(" ") for _, values in names_values)):
            job = (rule, tuple(sorted(zip(names, values, strict=True))))
            assert job not in jobs, f"{where}:{number}: {job} is listed twice"
            jobs[job] = tuple(map(int, figures))
    return jobs


def differences(expected: Requests, actual: Requests) -> list[str]:
    """Each job whose request differs, or that only one side has."""
    def shown(job: Job) -> str:
        return f"{job[0]} {dict(job[1])}"

    return sorted([f"{shown(job)}: {expected[job]} -> {actual[job]}" for job in expected.keys() & actual.keys()
                   if expected[job] != actual[job]]
                  + [f"{shown(job)}: in the snapshot, no longer projected" for job in expected.keys() - actual.keys()]
                  + [f"{shown(job)}: projected, not in the snapshot" for job in actual.keys() - expected.keys()])


# ---------------------------------------------------------------------------------------------------- the tests


def test_the_estimate_of_every_shipped_config_is_its_snapshot():
    text = markdown_table({path.name: estimate(read_config(path)) for path in CONFIGS}) + "\n"
    path = SNAPSHOTS / "estimate.md"
    if TAKING:
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"differs from {path}"


@pytest.mark.parametrize("path", CONFIGS, ids=lambda path: path.name)
def test_every_projected_jobs_request_is_its_snapshot(path):
    actual = job_requests(read_config(path))
    snapshot = SNAPSHOTS / f"requests-{path.stem}.tsv"
    if TAKING:
        snapshot.write_text(table(actual), encoding="utf-8")
    found = differences(expanded(snapshot.read_text(encoding="utf-8"), snapshot), actual)
    assert not found, (f"{snapshot}: {len(found)} jobs differ ((GPU runtime, mem_mb, CPU runtime, mem_mb)); "
                       "re-take with DEFSENT_TAKE_SNAPSHOTS=1 only for a deliberate change:\n" + "\n".join(found[:20]))


def test_a_snapshot_table_stands_for_exactly_its_jobs():
    """Rows merge jobs of one rule and request into products of wildcard values; expanding them gives back every
    job with its request, no more."""
    jobs = {("embed", (("encoder", e), ("pooling", p))): (60, 100, 60, 200) for e in "ab" for p in ("mean", "cls")}
    jobs |= {("embed", (("encoder", "c"), ("pooling", "mean"))): (60, 100, 60, 200),
             ("embed", (("encoder", "c"), ("pooling", "cls"))): (60, 101, 60, 200),
             ("train", (("run", "r"),)): (90, 7000, 900, 9000)}
    text = table(jobs)
    assert text.splitlines()[1:] == ["embed\t60\t100\t60\t200\tpooling=cls\tencoder=a b",
                                     "embed\t60\t100\t60\t200\tpooling=mean\tencoder=a b c",
                                     "embed\t60\t101\t60\t200\tencoder=c\tpooling=cls",
                                     "train\t90\t7000\t900\t9000\trun=r"]
    assert expanded(text, Path("t.tsv")) == jobs
    many = {("embed", (("encoder", f"model.step{i}.seed{i}"),)): (60, 100, 60, 200) for i in range(40)}
    wrapped = table(many)
    assert len(wrapped.splitlines()) > 3 and max(map(len, wrapped.splitlines()[1:])) <= WIDTH
    assert expanded(wrapped, Path("t.tsv")) == many
    assert differences(jobs, {**jobs, ("train", (("run", "r"),)): (90, 7001, 900, 9000)}) == [
        "train {'run': 'r'}: (90, 7000, 900, 9000) -> (90, 7001, 900, 9000)"]
