"""A config's cost without a rehearsal: ``defsent-plus estimate``, the analytic half of the cost model (the job
model, :mod:`defsent_plus.pipeline.job_model`, whose numbers the SLURM requests take, without their margin): the
GPU-hours of the jobs that run on a GPU node (each one's start plus its FLOPs at ``costs.gpu``'s rates), each run's
peak GPU memory of training, the disk (checkpoints, embeddings, entry spaces), what the SLURM requests reserve, the
critical path of the GPU jobs' DAG and the wall time on N GPUs (:func:`assumptions` says what they assume). What
needs the config run (this CPU's hours, measured starts, checkpoints as written) is what a rehearsal's cost sheet
adds (docs/rehearsal.md).
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from dataclasses import dataclass, field, replace
from graphlib import TopologicalSorter
from pathlib import Path

import yaml

from defsent_plus.errors import DefSentError
from defsent_plus.names import split_space
from defsent_plus.pipeline import job_model, placement, requests
from defsent_plus.pipeline.dag import EncoderId
from defsent_plus.pipeline.job_model import Wildcards
from defsent_plus.pipeline.model_architectures import model_architecture
from defsent_plus.rehearsal import SCHEMA

GPUS_PER_JOB = 1  # profiles/slurm: each GPU job, and each job group, asks for one GPU
Key = tuple[str, tuple[tuple[str, str], ...]]  # a job's rule and its sorted wildcards


@dataclass(frozen=True)
class GpuJob:
    """One GPU job: its work in seconds, its requested runtime in minutes and the GPU jobs it waits for."""

    rule: str
    wildcards: Wildcards
    seconds: float
    requested_minutes: float
    after: tuple[Key, ...] = ()

    @property
    def key(self) -> Key:
        return key_of(self.rule, self.wildcards)


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
    gpu_jobs: list[GpuJob] = field(default_factory=list, repr=False)  # their DAG
    cost_gpu: str = ""  # costs.gpu.name: the GPU whose rates the hours assume
    margin: float = 1.0  # costs.margin of the requests
    min_runtime_minutes: int = 0  # costs.min_runtime_minutes of the requests

    @property
    def requested_gpu_hours(self) -> float:
        """What the SLURM requests reserve (and a cluster bills): requested runtime x GPUs, over the GPU jobs."""
        return sum(job.requested_minutes * GPUS_PER_JOB for job in self.gpu_jobs) / 60

    @property
    def critical_path_hours(self) -> float:
        """The DAG's longest chain of GPU work: the wall time on unlimited GPUs."""
        return max(remaining_paths(self.gpu_jobs).values(), default=0.0) / 3600

    def wall_hours(self, gpus: int) -> float:
        """Wall time on ``gpus`` GPUs: the best list schedule on at most that many (so more GPUs never take longer)."""
        return min(list_schedule_seconds(self.gpu_jobs, n)
                   for n in range(1, min(gpus, max(len(self.gpu_jobs), 1)) + 1)) / 3600


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
    costs, modelled = config["costs"], modelled_gpu_jobs(config, plan)
    memory = {row["run"]: row["peak_gpu_gb"] for row in training_memory(config, plan)}
    return Estimate(gpu_hours=hours_by_rule(modelled), training_memory_gb=memory, **checkpoint_gb(config, plan),
                    embeddings_gb=job_model.kept_bytes(config, plan, job_model.EMBEDDINGS) / 1e9,
                    spaces_gb=job_model.kept_bytes(config, plan, *job_model.SPACES) / 1e9,
                    gpu_jobs=dependencies(plan, modelled), cost_gpu=costs["gpu"]["name"], margin=costs["margin"],
                    min_runtime_minutes=costs["min_runtime_minutes"])


def key_of(rule: str, job: Wildcards) -> Key:
    return rule, tuple(sorted(job.items()))


def modelled_gpu_jobs(config: dict, plan, groups: dict[str, str] | None = None) -> list[GpuJob]:
    """Each distinct job of a projected rule of the job model that runs on a GPU node; the jobs of one SLURM job
    group (``groups``, the SLURM profile's by default) pay one start between them."""
    groups = placement.slurm_groups() if groups is None else groups
    started: set[str | None] = set()
    found = []
    for rule, kind in job_model.projected_kinds().items():
        for job in job_model.distinct_jobs(kind.jobs(plan)):
            if not kind.on_gpu(job):
                continue
            request = kind.request(config, plan, job, True)
            group = placement.group_of(groups, rule, job)
            start_shared = group is not None and group in started
            started.add(group)
            found.append(GpuJob(rule, job, request.seconds - (requests.START_SECONDS if start_shared else 0.0),
                                float(request.runtime)))
    return found


