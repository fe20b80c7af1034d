"""Running the workflow on the tiny config in a scratch directory, and the configs of the DAGs that tests share
(tests/conftest.py builds each once per session)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import yaml
from conftest import FIXTURES, REPO
from warm_python import WarmPython

from defsent_plus.pipeline import dag
from defsent_plus.pipeline.dag import EncoderId

MIRROR_VARIABLES = ("DEFSENT_SENTEVAL", "DEFSENT_OXFORD")
PLUGINS = Path(__file__).parent / "plugins"  # plugins from outside the package: toy_mirror.py, toy_uniformity.py

# The runs of every method beside the tiny config's DefSent+ run, in one DAG (conftest.methods_run); each test module
# reads its own runs. test_contrastive_workflow: SimCSE, SLT-FAI (its ConSERT variant: the rules and the trainer are
# the same for both variants, which tests/test_slt_fai*.py and tests/test_resume.py train) and DefSent+ started from
# SimCSE's selected model.
CONTRASTIVE = {"model": "tiny", "dataset": "a", "training_pooling": "cls", "seeds": [0], "batch_size": 8,
               "steps": [{"lr": 1.0e-3}]}
CONTRASTIVE_RUNS = {
    "sim": {**CONTRASTIVE, "method": "simcse"},
    # ConSERT + SLT-FAI on ConSERT's stssick corpus (transductive), two short epochs with early stopping
    "slt_c": {**CONTRASTIVE, "method": "slt_fai", "training_pooling": "mean",
              "options": {"variant": "consert", "epochs": 2, "patience": 2, "select_every": 3, "max_sentences": 40}},
    "sim_dp": {"start_from": "sim", "dataset": "a", "training_pooling": "cls", "seeds": [0], "batch_size": 8,
               "steps": [{"lr": 1.0e-3, "spaces": ["amp"]}]},
}
# test_defsent_workflow: DefSent beside DefSent+ on a held-out subset of dataset c; test_reverse_dictionary: DefSent+'s
# held-out protocol (two steps, the last with two spaces: its entry space comes from step 1's selected encoder).
DEFSENT_SUBSETS = {"cheld": {"dataset": "c", "max_entries": 1000, "seed": 0,
                             "heldout": {"dev": 0.2, "test": 0.2, "seed": 0}}}
DEFSENT_RUNS = {
    "ds": {"method": "defsent", "model": "tiny", "dataset": "cheld", "training_pooling": "max", "seeds": [0, 1],
           "batch_size": 4, "steps": [{"lr": 1.0e-3}]},
    "dp": {"model": "tiny", "dataset": "cheld", "training_pooling": "cls", "seeds": [0], "batch_size": 4,
           "steps": [{"lr": 1.0e-3, "spaces": ["amp"]}, {"lr": 1.0e-3, "spaces": ["amp", "amp.ica"]}]},
}
# test_toy_method_workflow: the toy method of tests/plugins, registered through method_plugins.
MIRROR_RUN = {"method": "mirror", "model": "tiny", "dataset": "a", "training_pooling": "mean", "seeds": [0, 1],
              "batch_size": 8, "steps": [{"lr": 1.0e-3}]}
METHODS_CONFIG = {
    "method_plugins": ["toy_mirror"],
    "evaluator_plugins": ["toy_uniformity"],  # test_toy_evaluator_workflow: a target of its own, not in rule all
    "subsets": DEFSENT_SUBSETS,
    "runs": {**CONTRASTIVE_RUNS, **DEFSENT_RUNS, "mirror": MIRROR_RUN},
    "methods": {"defsent_plus": {"max_length": 32}, "simcse": {"max_length": 32, "select_every": 4},
                "slt_fai": {"max_length": 32, "select_every": 0, "warmup": 0.25}, "defsent": {"max_length": 32},
                "mirror": {"temperature": 0.05}},
}


def write_tiny_config(workdir: Path, model: Path, **overrides) -> dict:
    text = (FIXTURES / "tiny" / "config.yaml").read_text().format(model=model, fixtures=FIXTURES)
    config = yaml.safe_load(text)
    for key, value in overrides.items():
        config[key] = value
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return config


# The train summary of step 1's first candidate: as a target, only the dictionary, the base entry space and this
# training run (the interruption tests of test_incremental and test_slurm).
TRAIN_TARGET = dag.train_summary(EncoderId.candidate("tiny", 1, "amp", 0))
BULK_DEFINITIONS = 1000


def one_sentence_batches(workdir: Path, model: Path, definitions: int = BULK_DEFINITIONS,
                         every_steps: int = 100) -> None:
    """The tiny config plus ``definitions`` seeded definitions, trained with batch size 1 (about one optimizer step
    per definition, so an interruption lands mid-epoch even on a loaded machine), its state saved every
    ``every_steps`` steps."""
    config = write_tiny_config(workdir, model)
    words = (FIXTURES / "tiny" / "dictionary.tsv").read_text().split()
    rng = np.random.default_rng(0)
    lines = [f"bulk{i % 500}\t{' '.join(rng.choice(words, size=8))}" for i in range(definitions)]
    (workdir / "bulk.tsv").write_text("\n".join(lines) + "\n")
    config["dictionary"]["sources"].append({"name": "bulk", "type": "tsv", "path": str(workdir / "bulk.tsv")})
    config["runs"]["tiny"]["batch_size"] = 1
    config["resume"] = {"every_steps": every_steps, "every_minutes": 0}
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))


def wait_for(condition: Callable[[], bool], timeout: float, what: str, poll: float = 0.02,
             explain: Callable[[], str] | None = None) -> None:
    """Poll ``condition`` until true; TimeoutError after ``timeout`` seconds, with ``explain()`` (logs) appended."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {what} after {timeout}s" + (f":\n{explain()}" if explain else ""))
        time.sleep(poll)


