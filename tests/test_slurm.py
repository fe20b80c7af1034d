"""The SLURM profile on a real single-node SLURM cluster started on this host (root only).

The tiny config, cut to one seed, one step, one pooling and two analysed spaces (EXPECTED_JOBS; each SLURM job
starts Snakemake twice, ~15 s), runs through ``--profile profiles/slurm``; every SLURM job must have
completed, the local rules (LOCAL_JOBS) must have run beside Snakemake and never been submitted, exactly the
GPU-capable rules must have asked SLURM for a GPU, and its deterministic outputs must
be identical to the same jobs' outputs in the session's local run of the whole tiny config (``tiny_run``:
the cut config's jobs plus more seeds, steps and spaces beside them).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import REPO
from safetensors.numpy import load_file
from slurm_cluster import SlurmCluster, install_reason, shadow_reason
from workflow_utils import planned_jobs, workflow_env, write_tiny_config

from defsent_plus.pipeline import dag
from defsent_plus.pipeline.dag import EncoderId

pytestmark = [pytest.mark.slurm, pytest.mark.workflow]

CANDIDATE = EncoderId.candidate("tiny", 1, "amp", 0)
GPU_RULES = {"entry_space", "train", "embed"}
EXPECTED_JOBS = {"dictionary": 1, "entry_space": 1, "transform_space": 1, "isotropy": 1, "train": 1, "embed": 4,
                 "dev_score": 2, "score": 2}  # scores and their embeddings: base and final
LOCAL_JOBS = {"acquire_data": 1, "pin_model": 1, "select_best": 1, "keep_best": 1, "sts_table": 1, "steps_report": 1,
              "compare_sts": 1, "summary": 1, "all": 1}  # downloads, selection, tables: login node only


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("the SLURM test cluster needs root (slurmd, munged)")
    reason = install_reason() or shadow_reason()
    if reason:
        pytest.skip(reason)
    cluster = SlurmCluster(tmp_path_factory.mktemp("slurm"))
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


def write_config(workdir: Path, model: Path) -> None:
    """The tiny config cut to its first step's first seed, one analysed transform and one pooling."""
    config = write_tiny_config(workdir, model)
    tiny = config["runs"]["tiny"]
    tiny.update(seeds=tiny["seeds"][:1], steps=tiny["steps"][:1])
    config["entry_space"]["analyse"] = ["amp", "amp.whiten"]
    config["evaluation"]["poolings"] = config["evaluation"]["poolings"][:1]
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))


@pytest.fixture(scope="module")
def slurm_run(tmp_path_factory, tiny_bert, cluster) -> tuple[Path, list[dict[str, str]]]:
    """The workflow through the project's SLURM profile; returns the workdir and slurmctld's job records."""
    workdir = tmp_path_factory.mktemp("slurm_run")
    write_config(workdir, tiny_bert)
    command = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir),
               "--configfile", str(workdir / "config.yaml"), "--profile", str(REPO / "profiles" / "slurm"),
               "--slurm-init-seconds-before-status-checks", "2", "--retries", "0"]
    env = workflow_env() | {"SLURM_CONF": cluster.env["SLURM_CONF"], "HF_HUB_OFFLINE": "1"}  # as the local run's
    result = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True, timeout=900)
    if result.returncode != 0:
        raise AssertionError(f"SLURM run failed:\n{result.stderr[-6000:]}\n{cluster.logs()}")
    return workdir, cluster.jobs()


def job_rule(job: dict[str, str]) -> str:
    """The rule of a job submitted by the plugin (its --comment is rule_<rule>[_wildcards_...])."""
    return job["Comment"].removeprefix("rule_").split("_wildcards_")[0]


def local_jobs(workdir: Path) -> dict[str, int]:
    """Rule -> count of the jobs Snakemake's log shows it ran itself ("localrule <name>:", "localcheckpoint ...")."""
    (log,) = (workdir / ".snakemake" / "log").glob("*.snakemake.log")
    rules = re.findall(r"^local(?:rule|checkpoint) (\w+):$", log.read_text(), flags=re.MULTILINE)
    return {rule: rules.count(rule) for rule in rules}


def test_every_job_ran_on_slurm_and_completed(slurm_run):
    workdir, jobs = slurm_run
    assert jobs and {job["JobState"] for job in jobs} == {"COMPLETED"}
    assert {job["Partition"] for job in jobs} == {SlurmCluster.partition}
    rules = {}
    for job in jobs:
        rules[job_rule(job)] = rules.get(job_rule(job), 0) + 1
    assert rules == EXPECTED_JOBS
    assert planned_jobs(workdir) == {}
    assert local_jobs(workdir) == LOCAL_JOBS
    assert list((workdir / "logs" / "slurm" / "rule_train").rglob("*.log")), "sbatch logs under logs/slurm"


def test_exactly_the_gpu_rules_requested_a_gpu(slurm_run):
    _, jobs = slurm_run
    for job in jobs:
        asks_gpu = "gpu:1" in job.get("TresPerJob", "")
        assert asks_gpu == (job_rule(job) in GPU_RULES), (job_rule(job), job.get("TresPerJob"))


def test_outputs_equal_the_local_run(slurm_run, tiny_run):
    workdir, _ = slurm_run
    for name in ("a", "b", "c"):
        pd.testing.assert_frame_equal(pd.read_parquet(workdir / dag.dictionary_file(f"{name}.parquet")),
                                      pd.read_parquet(tiny_run / dag.dictionary_file(f"{name}.parquet")))
    for space in ("amp", "ac", "amp.whiten"):
        path = dag.space_file(EncoderId.base("tiny"), "a", space)
        np.testing.assert_array_equal(np.load(workdir / path), np.load(tiny_run / path), err_msg=path)
    summary, local_summary = (json.loads((d / dag.train_summary(CANDIDATE)).read_text())
                              for d in (workdir, tiny_run))
    for key in ("steps", "loss_first", "loss_last", "loss_mean", "loss_curve"):
        assert summary[key] == local_summary[key], key
    model, local_model = (load_file(d / dag.trained_model(CANDIDATE) / "model.safetensors")
                          for d in (workdir, tiny_run))
    assert model.keys() == local_model.keys()
    for name in model:
        np.testing.assert_array_equal(model[name], local_model[name], err_msg=name)
    best, local_best = (json.loads((d / dag.best_json("tiny", 1)).read_text()) for d in (workdir, tiny_run))
    seed0 = next(c for c in local_best["candidates"] if c["space"] == "amp" and c["seed"] == 0)
    assert best["best"]["seed"] == 0 and best["best"]["dev_score"] == seed0["dev_score"]
