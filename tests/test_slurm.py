"""The SLURM profile on a real single-node SLURM cluster started on this host (root only).

The tiny config, cut to one seed and one step, trains and selects step 1 (``MAIN_TARGET``: EXPECTED_JOBS; each SLURM
job starts Snakemake twice, ~15 s of CPU) through ``--profile profiles/slurm``; every SLURM job must have
completed, the local rules (LOCAL_JOBS) must have run beside Snakemake and never been submitted, exactly the
GPU-capable rules must have asked SLURM for a GPU, and its deterministic outputs must be identical to the same jobs'
outputs in the session's local run of the whole tiny config (``tiny_run``: the cut config's jobs plus more seeds,
steps and spaces beside them).

A second workflow trains step 1 of the one-sentence-batch config through the profile, and its train job is requeued
with ``scontrol requeue`` once it has saved a state: SLURM restarts the same job, which resumes mid-epoch. Both run
in the background from the session's start (``slurm_scenarios.py``); these tests wait for them.

A third trains the same config with a 1-minute time limit and the profile's retries; its training process is stopped
once it has saved a state, so SLURM's time limit ends the job (TIMEOUT), Snakemake resubmits it and the second job
resumes mid-epoch, to the weights of the same training run uninterrupted.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from safetensors.numpy import load_file
from slurm_cluster import SlurmCluster
from slurm_scenarios import MAIN_TARGET, SlurmScenarios, job_rule
from workflow_utils import TRAIN_TARGET, planned_jobs

from defsent_plus.pipeline import dag
from defsent_plus.pipeline.dag import EncoderId

pytestmark = [pytest.mark.slurm, pytest.mark.workflow]

CANDIDATE = EncoderId.candidate("tiny", 1, "amp", 0)
# The candidate's dev embedding runs in its encoder's job group (profiles/slurm: groups, eval_<encoder>), submitted as
# one sbatch job named after the group and its rules; every other job is a submission of its own, but for the rules
# that run on the login node (downloads, the dev score, the selection).
EVAL_GROUP = f"eval_{CANDIDATE.name}_embed"
GPU_RULES = {"entry_space", "train", EVAL_GROUP}
EXPECTED_JOBS = {"dictionary": 1, "entry_space": 1, "train": 1, EVAL_GROUP: 1}
LOCAL_JOBS = {"acquire_data": 1, "pin_model": 1, "dev_score": 1, "select_best": 1, "keep_best": 1}


@pytest.fixture(scope="module")
def scenarios(slurm_scenarios) -> SlurmScenarios:
    """The session's SLURM workflows (``tests/slurm_scenarios.py``), finished."""
    if not isinstance(slurm_scenarios, SlurmScenarios):
        pytest.skip(slurm_scenarios or "the SLURM scenarios were not started")
    return slurm_scenarios.wait()


@pytest.fixture(scope="module")
def slurm_run(scenarios) -> tuple[Path, list[dict[str, str]]]:
    """The cut tiny workflow's SLURM run: its workdir and slurmctld's job records."""
    main = scenarios.main
    if main["returncode"] != 0:
        raise AssertionError(f"SLURM run failed:\n{main['output'][-6000:]}\n{scenarios.cluster.logs()}")
    return main["workdir"], main["jobs"]


@pytest.fixture(scope="module")
def requeued_run(scenarios) -> dict:
    return scenarios.requeued


@pytest.fixture(scope="module")
def timed_out_run(scenarios) -> dict:
    return scenarios.timed_out


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
    assert planned_jobs(workdir, targets=[MAIN_TARGET]) == {}
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
    for space in ("amp", "ac"):
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


# ---------------------------------------------------------------- a requeued train job resumes


