"""A config's cost without a rehearsal: ``defsent-plus estimate``. The analytic half of the cost model only (the job
model, :mod:`defsent_plus.pipeline.job_model`: the same numbers the jobs' SLURM requests come from, without the
margin):

* GPU-hours: every job of a projected rule of the job model that runs on a GPU node (training, entry spaces,
  FastICA, embeddings, reverse dictionaries, baselines' passes), each its start plus its FLOPs at ``costs.gpu``'s
  rates; the CPU jobs (scores, tables, selection, centring and whitening) are not counted;
* peak GPU memory of each run's training job at its batch size and maximum length;
* disk: checkpoints (fp32 weights of the saved class: the encoder, with the masked-LM head for DefSent's methods),
  each step's selected copy and every candidate's, or with ``selection.keep_weights: selected`` the most candidates
  that may exist at once (each run's largest step, all runs at the same time); the embeddings and the entry spaces.

What it cannot know without running the config (this CPU's hours, the jobs' measured starts, the checkpoint files
as written) is what a rehearsal's cost sheet adds (docs/rehearsal.md compares both).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from defsent_plus.errors import DefSentError
from defsent_plus.pipeline import job_model, requests
from defsent_plus.pipeline.model_architectures import model_architecture
from defsent_plus.rehearsal import REPO

SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
FLOAT32_BYTES = job_model.FLOAT32_BYTES


@dataclass(frozen=True)
class Estimate:
    """A config's projected GPU-hours (per rule), peak GPU memory of training (per run) and disk (GB)."""

    gpu_hours: dict[str, float]
    training_memory_gb: dict[str, float]
    checkpoints_gb: float  # what stays: each step's selected copy, and every candidate's with keep_weights: all
    every_candidate_gb: float
    transient_gb: float  # with keep_weights: selected, the most candidates' weights that may exist at once
    embeddings_gb: float
    spaces_gb: float


def read_config(path: Path) -> dict:
    """A config file as the workflow sees it: validated, with the schema's defaults."""
    from defsent_plus.pipeline.config_schema import validated_config

    if not Path(path).is_file():
        raise DefSentError(path, "no such config file")
    return validated_config(yaml.safe_load(Path(path).read_text(encoding="utf-8")), SCHEMA)


def estimate(config: dict) -> Estimate:
    """The analytic costs of a validated ``config`` (module docstring)."""
    from defsent_plus.pipeline.plan import Plan

    plan = Plan(config, lambda run, step: {})
    return Estimate(gpu_hours=gpu_hours(config, plan), training_memory_gb=training_memory_gb(config, plan),
                    **disk_gb(config, plan))


def gpu_hours(config: dict, plan, groups: dict[str, str] | None = None) -> dict[str, float]:
    """GPU-hours per projected rule of the job model: each distinct job that runs on a GPU node; the jobs of one SLURM
    job group (``groups``, the SLURM profile's by default) pay one start between them."""
    groups = job_model.slurm_groups() if groups is None else groups
    hours = {}
    started: set[str] = set()
    for rule, kind in job_model.projected_kinds().items():
        seconds = 0.0
        for job in job_model.distinct_jobs(kind.jobs(plan)):
            if not kind.on_gpu(job):
                continue
            seconds += kind.request(config, plan, job, True).seconds
            group = job_model.group_of(groups, rule, job)
            if group is not None and group in started:  # its group's job has started already
                seconds -= requests.START_SECONDS
            started.add(group)
        hours[rule] = seconds / 3600
    return hours


def training_memory_gb(config: dict, plan, built: dict | None = None) -> dict[str, float]:
    """Per run: the peak GPU memory of its training job (weights, gradients, Adam, activations, logits) at its batch
    size and its method's maximum length (``built``: dataset sizes, as :func:`requests.dataset_size`)."""
    from defsent_plus.rehearsal.models import parameter_count

    memory = {}
    for run, block in config["runs"].items():
        method = plan.method(run)
        options = method.resolved_options(plan.method_options(run))
        architecture = model_architecture(config["models"][requests.model_of_run(config, run)])
        classes = requests.output_classes(config, run, method, architecture, built)
        memory[run] = requests.training_memory_bytes(
            architecture, block["batch_size"], options.get("max_length", 128), classes,
            parameter_count(architecture, encoder_only=False), method.encoder_passes) / 1e9
    return memory


def checkpoint_bytes(config: dict, plan, run: str) -> float:
    """A saved candidate of ``run`` (:func:`saved_weights_bytes` of its model and method)."""
    architecture = model_architecture(config["models"][requests.model_of_run(config, run)])
    return saved_weights_bytes(architecture, plan.method(run))


def saved_weights_bytes(architecture, method) -> float:
    """fp32 weights of the class a method saves: the encoder, with the masked-LM head where the method predicts
    headwords over the vocabulary (DefSent)."""
    from defsent_plus.rehearsal.models import parameter_count

    return FLOAT32_BYTES * parameter_count(architecture, encoder_only=not method.costs.saves_masked_lm_head)


def disk_gb(config: dict, plan) -> dict[str, float]:
    """Checkpoints, every candidate's weights, the transient candidates, embeddings and entry spaces, in GB."""
    selected = every = transient = 0.0
    for run in config["runs"]:
        size = checkpoint_bytes(config, plan, run)
        steps = plan.final_step(run)
        selected += steps * size
        per_step = [len(plan.candidates(run, step)) * size for step in range(1, steps + 1)]
        every += sum(per_step)
        transient += max(per_step)  # each run prunes its own steps: their largest may train at once
    keep_all = config["selection"]["keep_weights"] == "all"
    return {"checkpoints_gb": (selected + (every if keep_all else 0.0)) / 1e9, "every_candidate_gb": every / 1e9,
            "transient_gb": 0.0 if keep_all else transient / 1e9,
            "embeddings_gb": job_model.kept_bytes(config, plan, job_model.EMBEDDINGS) / 1e9,
            "spaces_gb": job_model.kept_bytes(config, plan, *job_model.SPACES) / 1e9}


def markdown_table(estimates: dict[str, Estimate]) -> str:
    """One row per config: GPU-hours (train's share), the largest training peak and the disk figures."""
    lines = ["| config | GPU-hours | of which train | peak GPU memory of training | checkpoints kept / every "
             "candidate / transient | embeddings | spaces |", "|---|---|---|---|---|---|---|"]
    for name, e in estimates.items():
        run, peak = max(e.training_memory_gb.items(), key=lambda item: item[1])
        lines.append(f"| {name} | {sum(e.gpu_hours.values()):.1f} | {e.gpu_hours['train']:.1f} | {peak:.1f} GB "
                     f"({run}) | {e.checkpoints_gb:.1f} / {e.every_candidate_gb:.1f} / {e.transient_gb:.1f} GB | "
                     f"{e.embeddings_gb:.2f} GB | {e.spaces_gb:.2f} GB |")
    return "\n".join(lines)
