"""The SLURM tests' two workflows, run in a background thread from the session's start (``conftest.py``), so that
their minutes of waiting for the SLURM plugin's status checks overlap the rest of the suite; ``tests/test_slurm.py``
waits for them and checks what they did.

* ``main``: the tiny config cut to one seed and one step, its step 1 trained and selected (``MAIN_TARGET``) through
  ``profiles/slurm``;
* ``requeued``: step 1 of the one-sentence-batch config through the profile, its train job requeued with
  ``scontrol requeue`` once it runs and has saved a state (its inputs built locally first).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from conftest import REPO
from slurm_cluster import SlurmCluster, install_reason, shadow_reason
from workflow_utils import TRAIN_TARGET, one_sentence_batches, snakemake, workflow_env, write_tiny_config

from defsent_plus.pipeline import dag
from defsent_plus.pipeline.dag import EncoderId
from defsent_plus.training.resume import STATE_FILE

TEST_MODULE = "test_slurm.py"
RUN_TIMEOUT = 900
REQUEUE_DEFINITIONS = 600  # ~720 one-sentence steps: ~650 (2-5 s) still to train when the requeue lands
REQUEUE_EVERY_STEPS = 50  # the first state a fraction of a second into the training
REQUEUE_TIMEOUT = 600  # seconds; the suite's other tests share the cores meanwhile
MAIN_TARGET = dag.best_dir("tiny", 1)  # train, dev-score and select step 1: every kind of job, few of them
BASE_SPACE = dag.space_file(EncoderId.base("tiny"), "a", "amp")  # the train job's inputs: dictionary, entry space


def unavailable_reason() -> str | None:
    """Why the test cluster cannot run here, or None."""
    if os.geteuid() != 0:
        return "the SLURM test cluster needs root (slurmd, munged)"
    return install_reason() or shadow_reason()


def write_config(workdir: Path, model: Path) -> None:
    """The tiny config cut to its first step's first seed."""
    config = write_tiny_config(workdir, model)
    tiny = config["runs"]["tiny"]
    tiny.update(seeds=tiny["seeds"][:1], steps=tiny["steps"][:1])
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))


def slurm_command(workdir: Path, *targets: str) -> list[str]:
    """Snakemake through the project's SLURM profile, polling the queue early, with no retry of a failed job."""
    return [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir),
            "--configfile", str(workdir / "config.yaml"), "--profile", str(REPO / "profiles" / "slurm"),
            "--slurm-init-seconds-before-status-checks", "2", "--retries", "0", *targets]


def slurm_env(cluster: SlurmCluster) -> dict[str, str]:
    return workflow_env() | {"SLURM_CONF": cluster.env["SLURM_CONF"], "HF_HUB_OFFLINE": "1"}  # as the local run's


def jobs_of(cluster: SlurmCluster, workdir: Path) -> list[dict[str, str]]:
    """slurmctld's records of the jobs submitted from ``workdir`` (the cluster runs several workflows)."""
    return [job for job in cluster.jobs() if Path(job.get("WorkDir", "")).resolve() == workdir.resolve()]


def job_rule(job: dict[str, str]) -> str:
    """The rule of a job submitted by the plugin (its --comment is rule_<rule>[_wildcards_...]); of a group job, the
    group and its rules (rule_<group>_<rule>_<rule>...)."""
    return job["Comment"].removeprefix("rule_").split("_wildcards_")[0]


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


class SlurmScenarios:
    """The cluster and both workflows, run in a background thread; :meth:`wait` gives their records (or raises what
    went wrong in the thread)."""

    def __init__(self, root: Path, model: Path):
        self.root, self.model = root, model
        self.cluster = SlurmCluster(root / "cluster")
        self.main: dict = {}
        self.requeued: dict = {}
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="slurm-scenarios", daemon=True)

    def start(self) -> SlurmScenarios:
        (self.root / "cluster").mkdir(parents=True, exist_ok=True)
        self.thread.start()
        return self

    def wait(self) -> SlurmScenarios:
        self.thread.join(timeout=RUN_TIMEOUT + REQUEUE_TIMEOUT)
        if self.thread.is_alive():
            raise TimeoutError(f"the SLURM scenarios ran past {RUN_TIMEOUT + REQUEUE_TIMEOUT}s:\n{self.cluster.logs()}")
        if self.error is not None:
            raise self.error
        return self

    def stop(self) -> None:
        self.thread.join(timeout=RUN_TIMEOUT)
        self.cluster.stop()

    def _run(self) -> None:
        try:
            self.cluster.start()
            workdir = self.root / "main"
            workdir.mkdir()
            write_config(workdir, self.model)
            with open(workdir / "snakemake.out", "w") as out:
                main = subprocess.Popen(slurm_command(workdir, MAIN_TARGET), cwd=workdir, env=slurm_env(self.cluster),
                                        stdout=out, stderr=subprocess.STDOUT)
            try:
                self.requeued = self._requeued_training()
            finally:
                returncode = main.wait(timeout=RUN_TIMEOUT)
            self.main = {"workdir": workdir, "returncode": returncode, "jobs": jobs_of(self.cluster, workdir),
                         "output": (workdir / "snakemake.out").read_text()}
        except BaseException as error:  # noqa: BLE001 - handed to the tests by wait()
            self.error = error

    def _requeued_training(self) -> dict:
        """Step 1's training through the SLURM profile, its job requeued by slurmctld mid-epoch (after a saved
        state). Its inputs are built locally first: through SLURM, each would wait a 14 s level of the plugin's
        polling."""
        workdir = self.root / "requeue"
        workdir.mkdir()
        one_sentence_batches(workdir, self.model, definitions=REQUEUE_DEFINITIONS, every_steps=REQUEUE_EVERY_STEPS)
        started = time.monotonic()
        snakemake(workdir, BASE_SPACE)
        output = workdir / "snakemake.out"

        def explain() -> str:
            return f"{output.read_text()[-6000:]}\n{self.cluster.logs()}"

        with open(output, "w") as out:
            workflow = subprocess.Popen(slurm_command(workdir, TRAIN_TARGET), cwd=workdir,
                                        env=slurm_env(self.cluster), stdout=out, stderr=subprocess.STDOUT)
        try:
            watched = watch_and_requeue(self.cluster, workdir, workflow, explain)
        finally:
            if workflow.poll() is None:
                workflow.kill()
            workflow.wait()
        return {"workdir": workdir, "returncode": workflow.returncode, "watched": watched, "explain": explain,
                "jobs": jobs_of(self.cluster, workdir), "seconds": time.monotonic() - started}


def selected(items) -> bool:
    """Whether the session runs any SLURM test."""
    return any(Path(str(item.fspath)).name == TEST_MODULE for item in items)
