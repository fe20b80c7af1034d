"""The SLURM tests' three workflows, run in background threads from the session's start (``conftest.py``), so that
their minutes of waiting for the SLURM plugin's status checks overlap the rest of the suite; ``tests/test_slurm.py``
waits for them and checks what they did.

* ``main``: the tiny config cut to one seed and one step, its step 1 trained and selected (``MAIN_TARGET``) through
  ``profiles/slurm``;
* ``requeued``: step 1 of the one-sentence-batch config through the profile, its train job requeued with
  ``scontrol requeue`` once it runs and has saved a state (its inputs built locally first);
* ``timed_out``: the same training with a 1-minute time limit and the profile's retries: once it has saved a state
  its training process is stopped (SIGSTOP), so SLURM's limit ends the job (TIMEOUT: SIGCONT and SIGTERM, the
  trainer saves and exits) and Snakemake resubmits it; beside it, the same training uninterrupted, locally.
"""

from __future__ import annotations

import os
import shutil
import signal
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
# A time limit of 1 minute for the first attempt (2 for the retry: the rule asks attempt x its request): the projection
# of a train job made ~16 s (its start) by a GPU that costs nothing, with no margin and a minimum of 1 minute.
TIME_LIMITED_COSTS = {"min_runtime_minutes": 1, "margin": 1,
                      "gpu": {"bf16_tflops": 1.0e6, "step_ms_fixed": 0, "step_ms_per_layer": 0}}
# The profile's train resources without its `--signal=USR1@300` (300 s before a 1-minute limit: at once); a
# command-line --set-resources replaces the profile's whole set-resources, every rule's (only train is submitted here).
TIME_LIMITED_RESOURCES = ("--set-resources", "train:gpu=1")
# Seconds: the job ends 60-90 s after it starts (slurmctld checks the limits every 30 s), the plugin's status checks
# (2, 12, 22, 32, 42 s apart while nothing finishes) see it ~110 s after the submission, then the retry's ~40 s.
TIMEOUT_SCENARIO_TIMEOUT = 420


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


def slurm_command(workdir: Path, *targets: str, retries: int = 0, options: tuple[str, ...] = ()) -> list[str]:
    """Snakemake through the project's SLURM profile, polling the queue early, with no retry of a failed job (or
    ``retries``)."""
    return [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir),
            "--configfile", str(workdir / "config.yaml"), "--profile", str(REPO / "profiles" / "slurm"),
            "--slurm-init-seconds-before-status-checks", "2", *options, "--retries", str(retries), *targets]


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


@dataclass
class Stopped:
    """What the watcher saw of the time-limited train jobs: each one's states as they changed (seconds since Snakemake
    started), by job id, and when and which training process it stopped."""

    states: dict[str, list[tuple[float, str]]] = field(default_factory=dict)
    stopped_at: float | None = None
    stopped_pids: list[int] = field(default_factory=list)

    def record(self, at: float, job_id: str, state: str) -> None:
        states = self.states.setdefault(job_id, [])
        if not states or states[-1][1] != state:
            states.append((round(at, 1), state))