def hours_by_rule(modelled: list[GpuJob]) -> dict[str, float]:
    """GPU-hours per projected rule of the job model."""
    seconds = dict.fromkeys(job_model.projected_kinds(), 0.0)
    for job in modelled:
        seconds[job.rule] += job.seconds
    return {rule: total / 3600 for rule, total in seconds.items()}


def dependencies(plan, modelled: list[GpuJob]) -> list[GpuJob]:
    """The GPU jobs of a config (:func:`modelled_gpu_jobs`), each with those it waits for: an encoder's jobs wait
    for its training (a step's selected model: every candidate of the step and their STS-B dev vectors), a step's
    training for its builder's entry space and the transformed space it trains against."""
    keys = {job.key for job in modelled}
    by_step: dict[tuple, list[Key]] = defaultdict(list)  # (run, step) -> its trainings and candidates' dev vectors
    for job in modelled:
        if job.rule == "train":
            by_step[job.wildcards["run"], int(job.wildcards["step"])].append(job.key)
        elif job.rule == "embed" and job.wildcards["sentences"] == "stsb-dev":
            encoder = EncoderId.parse(job.wildcards["encoder"])
            if encoder.kind == "candidate":
                by_step[encoder.run, encoder.step].append(job.key)

    def ready(encoder: str) -> list[Key]:
        """The GPU jobs before ``encoder``'s weights exist."""
        parsed = EncoderId.parse(encoder)
        if parsed.kind == "candidate":
            return [key_of("train", {"run": parsed.run, "step": str(parsed.step), "space": parsed.space,
                                     "seed": str(parsed.seed)})]
        return by_step.get((parsed.run, parsed.step), []) if parsed.kind == "selected" else []

    def space_jobs(encoder: str, dataset: str, space: str) -> list[Key]:
        """The entry space of ``encoder`` on ``dataset`` and, for a transformed ``space``, its transform."""
        found = [key_of("entry_space", {"encoder": encoder, "dataset": dataset})]
        try:
            base, transform = split_space(space)
        except ValueError:  # a method's target without an entry space (vocab)
            return []
        if transform:
            found.append(key_of("transform_space", {"encoder": encoder, "dataset": dataset, "base": base,
                                                    "transform": transform}))
        return found

    def waits_for(rule: str, job: Wildcards) -> list[Key]:
        if rule == "train":
            builder = plan.space_builder(job["run"], int(job["step"])).name
            dataset = plan.config["runs"][job["run"]]["dataset"]
            return ready(builder) + space_jobs(builder, dataset, job["space"])
        if rule == "transform_space":
            return ready(job["encoder"]) + [key_of("entry_space", {"encoder": job["encoder"],
                                                                   "dataset": job["dataset"]})]
        if rule == "reverse_dictionary":
            run = job["run"]
            dataset = plan.config["runs"][run]["dataset"]
            final = EncoderId.selected(run, plan.final_step(run)).name
            reference = {"encoder": plan.space_builder(run, 1).name, "dataset": dataset}  # its starting model's space
            return ready(final) + [key_of("entry_space", reference)]
        return ready(job["encoder"]) if "encoder" in job else []

    return [replace(job, after=tuple(key for key in dict.fromkeys(waits_for(job.rule, job.wildcards)) if key in keys))
            for job in modelled]


def remaining_paths(jobs: list[GpuJob]) -> dict[Key, float]:
    """Each job's longest path to the end of the DAG, itself included (seconds)."""
    by_key, paths = {job.key: job for job in jobs}, {}
    waiting = dict.fromkeys(by_key, 0.0)  # the longest path of the jobs that wait for each
    for key in reversed(list(TopologicalSorter({job.key: job.after for job in jobs}).static_order())):
        paths[key] = by_key[key].seconds + waiting[key]
        for before in by_key[key].after:
            waiting[before] = max(waiting[before], paths[key])
    return paths