def copy_run(workdir: Path, destination: Path) -> Path:
    """A copy of a finished workdir (file times and Snakemake's records kept, so the copy is as finished)."""
    shutil.copytree(workdir, destination, symlinks=True)
    return destination


def validated(config: dict) -> dict:
    """``config`` validated against the workflow's schema, with its defaults filled in (as the workflow sees it)."""
    from defsent_plus.pipeline.config_schema import validated_config

    return validated_config(config, REPO / "workflow" / "schemas" / "config.schema.yaml")


def snakemake(workdir: Path, *args: str, check: bool = True, pythonpath: Sequence[Path] = (),
              python: WarmPython | None = None, fresh: Sequence[str] = (), niceness: int = 0,
              env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run Snakemake on the repository's workflow with ``workdir`` as working directory; ``pythonpath``: folders
    every job can import from (as a user's own installed package), e.g. ``PLUGINS``; ``python``: the warm
    interpreter its script jobs start from (conftest's ``warm_python``; ``fresh``: scripts it leaves to a fresh
    one), else a fresh one each; ``niceness``: Snakemake and its jobs run niced (a DAG in the background); ``env``:
    variables added to its environment."""
    start = python.snakemake_command(fresh) if python else [sys.executable, "-m", "snakemake"]
    niced = ["nice", "-n", str(niceness)] if niceness else []
    command = [*niced, *start, "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir), "--configfile",
               str(workdir / "config.yaml"), "--cores", "2", "--benchmark-extended", *args]  # as the profiles
    result = subprocess.run(command, capture_output=True, text=True, env={**workflow_env(pythonpath), **(env or {})})
    if check and result.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-6000:]}")
    return result


def workflow_env(pythonpath: Sequence[Path] = ()) -> dict[str, str]:
    """The environment of a Snakemake on the tiny config: without the data mirror variables (the tiny config names
    its own), with ``pythonpath`` first on the PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if k not in MIRROR_VARIABLES}
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [*map(str, pythonpath), env.get("PYTHONPATH")]))
    return env


def planned_jobs(workdir: Path, *args: str, targets: Sequence[str] = (), pythonpath: Sequence[Path] = ()
                 ) -> dict[str, int]:
    """Rule -> job count of a dry run (of ``targets``; none: ``rule all``)."""
    out = snakemake(workdir, *targets, "--dry-run", "--quiet", "rules", *args, pythonpath=pythonpath).stdout
    counts: dict[str, int] = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit() and parts[0] not in ("job", "total"):
            counts[parts[0]] = int(parts[1])
    return counts


def ran_and_modelled(workdir: Path) -> tuple[set, set]:
    """(rule, wildcards) of every job Snakemake ran in ``workdir`` (its records) and of every job the job model
    plans for the workdir's config (defsent_plus/pipeline/job_model.py), ``rule all`` apart."""
    from defsent_plus.pipeline.job_model import JOB_KINDS
    from defsent_plus.pipeline.plan import Plan
    from defsent_plus.rehearsal.records import executed_jobs

    plan = Plan(validated(yaml.safe_load((workdir / "config.yaml").read_text())), lambda run, step: {})
    modelled = {(rule, tuple(sorted(job.items()))) for rule, kind in JOB_KINDS.items() for job in kind.jobs(plan)}
    ran = {(job.rule, tuple(sorted(job.wildcards.items()))) for job in executed_jobs(workdir) if job.rule != "all"}
    return ran, modelled
