"""The read audit: which files each workflow job opened (strace's trace of the warm interpreter's processes,
tests/warm_python.py ``traced``), attributed to its job through the job's record of its declared paths
(defsent_plus/pipeline/jobs.py ``record_declared_paths``), and which of those reads its rule does not declare."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

STARTED = re.compile(r"^(?:clone3?|v?fork)\(.*\)\s*=\s*(\d+)$")
OPENED = re.compile(r"^open(?:at2?)?\((.*)\)\s*=\s*\d+<(.*)>$")
MADE = re.compile(r'^mkdir(?:at)?\((?:\w+<(.*?)>, )?"(.*?)".*\)\s*=\s*0$')  # (folder it is relative to, path)
RAN = re.compile(r'^execve\("([^"]*)".*\)\s*=\s*0$')
WRITING_FLAGS = ("O_WRONLY", "O_RDWR", "O_CREAT")
# Programs a job runs whose reads are not the job's data: git, which the provenance record runs on the project's
# checkout (`git status` reads tracked files whose index entry is not yet clean, as in a fresh clone).
NOT_THE_JOBS = ("git",)
# What Snakemake itself writes for a job and the job reads: its copy of the rule's script.
SNAKEMAKE_FILES = (".snakemake/scripts",)


@dataclass
class JobReads:
    """One job: its record (rule, wildcards, folder, declared paths), the files its processes opened to read and
    those they opened to write or made (folders; resolved, absolute)."""

    record: dict
    read: set[Path] = field(default_factory=set)
    written: set[Path] = field(default_factory=set)

    @property
    def name(self) -> str:
        return f"{self.record['rule']} {self.record['wildcards']}"

    def declared(self) -> list[Path]:
        cwd = Path(self.record["cwd"])
        paths = [*self.record["input"], *self.record["output"], *self.record["log"], *SNAKEMAKE_FILES]
        return [(cwd / path).resolve() for path in paths]


def copy_traces_since(trace: Path, started: float, into: Path) -> Path:
    """The trace files written since ``started`` (a time.time()), copied into ``into``: what a DAG's processes left,
    taken before a later process can reuse one's id and overwrite its ``trace.<id>``."""
    into.mkdir()
    for path in trace.glob("trace.*"):
        if path.stat().st_mtime >= started:
            shutil.copy2(path, into / path.name)
    return into


def trace_lines(trace: Path) -> Iterator[tuple[int, str]]:
    """(thread id, line) of every traced call in ``trace`` (strace -ff's ``trace.<thread id>`` files)."""
    for path in sorted(trace.glob("trace.*")):
        tid = int(path.suffix[1:])
        for line in path.read_text(errors="replace").splitlines():
            yield tid, line


def job_reads(trace: Path, records: Path) -> dict[int, JobReads]:
    """Each recorded job (by process id) with the files it and every thread or process it started opened."""
    jobs = {int(path.stem): JobReads(json.loads(path.read_text())) for path in records.glob("*.json")}
    parent: dict[int, int] = {}
    opens: list[tuple[int, str, str]] = []
    made: list[tuple[int, str, str]] = []
    others: set[int] = set()  # processes that run a program of NOT_THE_JOBS
    for tid, line in trace_lines(trace):
        if (ran := RAN.match(line)) and Path(ran.group(1)).name in NOT_THE_JOBS:
            others.add(tid)
        elif started := STARTED.match(line):
            parent[int(started.group(1))] = tid
        elif opened := OPENED.match(line):
            opens.append((tid, opened.group(1), opened.group(2)))
        elif folder := MADE.match(line):
            made.append((tid, folder.group(1) or "", folder.group(2)))
    for tid, arguments, path in opens:
        if tid in others:
            continue
        if job := jobs.get(job_of(tid, parent, jobs)):
            writing = any(flag in arguments for flag in WRITING_FLAGS)
            (job.written if writing else job.read).add(Path(path))
    for tid, relative_to, path in made:
        if job := jobs.get(job_of(tid, parent, jobs)):
            job.written.add((Path(job.record["cwd"]) / relative_to / path).resolve())
    return jobs


def job_of(tid: int, parent: dict[int, int], jobs: dict[int, JobReads]) -> int | None:
    """The recorded job whose process started thread or process ``tid`` (or is it), if any."""
    seen = set()
    while tid not in jobs and tid in parent and tid not in seen:
        seen.add(tid)
        tid = parent[tid]
    return tid if tid in jobs else None


def within(path: Path, folders: Iterable[Path]) -> bool:
    return any(path == folder or folder in path.parents for folder in folders)


def undeclared_reads(job: JobReads, audited: Iterable[Path], exempt: Iterable[Path] = ()) -> list[Path]:
    """The files ``job`` read under an ``audited`` folder that are neither declared by its rule (or inside a declared
    folder), nor written by the job itself (or inside a folder it made), nor ``exempt``; a folder listed is read
    only if it is no parent of a declared path."""
    declared = job.declared()
    audited, exempt = list(audited), list(exempt)
    return sorted(path for path in job.read
                  if within(path, audited) and not within(path, [*declared, *exempt, *job.written])
                  and not (path.is_dir() and any(path in known.parents for known in declared)))


def config_paths(value, workdir: Path) -> set[Path]:
    """Every existing file or folder a config names (a string leaf that is an absolute path, or one relative to the
    working directory), resolved."""
    if isinstance(value, dict):
        return set().union(*(config_paths(item, workdir) for item in value.values()))
    if isinstance(value, list):
        return set().union(*(config_paths(item, workdir) for item in value))
    if isinstance(value, str) and value not in ("", ".") and (workdir / value).exists():
        return {(workdir / value).resolve()}
    return set()
