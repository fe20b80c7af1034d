"""Snakemake's working-directory lock, told apart from a stale one that no running Snakemake holds.

A Snakemake killed with -9 (or by a power loss) leaves ``.snakemake/locks/`` behind, and the next run stops with a
LockException until the user finds ``--unlock``. :func:`stale_lock` says whether the lock is held by a live
Snakemake process working in the same directory; ``python -m defsent_plus.pipeline.locks <dir>`` (called by
``bin/run``) removes only a lock that none holds, and says so.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

LOCK_DIR = Path(".snakemake") / "locks"


def lock_files(workdir: str | Path) -> list[Path]:
    return sorted((Path(workdir) / LOCK_DIR).glob("*.lock"))


def snakemake_processes_in(workdir: str | Path, proc: Path = Path("/proc")) -> list[int]:
    """PIDs of live processes (other than this one) running Snakemake with ``workdir`` as working directory."""
    target = Path(workdir).resolve()
    found = []
    for entry in proc.glob("[0-9]*"):
        pid = int(entry.name)
        if pid == os.getpid():
            continue
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")
            cwd = Path(os.readlink(entry / "cwd")).resolve()
        except OSError:  # the process ended, or is not ours to read
            continue
        if cwd == target and any(b"snakemake" in part for part in command[:3]):
            found.append(pid)
    return found


def stale_lock(workdir: str | Path) -> bool:
    """True when ``workdir`` has Snakemake lock files and no live Snakemake process works there."""
    return bool(lock_files(workdir)) and not snakemake_processes_in(workdir)


def remove_stale_lock(workdir: str | Path) -> list[Path]:
    """Delete the lock files of a stale lock (none when a live Snakemake holds it); the files removed."""
    if not stale_lock(workdir):
        return []
    removed = lock_files(workdir)
    for path in removed:
        path.unlink(missing_ok=True)
    return removed


def main(argv: list[str]) -> int:
    workdir = Path(argv[0] if argv else ".")
    removed = remove_stale_lock(workdir)
    if removed:
        print(f"bin/run: removed a stale Snakemake lock in {workdir.resolve() / LOCK_DIR} (no running Snakemake "
              f"holds it: an earlier run was killed); going on", file=sys.stderr)
    elif lock_files(workdir):
        print(f"bin/run: another Snakemake is running in {workdir.resolve()} (PIDs "
              f"{snakemake_processes_in(workdir)}); Snakemake will refuse to start while it holds the lock",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
