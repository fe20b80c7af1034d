"""Snakemake's working-directory lock, and the record of the run that holds it.

A Snakemake killed with -9 (or by a power loss) leaves ``.snakemake/locks/`` behind, and the next run stops with a
LockException until the user finds ``--unlock``. Snakemake's lock does not say who holds it, and on a shared file
system the holder may run on another machine. ``bin/run`` therefore records, before it execs Snakemake, which host
and process take the lock (``.snakemake/lock_holder.json``, :func:`record_holder`), and ``python -m
defsent_plus.pipeline.locks <dir> --pid <pid> -- <snakemake args>`` (called by ``bin/run``) removes a lock only when
its recorded process ran on this host and is gone (:func:`lock_verdict`). A lock held on another host, by a live
process, or with no record at all (a plain ``snakemake`` run, as on a SLURM login node) is kept, and the message
names the holder and ``bash bin/run --unlock``.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

LOCK_DIR = Path(".snakemake") / "locks"
HOLDER_FILE = Path(".snakemake") / "lock_holder.json"
BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
UNLOCK_HINT = "if no Snakemake works in this folder on any machine, remove the lock by hand: bash bin/run --unlock"


def lock_files(workdir: str | Path) -> list[Path]:
    return sorted((Path(workdir) / LOCK_DIR).glob("*.lock"))


def this_host() -> dict[str, str]:
    """This machine's name and boot (a pid recorded before a reboot names no process of this boot)."""
    boot = BOOT_ID.read_text().strip() if BOOT_ID.is_file() else ""
    return {"host": socket.gethostname(), "boot_id": boot}


def record_holder(workdir: str | Path, pid: int) -> Path:
    """Write which host and process are about to take ``workdir``'s lock (the Snakemake that ``pid`` becomes)."""
    path = Path(workdir) / HOLDER_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {**this_host(), "pid": pid, "started": datetime.now(UTC).isoformat(timespec="seconds")}
    path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return path


def read_holder(workdir: str | Path) -> dict | None:
    """The recorded holder of ``workdir``'s lock, or None without a readable record."""
    path = Path(workdir) / HOLDER_FILE
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and {"host", "pid"} <= record.keys() else None


def runs_snakemake(process: Path) -> bool:
    """Whether the process of a ``/proc/<pid>`` folder is alive and runs Snakemake (a reused pid runs something
    else)."""
    try:
        return any(b"snakemake" in part for part in (process / "cmdline").read_bytes().split(b"\0")[:3])
    except OSError:  # the process ended, or is not ours to read
        return False


def snakemake_processes_in(workdir: str | Path, proc: Path = Path("/proc")) -> list[int]:
    """PIDs of live processes (other than this one) running Snakemake with ``workdir`` as working directory."""
    def works_in(process: Path) -> bool:
        try:
            return Path(os.readlink(process / "cwd")).resolve() == Path(workdir).resolve()
        except OSError:
            return False

    return [int(entry.name) for entry in proc.glob("[0-9]*")
            if int(entry.name) != os.getpid() and works_in(entry) and runs_snakemake(entry)]


@dataclass(frozen=True)
class Verdict:
    """What to do with a lock: ``remove`` it or keep it, and why (``reason``, for the user)."""

    remove: bool
    reason: str


def describe(record: dict) -> str:
    started = f", started {record['started']}" if record.get("started") else ""
    return f"process {record['pid']} on host {record['host']}{started}"


def lock_verdict(workdir: str | Path) -> Verdict | None:
    """Whether ``workdir``'s lock may be removed (None: there is no lock): only when its record names a process of
    this host (and boot) that is gone, and no other Snakemake on this host works in the folder."""
    if not lock_files(workdir):
        return None
    record = read_holder(workdir)
    if record is None:
        return Verdict(False, "it has no record of the run that holds it (a plain `snakemake` run, e.g. on a SLURM "
                              "login node, records none)")
    here = this_host()
    if record["host"] != here["host"]:
        return Verdict(False, f"it is held by {describe(record)}, another machine (this one cannot see whether that "
                              "run is alive)")
    local = snakemake_processes_in(workdir)
    same_boot = record.get("boot_id", here["boot_id"]) == here["boot_id"]
    if (same_boot and runs_snakemake(Path("/proc", str(int(record["pid"]))))) or local:
        pids = sorted({int(record["pid"])} | set(local)) if same_boot else local
        return Verdict(False, f"it is held by a running Snakemake on this host (PIDs {pids}); Snakemake refuses to "
                              "start while it holds the lock")
    return Verdict(True, f"its holder, {describe(record)}, is gone")


def prepare(workdir: Path, pid: int | None, snakemake_args: list[str]) -> str:
    """What ``bin/run`` does before Snakemake: remove a stale lock, then record ``pid`` as the holder of the lock
    it is about to take (not for a dry run or ``--unlock``, which take none, nor while a lock stays); the message."""
    lock_dir = workdir.resolve() / LOCK_DIR
    if "--unlock" in snakemake_args:
        (workdir / HOLDER_FILE).unlink(missing_ok=True)
        return ""
    verdict = lock_verdict(workdir)
    message = ""
    if verdict is not None and verdict.remove:
        for path in lock_files(workdir):  # the lock files and their record
            path.unlink(missing_ok=True)
        (workdir / HOLDER_FILE).unlink(missing_ok=True)
        message = f"bin/run: removed a stale Snakemake lock in {lock_dir} ({verdict.reason}); going on"
    elif verdict is not None:
        message = f"bin/run: kept the Snakemake lock in {lock_dir}: {verdict.reason}; {UNLOCK_HINT}"
    dry_run = any(arg in ("-n", "--dry-run", "--dryrun") for arg in snakemake_args)
    if pid is not None and not dry_run and not lock_files(workdir):
        record_holder(workdir, pid)
    return message


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m defsent_plus.pipeline.locks", description=prepare.__doc__)
    parser.add_argument("workdir", nargs="?", default=".", type=Path)
    parser.add_argument("--pid", type=int, help="the process that becomes Snakemake (bin/run: its own, $$)")
    own, snakemake_args = (argv[:argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    args = parser.parse_args(own)  # Snakemake's arguments follow --
    message = prepare(args.workdir, args.pid, snakemake_args)
    if message:
        print(message, file=sys.stderr)
    return 0

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