def list_schedule_seconds(jobs: list[GpuJob], gpus: int) -> float:
    """The makespan of a greedy list schedule on ``gpus`` GPUs: whenever a GPU is free, the ready job with the
    longest remaining path starts on it."""
    priority, by_key = remaining_paths(jobs), {job.key: (index, job) for index, job in enumerate(jobs)}
    order = TopologicalSorter({job.key: job.after for job in jobs})
    order.prepare()  # a cycle: graphlib.CycleError, naming it
    ready: list[tuple[float, int, Key]] = []
    running: list[tuple[float, int, Key]] = []
    now = 0.0
    while order.is_active():
        for key in order.get_ready():
            heapq.heappush(ready, (-priority[key], by_key[key][0], key))
        while ready and len(running) < gpus:
            _, index, key = heapq.heappop(ready)
            heapq.heappush(running, (now + by_key[key][1].seconds, index, key))
        now, _, done = heapq.heappop(running)
        order.done(done)
    return now


def training_memory(config: dict, plan, built: dict | None = None) -> list[dict]:
    """Per run: the peak GPU memory of its training job (``peak_gpu_gb``: weights, gradients, Adam, activations,
    logits) at its batch size and its method's maximum length, with the model, batch, passes and length it assumes
    (``built``: dataset sizes, as :func:`requests.dataset_size`)."""
    from defsent_plus.rehearsal.models import parameter_count

    rows = []
    for run, block in config["runs"].items():
        method = plan.method(run)
        max_length = method.resolved_options(plan.method_options(run)).get("max_length", 128)
        architecture = model_architecture(config["models"][requests.model_of_run(config, run)])
        classes = requests.output_classes(config, run, method, architecture, built)
        peak = requests.training_memory_bytes(architecture, block["batch_size"], max_length, classes,
                                              parameter_count(architecture, encoder_only=False), method.encoder_passes)
        rows.append({"run": run, "model": architecture.name, "batch": block["batch_size"],
                     "passes": method.encoder_passes, "max_length": max_length, "peak_gpu_gb": peak / 1e9})
    return rows


def saved_weights_bytes(architecture, method) -> float:
    """fp32 weights of the class a method saves: the encoder, with the masked-LM head where the method predicts
    headwords over the vocabulary (DefSent)."""
    from defsent_plus.rehearsal.models import parameter_count

    return job_model.FLOAT32_BYTES * parameter_count(architecture, encoder_only=not method.costs.saves_masked_lm_head)


def checkpoint_gb(config: dict, plan, measured: dict[str, float] | None = None) -> dict[str, float]:
    """Checkpoints kept (each step's selected copy; every candidate's too with ``keep_weights: all``), every
    candidate's weights and, with ``keep_weights: selected``, the most that may exist at once: each run prunes its
    own steps, so their largest may train at once. A checkpoint's bytes: ``measured`` (run -> bytes of a copy
    written), else its model's saved weights counted (:func:`saved_weights_bytes`)."""
    selected, by_step, largest = 0.0, [], 0.0
    for run in config["runs"]:
        architecture = model_architecture(config["models"][requests.model_of_run(config, run)])
        size = (measured or {}).get(run) or saved_weights_bytes(architecture, plan.method(run))
        steps = [len(plan.candidates(run, step)) * size for step in range(1, plan.final_step(run) + 1)]
        selected, by_step, largest = selected + len(steps) * size, by_step + steps, largest + max(steps)
    every, keep_all = sum(by_step), config["selection"]["keep_weights"] == "all"
    return {"checkpoints_gb": (selected + (every if keep_all else 0.0)) / 1e9, "every_candidate_gb": every / 1e9,
            "transient_gb": 0.0 if keep_all else largest / 1e9}


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


def reservation_table(estimates: dict[str, Estimate], gpus: int) -> str:
    """One row per config: the work's GPU-hours, what the SLURM requests reserve, the critical path of the GPU jobs
    and the wall time on ``gpus`` GPUs, with the cost model's GPU, margin and minimum runtime."""
    lines = [f"| config | GPU-hours (work) | requested GPU-hours (SLURM) | critical path | wall on {gpus} GPU"
             f"{'s' if gpus > 1 else ''} | step times of | margin / min runtime |", "|---|---|---|---|---|---|---|"]
    for name, e in estimates.items():
        lines.append(f"| {name} | {sum(e.gpu_hours.values()):.1f} | {e.requested_gpu_hours:.1f} | "
                     f"{e.critical_path_hours:.1f} h | {e.wall_hours(gpus):.1f} h | {e.cost_gpu} | "
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
