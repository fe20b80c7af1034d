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

Beside those figures, :func:`reservation_table` gives what the SLURM requests reserve (each GPU job's runtime with
``costs.margin`` and ``costs.min_runtime_minutes``, times its GPU), the critical path of the GPU jobs and the wall time
on N GPUs (:mod:`defsent_plus.rehearsal.gpu_schedule`), and :func:`assumptions` says what all of them assume.

What it cannot know without running the config (this CPU's hours, the jobs' measured starts, the checkpoint files
as written) is what a rehearsal's cost sheet adds (docs/rehearsal.md compares both).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from defsent_plus.errors import DefSentError
from defsent_plus.pipeline import job_model, requests
from defsent_plus.pipeline.model_architectures import model_architecture
from defsent_plus.rehearsal import REPO, gpu_schedule

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
    gpu_jobs: list[gpu_schedule.GpuJob] = field(default_factory=list, repr=False)  # their DAG (gpu_schedule)
    cost_gpu: str = ""  # costs.gpu.name: the GPU whose rates the hours assume
    margin: float = 1.0  # costs.margin of the requests
    min_runtime_minutes: int = 0  # costs.min_runtime_minutes of the requests

    @property
    def requested_gpu_hours(self) -> float:
        """What the SLURM requests reserve (and a cluster bills): requested runtime x GPUs, over the GPU jobs."""
        return gpu_schedule.requested_gpu_hours(self.gpu_jobs)

    @property
    def critical_path_hours(self) -> float:
        return gpu_schedule.critical_path_hours(self.gpu_jobs)

    def wall_hours(self, gpus: int) -> float:
        """The GPU jobs' wall time on ``gpus`` GPUs (gpu_schedule.wall_hours)."""
        return gpu_schedule.wall_hours(self.gpu_jobs, gpus)


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
    costs = config["costs"]
    return Estimate(gpu_hours=gpu_hours(config, plan), training_memory_gb=training_memory_gb(config, plan),
                    **disk_gb(config, plan), gpu_jobs=gpu_schedule.gpu_job_dag(config, plan),
                    cost_gpu=costs["gpu"]["name"], margin=costs["margin"],
                    min_runtime_minutes=costs["min_runtime_minutes"])


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


def hours(value: float) -> str:
    return f"{value:.1f} h"


def reservation_table(estimates: dict[str, Estimate], gpus: int) -> str:
    """One row per config: the work's GPU-hours, what the SLURM requests reserve, the critical path of the GPU jobs
    and the wall time on ``gpus`` GPUs, with the cost model's GPU, margin and minimum runtime."""
    lines = [f"| config | GPU-hours (work) | requested GPU-hours (SLURM) | critical path | wall on {gpus} GPU"
             f"{'s' if gpus > 1 else ''} | step times of | margin / min runtime |", "|---|---|---|---|---|---|---|"]
    for name, e in estimates.items():
        lines.append(f"| {name} | {sum(e.gpu_hours.values()):.1f} | {e.requested_gpu_hours:.1f} | "
                     f"{hours(e.critical_path_hours)} | {hours(e.wall_hours(gpus))} | {e.cost_gpu} | "
                     f"x{e.margin:g} / {e.min_runtime_minutes} min |")
    return "\n".join(lines)


def assumptions(gpus: int) -> str:
    """What estimate's figures assume, in words."""
    return "\n".join([
        "Assumptions:",
        "- GPU-hours (work): each GPU job's start plus its FLOPs at the rates of costs.gpu, measured on the GPU named "
        "under 'step times of' (the defaults: one NVIDIA H200, docs/gpu.md); without costs.margin and without "
        "costs.min_runtime_minutes; CPU jobs not counted.",
        "- Requested GPU-hours (SLURM): what the requests reserve (what a cluster holds, and bills where it bills "
        "requests): each GPU job's requested runtime (its projection x costs.margin, at least "
        "costs.min_runtime_minutes) x 1 GPU (profiles/slurm); a job group asks for the sum of its jobs'; retries "
        "(a job killed at its limit asks attempt x that) not counted.",
        f"- Wall on {gpus} GPU{'s' if gpus > 1 else ''} (--gpus): the best greedy list schedule of the GPU jobs' work "
        "on at most that many GPUs, each job after the GPU jobs it needs; CPU jobs between them, queue waits and "
        "retries taken as zero. Never below the critical path (the wall time on unlimited GPUs).",
    ])
