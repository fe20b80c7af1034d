"""Every file a job reads is declared by its rule: the files each job of the tiny DAG opened (traced at the system
call, so native readers count as Python's ``open`` does: tests/read_audit.py) under its working directory or a path
the config names are its rule's declared inputs, outputs or logs, or files the job wrote itself."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import tiny_run_jobs
from read_audit import config_paths, copy_traces_since, job_reads, undeclared_reads
from workflow_utils import workflow_env

from defsent_plus.pipeline.jobs import JOB_RECORDS
from defsent_plus.rehearsal.records import executed_jobs

pytestmark = pytest.mark.workflow


def exempt_paths(rule: str, config: dict, workdir: Path) -> set[Path]:
    """Reads a rule's params track instead of its inputs: a model's and a data mirror's content identity (rules
    pin_model and acquire_data: moving them re-runs nothing, changing them re-runs what depends on them)."""
    if rule == "pin_model":
        return config_paths(config["models"], workdir)
    if rule == "acquire_data":
        return config_paths(config["data"], workdir)
    return set()


# The dictionary rule's source files (the tiny config's Oxford, TSV and GCIDE fixtures) are not yet its inputs:
# declaring them is under way on its own; until then the audit expects these reads.


def traced(warm_python) -> Path:
    if warm_python.trace is None:
        pytest.skip("strace is not installed (bin/test installs it: apt-get install strace)")
    return warm_python.trace


def test_tiny_dag_reads_only_declared_files(tiny_run, tmp_path_factory):
    records = tiny_run_jobs(tmp_path_factory)
    trace = records / "trace"  # the traces as the tiny DAG left them (tests/conftest.py tiny_run)
    if not trace.is_dir():
        pytest.skip("strace is not installed (bin/test installs it: apt-get install strace)")
    config = yaml.safe_load((tiny_run / "config.yaml").read_text())
    audited = {tiny_run.resolve(), *config_paths(config, tiny_run)}
    jobs = job_reads(trace, records)
    ran = [job for job in executed_jobs(tiny_run) if job.rule != "all"]
    assert sorted(job.record["rule"] for job in jobs.values()) == sorted(job.rule for job in ran)
    assert all(job.read for job in jobs.values()), "a job whose process was not traced"
    found = {job.name: [str(path) for path in undeclared_reads(job, audited,
                                                               exempt_paths(job.record["rule"], config, tiny_run))]
             for job in jobs.values()}
    assert {name: paths for name, paths in found.items() if paths} == {}


# One undeclared read of each kind a job uses: Python's open and the native readers of pyarrow, safetensors, numpy
# and tokenizers (Rust).
READER = '''
import sys
from pathlib import Path

from defsent_plus.pipeline.jobs import start_job

start_job(snakemake)
Path(snakemake.input.declared).read_text()
kind = snakemake.params.kind
if kind == "open":
    open("plain.txt").read()
elif kind == "parquet":
    import pyarrow.parquet
    pyarrow.parquet.read_table("table.parquet")
elif kind == "safetensors":
    import safetensors.numpy
    safetensors.numpy.load_file("weights.safetensors")
elif kind == "numpy":
    import numpy
    numpy.load("array.npy")
elif kind == "tokenizers":
    import tokenizers
    tokenizers.Tokenizer.from_file("tokenizer.json")
Path(snakemake.output[0]).write_text("done")
'''
SNAKEFILE = '''
KINDS = {kinds!r}

rule all:
    input:
        expand("done/{{kind}}", kind=KINDS),

rule read:
    input:
        declared="declared.txt",
    output:
        "done/{{kind}}",
    params:
        kind=lambda w: w.kind,
    script:
        "reader.py"
'''
UNDECLARED = {"open": "plain.txt", "parquet": "table.parquet", "safetensors": "weights.safetensors",
              "numpy": "array.npy", "tokenizers": "tokenizer.json"}


def write_readable_files(folder: Path) -> None:
    import pyarrow
    import pyarrow.parquet
    import safetensors.numpy
    import tokenizers

    (folder / "declared.txt").write_text("declared")
    (folder / "plain.txt").write_text("plain")
    pyarrow.parquet.write_table(pyarrow.table({"word": ["a", "b"]}), folder / "table.parquet")
    safetensors.numpy.save_file({"weight": np.zeros(3, dtype=np.float32)}, str(folder / "weights.safetensors"))
    np.save(folder / "array.npy", np.arange(3))
    tokenizer = tokenizers.Tokenizer(tokenizers.models.WordLevel({"[UNK]": 0, "a": 1}, unk_token="[UNK]"))
    tokenizer.save(str(folder / "tokenizer.json"))


def test_audit_flags_undeclared_reads_of_each_kind(warm_python, tmp_path):
    trace = traced(warm_python)
    records = tmp_path / "jobs"
    records.mkdir()
    workdir = tmp_path / "workflow"
    workdir.mkdir()
    write_readable_files(workdir)
    started = time.time()
    (workdir / "reader.py").write_text(READER)
    (workdir / "Snakefile").write_text(SNAKEFILE.format(kinds=list(UNDECLARED)))
    result = subprocess.run([*warm_python.snakemake_command(), "--snakefile", str(workdir / "Snakefile"),
                             "--directory", str(workdir), "--cores", "2"],
                            capture_output=True, text=True, env={**workflow_env(), JOB_RECORDS: str(records)})
    assert result.returncode == 0, result.stderr[-3000:]
    jobs = job_reads(copy_traces_since(trace, started, tmp_path / "trace"), records)
    flagged = {job.record["wildcards"]["kind"]: [path.name for path in undeclared_reads(job, [workdir.resolve()])]
               for job in jobs.values()}
    assert flagged == {kind: [name] for kind, name in UNDECLARED.items()}