def test_a_requeued_training_job_resumes_and_the_workflow_completes(requeued_run):
    """The same SLURM job ran twice (slurmctld's restart, not Snakemake's retry: ``--retries 0``), the second run
    continued from the first's saved state, and Snakemake saw the workflow through."""
    workdir, watched, explain = requeued_run["workdir"], requeued_run["watched"], requeued_run["explain"]
    assert requeued_run["returncode"] == 0, f"Snakemake failed; train job {watched}:\n{explain()}"
    assert watched.requeued_at is not None, f"the train job never ran with a saved state: {watched}\n{explain()}"
    trains = [job for job in requeued_run["jobs"] if job_rule(job) == "train"]
    assert len(trains) == 1, f"the train job was submitted {len(trains)} times: {trains}"
    train = trains[0]
    assert train["Requeue"] == "1", f"the profile's slurm-requeue did not reach sbatch: {train}"
    assert int(train["Restarts"]) >= 1 and train["JobState"] == "COMPLETED", (train, explain())
    states = [state for _, state in watched.states]
    assert states[-1] == "COMPLETED" and "PENDING" in states[states.index("RUNNING"):], watched
    summary = json.loads((workdir / TRAIN_TARGET).read_text())
    assert summary.get("resumed_after_steps"), f"the requeued job started over: {summary}\n{explain()}"
    log = (workdir / dag.log_file("tiny", "step1", "amp", "seed0", "train")).read_text()
    assert f"resuming training from the state saved after step {summary['resumed_after_steps'][0]}" in log
    assert not any((workdir / "results" / ".resume").iterdir()), "the state outlived the job's outputs"
    print(f"requeue: {watched}, pended {watched.pended():.1f}s, run {requeued_run['seconds']:.0f}s, "
          f"resumed after steps {summary['resumed_after_steps']}")


# ---------------------------------------------------------------- a train job killed at its time limit resumes


def test_a_train_job_killed_at_its_time_limit_is_resubmitted_and_resumes(timed_out_run):
    """SLURM ended the first train job at its 1-minute limit (TIMEOUT: the stopped training got SIGCONT and SIGTERM
    and saved its state), the profile's retries submitted a second job with twice the runtime, which continued from
    the saved state mid-epoch, to the weights and losses of the same training uninterrupted."""
    run = timed_out_run
    workdir, watched, explain = run["workdir"], run["watched"], run["explain"]
    assert run["returncode"] == 0, f"Snakemake failed; train jobs {watched}:\n{explain()}"
    assert watched.stopped_at is not None, f"the train job never ran with a saved state: {watched}\n{explain()}"
    trains = sorted((job for job in run["jobs"] if job_rule(job) == "train"), key=lambda job: int(job["JobId"]))
    assert {job_rule(job) for job in run["jobs"]} == {"train"}, "the copied inputs were up to date"
    assert [job["JobState"] for job in trains] == ["TIMEOUT", "COMPLETED"], (trains, watched, explain())
    first, second = trains
    assert [first["TimeLimit"], second["TimeLimit"]] == ["00:01:00", "00:02:00"], "attempt x the runtime asked"
    assert first["Restarts"] == "0" and "gpu:1" in second.get("TresPerJob", ""), (first, second)
    assert f"Time limit exhausted for JobId={first['JobId']}" in run["slurmctld_log"], run["slurmctld_log"][-3000:]
    output = (workdir / "snakemake.out").read_text()
    assert "SLURM status is: 'TIMEOUT'" in output and "Trying to restart job" in output, explain()
    summary = json.loads((workdir / TRAIN_TARGET).read_text())
    resumed = summary.get("resumed_after_steps")
    assert resumed and resumed[0] > 0, f"the resubmitted job started over: {summary}\n{explain()}"
    log = (workdir / dag.log_file("tiny", "step1", "amp", "seed0", "train")).read_text()
    assert f"resuming training from the state saved after step {resumed[0]}" in log, log[-3000:]
    assert not any((workdir / "results" / ".resume").iterdir()), "the state outlived the job's outputs"
    uninterrupted = run["uninterrupted"]
    assert run["uninterrupted_returncode"] == 0, run["uninterrupted_output"][-6000:]
    local_summary = json.loads((uninterrupted / TRAIN_TARGET).read_text())
    assert "resumed_after_steps" not in local_summary
    for key in ("steps", "loss_first", "loss_last", "loss_mean", "loss_curve"):
        assert summary[key] == local_summary[key], key
    model, local_model = (load_file(d / dag.trained_model(CANDIDATE) / "model.safetensors")
                          for d in (workdir, uninterrupted))
    assert model.keys() == local_model.keys()
    for name in model:
        np.testing.assert_array_equal(model[name], local_model[name], err_msg=name)
    print(f"timeout: {watched}, run {run['seconds']:.0f}s, resumed after steps {resumed}")

