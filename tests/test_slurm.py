"""The SLURM profile on a real single-node SLURM cluster started on this host (root only).

The tiny config, cut to one seed, one step, one pooling and two analysed spaces (EXPECTED_JOBS; each SLURM job
starts Snakemake twice, ~15 s), runs through ``--profile profiles/slurm``; every SLURM job must have
completed, the local rules (LOCAL_JOBS) must have run beside Snakemake and never been submitted, exactly the
GPU-capable rules must have asked SLURM for a GPU, and its deterministic outputs must
be identical to the same jobs' outputs in the session's local run of the whole tiny config (``tiny_run``:
the cut config's jobs plus more seeds, steps and spaces beside them).

A second workflow trains step 1 of the one-sentence-batch config through the profile, and its train job is requeued
with ``scontrol requeue`` once it has saved a state: SLURM restarts the same job, which resumes mid-epoch.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import REPO
from safetensors.numpy import load_file
from slurm_cluster import SlurmCluster, install_reason, shadow_reason
from workflow_utils import (
    TRAIN_TARGET,
    one_sentence_batches,
    planned_jobs,
    snakemake,
    workflow_env,
    write_tiny_config,
)

from defsent_plus.pipeline import dag
from defsent_plus.pipeline.dag import EncoderId
from defsent_plus.training.resume import STATE_FILE

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


def slurm_command(workdir: Path, *targets: str) -> list[str]:
    """Snakemake through the project's SLURM profile, polling the queue early, with no retry of a failed job."""
    return [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir),
            "--configfile", str(workdir / "config.yaml"), "--profile", str(REPO / "profiles" / "slurm"),
            "--slurm-init-seconds-before-status-checks", "2", "--retries", "0", *targets]


def slurm_env(cluster: SlurmCluster) -> dict[str, str]:
    return workflow_env() | {"SLURM_CONF": cluster.env["SLURM_CONF"], "HF_HUB_OFFLINE": "1"}  # as the local run's


def jobs_of(cluster: SlurmCluster, workdir: Path) -> list[dict[str, str]]:
    """slurmctld's records of the jobs submitted from ``workdir`` (the module's cluster runs several workflows)."""
    return [job for job in cluster.jobs() if Path(job.get("WorkDir", "")).resolve() == workdir.resolve()]


@pytest.fixture(scope="module")
def started_slurm_run(tmp_path_factory, tiny_bert, cluster) -> tuple[Path, subprocess.Popen]:
    """The cut tiny workflow through the project's SLURM profile, started in the background: the requeue scenario
    runs meanwhile, so the two workflows' waits for the plugin's status checks (up to 40 s each) overlap."""
    workdir = tmp_path_factory.mktemp("slurm_run")
    write_config(workdir, tiny_bert)
    with open(workdir / "snakemake.out", "w") as out:
        process = subprocess.Popen(slurm_command(workdir), cwd=workdir, env=slurm_env(cluster), stdout=out,
                                   stderr=subprocess.STDOUT)
    yield workdir, process
    if process.poll() is None:
        process.kill()
        process.wait()


@pytest.fixture(scope="module")
def slurm_run(started_slurm_run, requeued_run, cluster) -> tuple[Path, list[dict[str, str]]]:
    """The cut tiny workflow's SLURM run, finished; returns the workdir and slurmctld's job records."""
    workdir, process = started_slurm_run
    if process.wait(timeout=900) != 0:
        output = (workdir / "snakemake.out").read_text()
        raise AssertionError(f"SLURM run failed:\n{output[-6000:]}\n{cluster.logs()}")
    return workdir, jobs_of(cluster, workdir)


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


# ---------------------------------------------------------------- a requeued train job resumes


REQUEUE_DEFINITIONS = 600  # ~720 one-sentence steps: ~650 (2-5 s) still to train when the requeue lands
REQUEUE_EVERY_STEPS = 50  # the first state a fraction of a second into the training
REQUEUE_TIMEOUT = 300
BASE_SPACE = dag.space_file(EncoderId.base("tiny"), "a", "amp")  # the train job's inputs: dictionary, entry space


