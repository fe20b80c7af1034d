"""The cost code's outputs over every shipped config, against snapshots taken before the cost code was restructured
(issue 46): ``estimate``'s table digit for digit, and every job's SLURM request (runtime, mem_mb) on a GPU node and on
a CPU node. A change that moves a number fails here; a deliberate one re-takes the snapshots with
``DEFSENT_TAKE_SNAPSHOTS=1`` and says why in its commit."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import REPO

from defsent_plus.pipeline import job_model, requests
from defsent_plus.pipeline.plan import Plan
from defsent_plus.rehearsal.estimate import estimate, markdown_table, read_config

SNAPSHOTS = Path(__file__).parent / "snapshots"
CONFIGS = sorted((REPO / "configs").glob("*.yaml")) + [REPO / "config.yaml"]


def matches_snapshot(name: str, text: str) -> None:
    path = SNAPSHOTS / name
    if os.environ.get("DEFSENT_TAKE_SNAPSHOTS"):
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"differs from {path}"


def job_requests(config: dict) -> dict[str, list]:
    """Every projected job of a config with its request on a GPU node and on a CPU node (train: per run, as the
    snapshots were taken before train's jobs were in the job model)."""
    plan = Plan(config, lambda run, step: {})
    jobs: dict[str, list] = {"train": [[run, *(vars(requests.training_request(config, plan, run, gpu))[key]
                                              for gpu in (True, False) for key in ("runtime", "mem_mb"))]
                                       for run in config["runs"]]}
    for rule, kind in job_model.projected_kinds().items():
        if rule != "train":
            jobs[rule] = [[job, *(vars(kind.request(config, plan, job, gpu))[key]
                                  for gpu in (True, False) for key in ("runtime", "mem_mb"))]
                          for job in job_model.distinct_jobs(kind.jobs(plan))]
    return jobs


def test_the_estimate_of_every_shipped_config_is_its_snapshot():
    table = markdown_table({path.name: estimate(read_config(path)) for path in CONFIGS})
    matches_snapshot("estimate.md", table + "\n")


@pytest.mark.parametrize("path", CONFIGS, ids=lambda path: path.name)
def test_every_projected_jobs_request_is_its_snapshot(path):
    text = json.dumps(job_requests(read_config(path)), indent=1, sort_keys=True) + "\n"
    matches_snapshot(f"requests-{path.stem}.json", text)
