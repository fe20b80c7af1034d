"""A throw-away single-node SLURM cluster on this host for tests (needs root; no accounting database).

munged, slurmctld and slurmd run in the foreground as children of the test process, with every config,
socket, state and log file under one directory; :meth:`SlurmCluster.stop` ends them by pid. The node
advertises fake GPUs (``gres.conf``: ``File=/dev/null``, ``/dev/zero``), so ``--gpus=1`` jobs are scheduled
one per device and get ``CUDA_VISIBLE_DEVICES=0`` or ``1`` although torch sees no CUDA device.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

PACKAGES = ("slurm-wlm", "munge")
DAEMONS = ("munged", "slurmctld", "slurmd")
# Where SLURM clients look for slurm.conf when $SLURM_CONF is unset, in this order. Snakemake's jobstep
# executor drops every SLURM_* variable before its inner `srun`, so the test cluster's config must be
# found at the second (a link in /run, as slurmd makes for "configless" clusters); the first must not exist.
FAKE_GPU_FILES = ("/dev/null", "/dev/zero", "/dev/full")
SYSTEM_CONF = Path("/etc/slurm/slurm.conf")
RUN_CONF_DIR = Path("/run/slurm/conf")


def install_reason() -> str | None:
    """Install SLURM and munge with apt when missing; the reason they are unavailable, or None."""
    if all(shutil.which(daemon) for daemon in DAEMONS):
        return None
    if os.geteuid() != 0:
        return "SLURM is not installed and installing it (apt-get) needs root"
    if shutil.which("apt-get") is None:
        return "SLURM is not installed and apt-get is not available"
    env = os.environ | {"DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update", "-q"],
                    ["apt-get", "install", "-y", "-q", "--no-install-recommends", *PACKAGES]):
        result = subprocess.run(command, capture_output=True, text=True, env=env)
        if result.returncode != 0:
            return f"{' '.join(command)} failed: {result.stderr[-500:]}"
    return None


def shadow_reason() -> str | None:
    """Why the test cluster cannot be started here, or None."""
    if SYSTEM_CONF.exists():
        return f"{SYSTEM_CONF} exists (a real SLURM installation): its clients would ignore the test cluster"
    if RUN_CONF_DIR.exists() or RUN_CONF_DIR.is_symlink():
        return f"{RUN_CONF_DIR} exists (a configless slurmd runs here)"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def real_memory_mb() -> int:
    """RealMemory for the node: 80% of the memory available now (slurmd refuses more than the host has)."""
    out = subprocess.run(["free", "-m"], capture_output=True, text=True, check=True).stdout
    fields = next(line.split() for line in out.splitlines() if line.startswith("Mem:"))
    return int(int(fields[6]) * 0.8)


class SlurmCluster:
    """One node (this host, 2 CPUs, fake GPUs), one partition ``test``, no accounting (job states from squeue)."""

    partition = "test"

    def __init__(self, root: Path, cpus: int = 2, gpus: int = 2):
        self.root = root
        self.cpus = cpus
        self.gpus = gpus
        self.host = subprocess.run(["hostname", "-s"], capture_output=True, text=True, check=True).stdout.strip()
        self.conf = root / "slurm.conf"
        self.processes: dict[str, subprocess.Popen] = {}

    @property
    def env(self) -> dict[str, str]:
        """Environment for SLURM clients (sbatch, squeue, scontrol, Snakemake's slurm executor)."""
        return os.environ | {"SLURM_CONF": str(self.conf)}

    def write_config(self) -> None:
        for name in ("state", "spool", "log"):
            (self.root / name).mkdir(parents=True, exist_ok=True)
        key = self.root / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        self.conf.write_text(self.slurm_conf())
        (self.root / "gres.conf").write_text(
            "".join(f"NodeName={self.host} Name=gpu File={device}\n" for device in FAKE_GPU_FILES[: self.gpus]))

    def slurm_conf(self) -> str:
        r = self.root
        return "\n".join([
            "ClusterName=defsenttest",
            f"SlurmctldHost={self.host}",
            f"SlurmctldPort={free_port()}",
            f"SlurmdPort={free_port()}",
            f"AuthInfo=socket={r / 'munge.socket'}",
            "SlurmUser=root",
            "SlurmdUser=root",
            f"StateSaveLocation={r / 'state'}",
            f"SlurmdSpoolDir={r / 'spool'}",
            f"SlurmctldPidFile={r / 'slurmctld.pid'}",
            f"SlurmdPidFile={r / 'slurmd.pid'}",
            f"SlurmctldLogFile={r / 'log' / 'slurmctld.log'}",
            f"SlurmdLogFile={r / 'log' / 'slurmd.log'}",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "MpiDefault=none",
            "SwitchType=switch/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "SchedulerType=sched/builtin",
            "AccountingStorageType=accounting_storage/none",
            "JobAcctGatherType=jobacct_gather/none",
            "JobCompType=jobcomp/none",
            "MinJobAge=600",
            "ReturnToService=2",
            "SlurmctldTimeout=30",
            "SlurmdTimeout=30",
            "GresTypes=gpu",
            f"NodeName={self.host} CPUs={self.cpus} RealMemory={real_memory_mb()} Gres=gpu:{self.gpus} State=UNKNOWN",
            f"PartitionName={self.partition} Nodes={self.host} Default=YES MaxTime=INFINITE State=UP",
            "",
        ])

    def start(self, timeout: float = 60) -> None:
        self.write_config()
        RUN_CONF_DIR.parent.mkdir(parents=True, exist_ok=True)
        RUN_CONF_DIR.symlink_to(self.root, target_is_directory=True)
        r = self.root
        self._spawn("munged", ["munged", "--foreground", "--force", f"--socket={r / 'munge.socket'}",
                               f"--key-file={r / 'munge.key'}", f"--pid-file={r / 'munged.pid'}",
                               f"--log-file={r / 'log' / 'munged.log'}", f"--seed-file={r / 'munged.seed'}"])
        self._wait(lambda: (r / "munge.socket").exists(), timeout, "munged socket")
        self._spawn("slurmctld", ["slurmctld", "-D", "-i", "-f", str(self.conf)])
        self._wait(lambda: self._run("scontrol", "ping").returncode == 0, timeout, "slurmctld")
        self._spawn("slurmd", ["slurmd", "-D", "-f", str(self.conf)])
        self._wait(self.node_idle, timeout, "node idle")

    def _spawn(self, name: str, command: list[str]) -> None:
        log = open(self.root / "log" / f"{name}.out", "wb")  # noqa: SIM115 - closed with the process
        self.processes[name] = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=self.env)
        log.close()

    def _wait(self, ready, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name, process in self.processes.items():
                if process.poll() is not None:
                    raise RuntimeError(f"{name} exited ({process.returncode}) waiting for {what}:\n{self.logs()}")
            if ready():
                return
            time.sleep(0.5)
        raise TimeoutError(f"SLURM test cluster: no {what} after {timeout}s:\n{self.logs()}")

    def _run(self, *command: str) -> subprocess.CompletedProcess:
        return subprocess.run(command, capture_output=True, text=True, env=self.env)

    def node_idle(self) -> bool:
        return self._run("sinfo", "-h", "-N", "-o", "%T").stdout.strip() == "idle"

    def jobs(self) -> list[dict[str, str]]:
        """``scontrol show job`` of every job still known to slurmctld (finished ones for MinJobAge)."""
        out = self._run("scontrol", "show", "job", "--oneliner").stdout
        return [dict(field.split("=", 1) for field in line.split() if "=" in field)
                for line in out.splitlines() if line.startswith("JobId=")]

    def logs(self) -> str:
        return "\n".join(f"== {path.name}\n{path.read_text(errors='replace')[-2000:]}"
                         for path in sorted((self.root / "log").glob("*")) if path.is_file())

    def stop(self, timeout: float = 30) -> None:
        """Cancel leftover jobs, then stop the daemons by pid (slurmd, slurmctld, munged) and wait for them."""
        if self.processes.get("slurmctld") and self.processes["slurmctld"].poll() is None:
            self._run("scancel", "--partition", self.partition)
            deadline = time.monotonic() + timeout
            while self._run("squeue", "-h", "-t", "RUNNING,COMPLETING").stdout.strip() and time.monotonic() < deadline:
                time.sleep(0.5)
        for name in reversed(DAEMONS):
            process = self.processes.pop(name, None)
            if process is None or process.poll() is not None:
                continue
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        kill_processes_under(self.root)
        if RUN_CONF_DIR.is_symlink() and RUN_CONF_DIR.resolve() == self.root.resolve():
            RUN_CONF_DIR.unlink()


def kill_processes_under(root: Path) -> list[int]:
    """SIGKILL every process still working in ``root`` once the daemons are gone: a job step that SIGTERM and
    scancel did not end (the requeue scenario's Snakemake job step outlived the session, orphaned, for an hour)."""
    root, killed = root.resolve(), []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cwd = (proc / "cwd").resolve(strict=True)
        except OSError:
            continue
        if cwd.is_relative_to(root):
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(proc.name), signal.SIGKILL)
                killed.append(int(proc.name))
    return killed

