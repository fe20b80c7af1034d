"""What ran in a workdir, from Snakemake's own records: each job's extended benchmark (its rule, wildcards, threads
and resources; the profiles set ``benchmark-extended``), its outputs from Snakemake's metadata, and the seconds its
own work took (its work clock beside its benchmark). The metadata's layout is private to Snakemake: only
:func:`outputs_by_log` reads it, and tests/test_rehearsal_costs.py states the Snakemake versions it holds for."""

from __future__ import annotations

import ast
import base64
import json
import logging
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from defsent_plus.errors import DefSentError
from defsent_plus.io import read_json
from defsent_plus.pipeline import dag

log = logging.getLogger(__name__)


@dataclass
class Job:
    """A job Snakemake ran, from its own records."""

    rule: str
    wildcards: dict = field(default_factory=dict)
    benchmark: str | None = None
    outputs: list[str] = field(default_factory=list)
    resources: dict = field(default_factory=dict)  # what the job asked for (mem_mb, runtime in minutes)
    threads: int = 1
    measured: dict = field(default_factory=dict)  # wall seconds, peak resident MB (max_rss_mb) and CPU seconds

    def output(self, suffix: str) -> str:
        """The job's one output whose path ends with ``suffix``."""
        matches = [path for path in self.outputs if path.endswith(suffix)]
        if len(matches) != 1:
            raise DefSentError(self.benchmark, f"rule {self.rule}: {len(matches)} outputs end with {suffix!r} "
                                               f"(Snakemake's metadata of this job: {self.outputs})")
        return matches[0]


def executed_jobs(workdir: Path) -> list[Job]:
    """The jobs Snakemake ran in ``workdir``: each job's extended benchmark and the outputs Snakemake's metadata
    records with its log, which lies beside its benchmark (:func:`~defsent_plus.pipeline.dag.log_beside`)."""
    outputs = outputs_by_log(workdir)
    records = {path: pd.read_csv(path, sep="\t").iloc[-1] for path in sorted((workdir / "benchmarks").rglob("*.tsv"))}
    plain = [path for path, record in records.items() if "rule_name" not in record]
    if plain:  # a job that is up to date keeps the benchmark of the run that made it
        raise DefSentError(plain[0], f"{len(plain)} of {len(records)} benchmarks lack their job's rule and wildcards: "
                                     "Snakemake ran those jobs without --benchmark-extended (profiles/workstation "
                                     "and profiles/slurm set it); run them again with a profile (--forcerun) or "
                                     "remove benchmarks/ and run again")
    return [Job(str(record["rule_name"]), literal_dict(record["wildcards"]), benchmark,
                sorted(outputs.get(dag.log_beside(benchmark), [])), literal_dict(record["resources"]),
                int(record["threads"]), {"seconds": float(record["s"]), "max_rss_mb": float(record["max_rss"]),
                                         "cpu_seconds": float(record["cpu_time"])})
            for path, record in records.items() for benchmark in [str(path.relative_to(workdir))]]


def literal_dict(text: str) -> dict:
    """A dict an extended benchmark writes as Python's repr (no code runs: literals only)."""
    return ast.literal_eval(text) if isinstance(text, str) and text.startswith("{") else {}


def outputs_by_log(workdir: Path) -> dict[str, list[str]]:
    """Job log -> the outputs Snakemake recorded with it (``.snakemake/metadata``: a JSON record per output, named
    by its path's URL-safe base64, split into ``@``-prefixed folders where it is long). A file that is no record (a
    temporary one Snakemake left when killed while writing) is skipped and counted in the log."""
    by_log: dict[str, list[str]] = defaultdict(list)
    folder = workdir / ".snakemake" / "metadata"
    skipped = []
    for path in folder.rglob("*") if folder.is_dir() else []:
        if not path.is_file():
            continue
        try:
            output = base64.urlsafe_b64decode("".join(p.removeprefix("@") for p in path.relative_to(folder).parts))
            record = json.loads(path.read_text(encoding="utf-8"))
            for job_log in record.get("log") or []:
                by_log[job_log].append(output.decode())
        except (ValueError, UnicodeDecodeError):  # binascii.Error and JSONDecodeError are ValueErrors
            skipped.append(path.name)
    if skipped:
        log.warning("%d files of %s are no Snakemake record and were skipped, e.g. %s", len(skipped), folder,
                       skipped[0])
    return by_log


def work_seconds(workdir: Path, job: Job) -> float | None:
    """The seconds of a job's own work (encoding, the training loop), without its start: its work clock beside its
    benchmark (:func:`~defsent_plus.pipeline.dag.work_clock_file`); None for a job without one."""
    clock = workdir / dag.work_clock_beside(job.benchmark) if job.benchmark else None
    return read_json(clock)["seconds"] if clock and clock.is_file() else None