@dataclass
class Watched:
    """What the watcher saw of the train job: its id, its states as they changed (seconds since Snakemake started)
    and when it was requeued and released."""

    job_id: str | None = None
    states: list[tuple[float, str]] = field(default_factory=list)
    requeued_at: float | None = None
    released_at: float | None = None

    def record(self, at: float, state: str) -> None:
        if not self.states or self.states[-1][1] != state:
            self.states.append((round(at, 1), state))

    def pended(self) -> float:
        """Seconds from the requeue to the job's next RUNNING state."""
        return next(at for at, state in self.states if at > self.requeued_at and state == "RUNNING") - self.requeued_at


def train_job(cluster: SlurmCluster, workdir: Path) -> dict[str, str] | None:
    return next((job for job in jobs_of(cluster, workdir) if job_rule(job) == "train"), None)


def saved_state(workdir: Path) -> bool:
    return any((workdir / "results" / ".resume").glob(f"*/{STATE_FILE}"))


def scontrol(cluster: SlurmCluster, *args: str) -> None:
    result = subprocess.run(["scontrol", *args], env=cluster.env, capture_output=True, text=True)
    if result.returncode != 0:
        raise AssertionError(f"scontrol {' '.join(args)}: {result.stderr}\n{cluster.logs()}")


def watch_and_requeue(cluster: SlurmCluster, workdir: Path, workflow: subprocess.Popen,
                      explain: Callable[[], str]) -> Watched:
    """Until Snakemake exits, record the train job's states; once it runs and has saved a state, requeue it
    (``scontrol requeue``), and once it pends again, release it: SLURM holds a requeued job for 120 s (BeginTime)."""
    watched, start = Watched(), time.monotonic()
    while workflow.poll() is None:
        now = time.monotonic() - start
        if now > REQUEUE_TIMEOUT:
            raise TimeoutError(f"the workflow ran past {REQUEUE_TIMEOUT}s; train job {watched}:\n{explain()}")
        job = train_job(cluster, workdir)
        if job is not None:
            watched.job_id = job["JobId"]
            watched.record(now, job["JobState"])
            if watched.requeued_at is None and job["JobState"] == "RUNNING" and saved_state(workdir):
                scontrol(cluster, "requeue", watched.job_id)
                watched.requeued_at = now
            elif watched.requeued_at is not None and watched.released_at is None and job["JobState"] == "PENDING":
                scontrol(cluster, "update", f"JobId={watched.job_id}", "StartTime=now")
                watched.released_at = now
        time.sleep(0.1)
    if (job := train_job(cluster, workdir)) is not None:
        watched.record(time.monotonic() - start, job["JobState"])
    return watched


@pytest.fixture(scope="module")
def requeued_run(tmp_path_factory, tiny_bert, cluster, started_slurm_run) -> dict:
    """Step 1's training through the SLURM profile, its job requeued by slurmctld mid-epoch (after a saved state).
    Its inputs are built locally first: through SLURM, each would wait a 14 s level of the plugin's polling."""
    workdir = tmp_path_factory.mktemp("slurm_requeue")
    one_sentence_batches(workdir, tiny_bert, definitions=REQUEUE_DEFINITIONS, every_steps=REQUEUE_EVERY_STEPS)
    started = time.monotonic()
    snakemake(workdir, BASE_SPACE)
    output = workdir / "snakemake.out"

    def explain() -> str:
        return f"{output.read_text()[-6000:]}\n{cluster.logs()}"

    with open(output, "w") as out:
        workflow = subprocess.Popen(slurm_command(workdir, TRAIN_TARGET), cwd=workdir, env=slurm_env(cluster),
                                    stdout=out, stderr=subprocess.STDOUT)
    try:
        watched = watch_and_requeue(cluster, workdir, workflow, explain)
    finally:
        if workflow.poll() is None:
            workflow.kill()
        workflow.wait()
    return {"workdir": workdir, "returncode": workflow.returncode, "watched": watched, "explain": explain,
            "jobs": jobs_of(cluster, workdir), "seconds": time.monotonic() - started}


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