def training_processes(workdir: Path) -> list[int]:
    """The pids of the train script's Python processes running in ``workdir`` (Snakemake's script directive runs
    ``python .snakemake/scripts/tmp<...>.train.py``)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().decode(errors="replace").split("\0")
            cwd = (proc / "cwd").resolve()
        except OSError:  # gone, or not ours to read
            continue
        if (cwd == workdir.resolve() and Path(argv[0]).name.startswith("python")
                and any(arg.endswith(".train.py") and "scripts" in arg for arg in argv[1:])):
            pids.append(int(proc.name))
    return pids


def watch_and_stop(cluster: SlurmCluster, workdir: Path, workflow: subprocess.Popen,
                   explain: Callable[[], str]) -> Stopped:
    """Until Snakemake exits, record the train jobs' states; once the first one runs and has saved a state, stop its
    training process (SIGSTOP): it holds its allocation until the time limit, when SLURM sends it SIGCONT and
    SIGTERM."""
    watched, start = Stopped(), time.monotonic()
    while workflow.poll() is None:
        now = time.monotonic() - start
        if now > TIMEOUT_SCENARIO_TIMEOUT:
            raise TimeoutError(f"the workflow ran past {TIMEOUT_SCENARIO_TIMEOUT}s; train jobs {watched}:\n{explain()}")
        trains = [job for job in jobs_of(cluster, workdir) if job_rule(job) == "train"]
        for job in trains:
            watched.record(now, job["JobId"], job["JobState"])
        if (watched.stopped_at is None and len(trains) == 1 and trains[0]["JobState"] == "RUNNING"
                and saved_state(workdir)):
            pids = training_processes(workdir)
            for pid in pids:
                os.kill(pid, signal.SIGSTOP)
            if pids:
                watched.stopped_at, watched.stopped_pids = now, pids
        time.sleep(0.05 if watched.stopped_at is None else 0.5)
    for job in jobs_of(cluster, workdir):
        if job_rule(job) == "train":
            watched.record(time.monotonic() - start, job["JobId"], job["JobState"])
    return watched


class SlurmScenarios:
    """The cluster and both workflows, run in a background thread; :meth:`wait` gives their records (or raises what
    went wrong in the thread)."""

    def __init__(self, root: Path, model: Path):
        self.root, self.model = root, model
        self.cluster = SlurmCluster(root / "cluster")
        self.main: dict = {}
        self.requeued: dict = {}
        self.timed_out: dict = {}
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
            inputs = self._training_inputs()
            copies = self._time_limited_copies(inputs)
            timed_out = threading.Thread(target=self._timed_out_thread, args=(copies,), name="slurm-timeout",
                                         daemon=True)
            timed_out.start()
            try:
                self.requeued = self._requeued_training(inputs)
            finally:
                returncode = main.wait(timeout=RUN_TIMEOUT)
                timed_out.join(timeout=TIMEOUT_SCENARIO_TIMEOUT + RUN_TIMEOUT)
            self.main = {"workdir": workdir, "returncode": returncode, "jobs": jobs_of(self.cluster, workdir),
                         "output": (workdir / "snakemake.out").read_text()}
        except BaseException as error:  # noqa: BLE001 - handed to the tests by wait()
            self.error = error

    def _training_inputs(self) -> tuple[Path, float]:
        """The one-sentence-batch config's step 1 inputs (dictionary, entry space), built locally in the requeue
        scenario's workdir, which the time-limit scenario copies: through SLURM, each would wait a 14 s level of the
        plugin's polling. The workdir and when the build started."""
        workdir = self.root / "requeue"
        workdir.mkdir()
        one_sentence_batches(workdir, self.model, definitions=REQUEUE_DEFINITIONS, every_steps=REQUEUE_EVERY_STEPS)
        started = time.monotonic()
        snakemake(workdir, BASE_SPACE)
        return workdir, started

    def _requeued_training(self, inputs: tuple[Path, float]) -> dict:
        """Step 1's training through the SLURM profile, its job requeued by slurmctld mid-epoch (after a saved
        state), its inputs built locally (``_training_inputs``)."""
        workdir, started = inputs
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

    def _time_limited_copies(self, inputs: tuple[Path, float]) -> tuple[Path, Path]:
        """Two copies of the requeue scenario's workdir with its built inputs, made before that scenario starts (file
        times and Snakemake's records kept, so the inputs are up to date), whose config asks for a 1-minute train job:
        one for the time-limited SLURM run, one for the same training uninterrupted and local."""
        copies = self.root / "timeout", self.root / "uninterrupted"
        for copy in copies:
            shutil.copytree(inputs[0], copy, symlinks=True)
            config = yaml.safe_load((copy / "config.yaml").read_text())
            config["costs"] = TIME_LIMITED_COSTS
            (copy / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
        return copies

    def _timed_out_thread(self, copies: tuple[Path, Path]) -> None:
        try:
            self.timed_out = self._timed_out_training(*copies)
        except BaseException as error:  # noqa: BLE001 - handed to the tests by wait()
            self.error = error

    def _timed_out_training(self, workdir: Path, uninterrupted: Path) -> dict:
        """Step 1's training through the SLURM profile with a 1-minute time limit and one retry, its training
        process stopped once it has saved a state, so the limit kills the job; and the same training uninterrupted
        and local beside it (the weights to compare), in the workdirs of ``_time_limited_copies``."""
        started = time.monotonic()
        local = subprocess.Popen([sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"),
                                  "--directory", str(uninterrupted), "--configfile", str(uninterrupted / "config.yaml"),
                                  "--cores", "1", TRAIN_TARGET], cwd=uninterrupted, env=workflow_env(),
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        output = workdir / "snakemake.out"

        def explain() -> str:
            return f"{output.read_text()[-8000:]}\n{self.cluster.logs()}"

        with open(output, "w") as out:
            workflow = subprocess.Popen(slurm_command(workdir, TRAIN_TARGET, retries=1, options=TIME_LIMITED_RESOURCES),
                                        cwd=workdir, env=slurm_env(self.cluster), stdout=out, stderr=subprocess.STDOUT)
        try:
            watched = watch_and_stop(self.cluster, workdir, workflow, explain)
        finally:
            if workflow.poll() is None:
                workflow.kill()
            workflow.wait()
            local_output, _ = local.communicate(timeout=RUN_TIMEOUT)
        return {"workdir": workdir, "returncode": workflow.returncode, "watched": watched, "explain": explain,
                "jobs": jobs_of(self.cluster, workdir), "seconds": time.monotonic() - started,
                "uninterrupted": uninterrupted, "uninterrupted_returncode": local.returncode,
                "uninterrupted_output": local_output,
                "slurmctld_log": (self.cluster.root / "log" / "slurmctld.log").read_text(errors="replace")}


def selected(items) -> bool:
    """Whether the session runs any SLURM test."""
    return any(Path(str(item.fspath)).name == TEST_MODULE for item in items)
