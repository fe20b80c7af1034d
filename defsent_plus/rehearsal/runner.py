"""``defsent-plus rehearse``: prepare a rehearsal of a config (models, stand-ins, the derived config) in its own
directory and run the workflow there.

Layout under ``rehearsals/`` (git-ignored): ``models/`` and ``standins-<size>-<caps>/`` are shared by every rehearsal
(built once); ``<config>[-tiny]/`` is one rehearsal's Snakemake working directory: ``config.yaml``, ``results/``
(with ``cost_sheet.md``), ``data/``, ``resources/``, ``logs/``, ``benchmarks/``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import yaml

from defsent_plus.acquisition.catalog import CATALOG, mirror_variable
from defsent_plus.acquisition.layout import manifest_of, write_manifest
from defsent_plus.errors import DefSentError
from defsent_plus.model_specs import spec_kind
from defsent_plus.pipeline.job_model import STS_UNITS, kind_of
from defsent_plus.pipeline.model_architectures import model_architecture
from defsent_plus.pipeline.model_store import resolve_model
from defsent_plus.rehearsal import REPO, SCHEMA, standins
from defsent_plus.rehearsal import caps as capping
from defsent_plus.rehearsal import models as building

log = logging.getLogger(__name__)

BUDGET_SECONDS = 20 * 60  # a rehearsal's two runs together, on an idle machine
DRY_RUN = {"-n", "--dry-run", "--dryrun", "--summary", "--detailed-summary", "--lint", "--list-rules"}
MIRROR_VARIABLES = tuple(mirror_variable(name) for name in CATALOG)  # each would override its stand-in


def rehearsal_name(config_path: Path, size: str) -> str:
    return config_path.stem + ("" if size == "full" else f"-{size}")


def tokenizer_dir(root: Path, family: str, vocab_size: int, nltk_data: Path, senteval: Path) -> Path:
    """The family's tokenizer at the real vocabulary size (tiny models too: a small BPE splits sentences into so
    many pieces that a prompt's mask falls past the maximum length), built once under ``root/models/tokenizers``."""
    out = root / "models" / "tokenizers" / f"{family}-{vocab_size}"
    if out.is_dir():
        return out
    if family == "bert":
        return building.bert_tokenizer(out)
    return building.roberta_tokenizer(out, vocab_size, building.local_texts(nltk_data, senteval))


def rehearsal_model(root: Path, spec: str, size: str, nltk_data: Path, senteval: Path,
                    real_depth: bool = False) -> Path:
    """The random model standing in for the model ``spec`` (at tiny size, its tiny architecture, ``real_depth``:
    with its real number of layers), built once under ``root/models``: a hub model with its family's tokenizer at
    the real vocabulary size, a local or packaged one with its own tokenizer."""
    kind, _ = spec_kind(spec)
    architecture = model_architecture(spec)
    if size != "full":
        architecture = architecture.tiny(real_depth)
    out = root / "models" / f"{architecture.name}{local_suffix(spec) if kind == 'local' else ''}-seed0"
    if not out.is_dir():
        tokenizer = (tokenizer_dir(root, architecture.family, architecture.config["vocab_size"], nltk_data, senteval)
                     if kind == "hub" else Path(resolve_model(spec)))
        building.build_model(architecture, tokenizer, out)
    return out


def local_suffix(spec: str) -> str:
    """A local model's folder, hashed: two local models of one folder name are two models."""
    return "-" + hashlib.sha256(str(Path(resolve_model(spec)).resolve()).encode()).hexdigest()[:8]


def standin_blocks(root: Path, caps: capping.Caps, size: str, nltk_data: Path, senteval: Path) -> dict[str, dict]:
    """``data.<name>`` blocks of the stand-ins, built once per size and caps under ``root/standins-<size>-<caps>``."""
    folder = root / f"standins-{size}-{caps.sts_pairs}p-{caps.corpus_sentences}s-{caps.oxford_lines or 'all'}"
    writers = {
        "senteval": lambda out: standins.write_senteval(out, senteval, caps.sts_pairs),
        "oxford": lambda out: standins.write_oxford(out, nltk_data, caps.oxford_lines),
        "wiki1m": lambda out: standins.write_wiki1m(out, senteval, caps.corpus_sentences),
    }
    blocks = {}
    for name, write in writers.items():
        out = folder / name
        manifest = out.with_name(name + ".sha256")
        if not manifest.is_file():
            write(out)
            write_manifest(manifest_of(out), manifest)
        blocks[name] = {"mirror": str(out.resolve()), "link": "copy", "checksums": str(manifest.resolve())}
    return blocks


def senteval_dir() -> Path:
    """The real SentEval data the stand-in is cut from: $DEFSENT_SENTEVAL, else the shared copy beside the checkout."""
    senteval = Path(os.environ.get("DEFSENT_SENTEVAL") or REPO.parent / "shared" / "data" / "senteval")
    if not (senteval / "STS").is_dir():
        raise DefSentError(senteval, "SentEval data not found (set DEFSENT_SENTEVAL to its downstream folder)")
    return senteval


