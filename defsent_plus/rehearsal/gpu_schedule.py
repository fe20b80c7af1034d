"""A config's GPU jobs as a DAG, for ``estimate``'s reservation and wall-time figures.

Each GPU job of the job model (:mod:`defsent_plus.pipeline.job_model`, the jobs ``estimate.gpu_hours`` counts) with
its work (projected seconds, no margin; the jobs of one SLURM job group pay one start) and its SLURM request (runtime
with ``costs.margin`` and ``costs.min_runtime_minutes``, times one GPU: what a cluster reserves), and the GPU jobs it
waits for: an encoder's jobs wait for its training (a step's selected model: every candidate of the step and their
STS-B dev vectors), a step's training for its builder's entry space and the transformed space it trains against.
The CPU jobs between them (dev scores, selection, centring) count as instantaneous.

The wall time on N GPUs is the best greedy list schedule (longest remaining path first) on at most N GPUs: never
below the critical path, and never longer with more GPUs.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from functools import cache

from defsent_plus.names import split_space
from defsent_plus.pipeline import job_model, requests
from defsent_plus.pipeline.dag import EncoderId
from defsent_plus.pipeline.plan_jobs import Wildcards

GPUS_PER_JOB = 1  # profiles/slurm: each GPU job, and each job group, asks for one GPU
Key = tuple[str, tuple[tuple[str, str], ...]]


@dataclass(frozen=True)
class GpuJob:
    """One GPU job: its work in seconds, its requested runtime in minutes and the GPU jobs it waits for."""

    key: Key
    seconds: float
    requested_minutes: float
    after: tuple[Key, ...]


def key_of(rule: str, job: Wildcards) -> Key:
    return rule, tuple(sorted(job.items()))


def modelled_gpu_jobs(config: dict, plan, groups: dict[str, str] | None = None) -> list[tuple[str, Wildcards, float,
                                                                                                   float]]:
    """(rule, wildcards, seconds, requested minutes) of each distinct GPU job, in ``estimate.gpu_hours``' order."""
    groups = job_model.slurm_groups() if groups is None else groups
    started: set[str | None] = set()
    found = []
    for rule, kind in job_model.projected_kinds().items():
        for job in job_model.distinct_jobs(kind.jobs(plan)):
            if not kind.on_gpu(job):
                continue
            request = kind.request(config, plan, job, True)
            group = job_model.group_of(groups, rule, job)
            start_shared = group is not None and group in started
            started.add(group)
            found.append((rule, job, request.seconds - (requests.START_SECONDS if start_shared else 0.0),
                          float(request.runtime)))
    return found


def dependencies(plan, modelled: list[tuple[str, Wildcards, float, float]]) -> dict[Key, list[Key]]:
    """Key -> the GPU jobs among ``modelled`` that a job waits for (module docstring)."""
    keys = {key_of(rule, job) for rule, job, _, _ in modelled}
    trains: dict[tuple[str, str], list[Key]] = {}
    dev_vectors: dict[str, list[Key]] = {}
    for rule, job, _, _ in modelled:
        if rule == "train":
            trains.setdefault((job["run"], job["step"]), []).append(key_of(rule, job))
        if rule == "embed" and job["sentences"] == "stsb-dev":
            dev_vectors.setdefault(job["encoder"], []).append(key_of(rule, job))

    def ready(encoder: str) -> list[Key]:
        """The GPU jobs before ``encoder``'s weights exist."""
        parsed = EncoderId.parse(encoder)
        if parsed.kind == "base":
            return []
        if parsed.kind == "candidate":
            return [key_of("train", {"run": parsed.run, "step": str(parsed.step), "space": parsed.space,
                                     "seed": str(parsed.seed)})]
        step_trains = trains.get((parsed.run, str(parsed.step)), [])
        candidates = [EncoderId.candidate(parsed.run, parsed.step, dict(key[1])["space"], int(dict(key[1])["seed"]))
                      for key in step_trains]
        return step_trains + [key for candidate in candidates for key in dev_vectors.get(candidate.name, [])]

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

    return {key_of(rule, job): [key for key in dict.fromkeys(waits_for(rule, job)) if key in keys]
            for rule, job, _, _ in modelled}


def gpu_job_dag(config: dict, plan, groups: dict[str, str] | None = None) -> list[GpuJob]:
    """Every GPU job of a config with its work, its request and the GPU jobs it waits for."""
    modelled = modelled_gpu_jobs(config, plan, groups)
    after = dependencies(plan, modelled)
    return [GpuJob(key_of(rule, job), seconds, minutes, tuple(after[key_of(rule, job)]))
            for rule, job, seconds, minutes in modelled]


def requested_gpu_hours(jobs: list[GpuJob]) -> float:
    """What the SLURM requests reserve: each GPU job's requested runtime times its GPUs."""
    return sum(job.requested_minutes * GPUS_PER_JOB for job in jobs) / 60


def remaining_paths(jobs: list[GpuJob]) -> dict[Key, float]:
    """Each job's longest path to the end of the DAG, itself included (seconds)."""
    waiting_on: dict[Key, list[Key]] = {job.key: [] for job in jobs}
    for job in jobs:
        for before in job.after:
            waiting_on[before].append(job.key)
    seconds = {job.key: job.seconds for job in jobs}

    @cache
    def longest(key: Key) -> float:
        return seconds[key] + max((longest(next_key) for next_key in waiting_on[key]), default=0.0)

    return {job.key: longest(job.key) for job in jobs}


def critical_path_hours(jobs: list[GpuJob]) -> float:
    """The DAG's longest chain of GPU work: the wall time on unlimited GPUs."""
    return max(remaining_paths(jobs).values(), default=0.0) / 3600


def list_schedule_seconds(jobs: list[GpuJob], gpus: int) -> float:
    """The makespan of a greedy list schedule on ``gpus`` GPUs: whenever a GPU is free, the ready job with the
    longest remaining path starts on it."""
    priority = remaining_paths(jobs)
    order = {job.key: index for index, job in enumerate(jobs)}
    by_key = {job.key: job for job in jobs}
    blocking = {job.key: len(job.after) for job in jobs}
    unblocks: dict[Key, list[Key]] = {job.key: [] for job in jobs}
    for job in jobs:
        for before in job.after:
            unblocks[before].append(job.key)
    ready = [(-priority[key], order[key], key) for key, count in blocking.items() if count == 0]
    heapq.heapify(ready)
    running: list[tuple[float, int, Key]] = []
    now, started = 0.0, 0
    while ready or running:
        while ready and len(running) < gpus:
            _, index, key = heapq.heappop(ready)
            heapq.heappush(running, (now + by_key[key].seconds, index, key))
            started += 1
        now, _, done = heapq.heappop(running)
        for key in unblocks[done]:
            blocking[key] -= 1
            if blocking[key] == 0:
                heapq.heappush(ready, (-priority[key], order[key], key))
    if started != len(jobs):
        raise ValueError(f"GPU jobs wait for each other in a cycle: {len(jobs) - started} never became ready")
    return now


def wall_hours(jobs: list[GpuJob], gpus: int) -> float:
    """Wall time on ``gpus`` GPUs: the best list schedule on at most that many (so more GPUs never take longer)."""
    if gpus < 1:
        raise ValueError(f"--gpus: expected at least 1 GPU, got {gpus}")
    return min(list_schedule_seconds(jobs, n) for n in range(1, min(gpus, max(len(jobs), 1)) + 1)) / 3600
