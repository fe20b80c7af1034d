"""Running the workflow on the tiny config in a scratch directory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml
from conftest import FIXTURES, REPO

MIRROR_VARIABLES = ("DEFSENT_SENTEVAL", "DEFSENT_OXFORD")


def write_tiny_config(workdir: Path, model: Path, **overrides) -> dict:
    text = (FIXTURES / "tiny" / "config.yaml").read_text().format(model=model, fixtures=FIXTURES)
    config = yaml.safe_load(text)
    for key, value in overrides.items():
        config[key] = value
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return config


def validated(config: dict) -> dict:
    """``config`` validated against the workflow's schema, with its defaults filled in (as the workflow sees it)."""
    from defsent_plus.pipeline.config_schema import validated_config

    return validated_config(config, REPO / "workflow" / "schemas" / "config.schema.yaml")


def snakemake(workdir: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """Run Snakemake on the repository's workflow with ``workdir`` as working directory."""
    command = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory",
               str(workdir), "--configfile", str(workdir / "config.yaml"), "--cores", "2", *args]
    env = {k: v for k, v in os.environ.items() if k not in MIRROR_VARIABLES}  # the tiny config names its own
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    if check and result.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-6000:]}")
    return result


def planned_jobs(workdir: Path, *args: str) -> dict[str, int]:
    """Rule -> job count of a dry run."""
    out = snakemake(workdir, "--dry-run", "--quiet", "rules", *args).stdout
    counts: dict[str, int] = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit() and parts[0] not in ("job", "total"):
            counts[parts[0]] = int(parts[1])
    return counts