def prepare(config_path: Path, size: str = "full", root: Path = REPO / "rehearsals",
            senteval: Path | None = None, nltk_data: Path = REPO / "nltk_data", factor: int | None = None) -> Path:
    """Build what the rehearsal of ``config_path`` needs and write its config; returns its working directory.
    ``factor``: the rehearsal's second work size instead (caps.larger_caps), in ``<workdir>/larger``."""
    from defsent_plus.pipeline.config_schema import validated_config

    senteval = senteval or senteval_dir()
    real = yaml.safe_load(Path(config_path).read_text(encoding="utf-8"))
    replaced = capping.replaced_models(real, size)
    caps = capping.caps_for(size, capping.rehearsal_hidden_sizes(real, size), real, senteval)
    workdir = root / rehearsal_name(Path(config_path), size)
    if factor:
        caps, workdir = capping.larger_caps(caps, factor), workdir / capping.LARGER
    deep = capping.names_layers(real)
    models = {name: rehearsal_model(root, spec, size, nltk_data, senteval, deep) for name, spec in replaced.items()}
    blocks = standin_blocks(root, caps, size, nltk_data, senteval)
    shown = os.path.relpath(Path(config_path).resolve(), REPO) if Path(config_path).resolve().is_relative_to(
        REPO) else str(config_path)
    config = capping.derive(real, models=models, standins=blocks, caps=caps, source=shown, size=size)
    workdir.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(config, sort_keys=False)
    validated_config(yaml.safe_load(text), SCHEMA)
    (workdir / "config.yaml").write_text(text, encoding="utf-8")
    return workdir


def workflow_env() -> dict[str, str]:
    """The environment of a rehearsal's Snakemake: offline, and no mirror variable overriding a stand-in."""
    env = {k: v for k, v in os.environ.items() if k not in MIRROR_VARIABLES}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    return env


def snakemake(workdir: Path, *args: str) -> int:
    """Snakemake on a rehearsal's working directory and config, with the workstation profile."""
    command = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir),
               "--configfile", str(workdir / "config.yaml"), "--profile", str(REPO / "profiles" / "workstation"), *args]
    log.info("%s", " ".join(command))
    return subprocess.run(command, env=workflow_env()).returncode


def run(workdir: Path, *args: str) -> int:
    """Run the rehearsal's workflow (the workstation profile; ``args`` go to Snakemake); a full-size rehearsal then
    runs again at a larger work size (``<workdir>/larger``), the largest of ``caps.LARGER_FACTORS`` its time
    budget allows, so that the cost sheet fits each job's start and rate (docs/rehearsal.md)."""
    started = time.monotonic()
    code = snakemake(workdir, *args)
    rehearsal = yaml.safe_load((workdir / "config.yaml").read_text(encoding="utf-8"))["rehearsal"]
    if code or rehearsal["size"] != "full" or DRY_RUN.intersection(args):
        return code
    factor = larger_factor(workdir, time.monotonic() - started)
    if factor is None:
        log.warning("no second work size: it would run past the rehearsal's %d-minute budget; the cost sheet "
                    "projects from one size", BUDGET_SECONDS // 60)
        return code
    larger = prepare(REPO / rehearsal["config"], "full", root=workdir.parent, factor=factor)  # an absolute one as it is
    return snakemake(larger, *args)


def larger_factor(workdir: Path, first_wall_seconds: float) -> int | None:
    """The second work size's factor for the rehearsal in ``workdir``, from its first run's jobs."""
    from defsent_plus.rehearsal.context import build_context
    from defsent_plus.rehearsal.costs import job_rows

    rows = job_rows(workdir, build_context(workdir, senteval_dir()))
    return factor_within_budget(rows, BUDGET_SECONDS - first_wall_seconds, len(os.sched_getaffinity(0)))


def factor_within_budget(rows: list[dict], seconds_left: float, cores: int) -> int | None:
    """The largest factor of ``caps.LARGER_FACTORS`` whose second run ends within ``seconds_left`` on ``cores``,
    estimated from the first run's jobs (each job's start, plus its work beyond the start times its growth: the
    factor, × ``caps.LARGER_STS`` for the work the STS pairs set, ``job_model.STS_UNITS``); None if none does."""
    from defsent_plus.rehearsal.costs import start_seconds

    start = start_seconds(rows)
    fixed = sum(min(r["seconds"], start) if r["units"] else r["seconds"] for r in rows)
    work = [(max(r["seconds"] - start, 0.0), kind_of(r["rule"]).unit in STS_UNITS) for r in rows if r["units"]]

    def seconds(factor: int) -> float:
        return (fixed + sum(w * factor * (capping.LARGER_STS if sts else 1) for w, sts in work)) / cores

    return next((f for f in capping.LARGER_FACTORS if seconds(f) <= seconds_left), None)
