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

import statistics
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import pandas as pd

from defsent_plus.pipeline import job_model
from defsent_plus.pipeline.requests import (
    TRAINING_FLOPS,
    Gpu,
    forward_flops,
    output_classes,
    output_layer_flops,
)
from defsent_plus.rehearsal.context import Context, build_context, rehearsal_config
from defsent_plus.rehearsal.fit import fixed_seconds, job_lines, measured_twice, start_seconds, with_larger_size
from defsent_plus.rehearsal.records import Job, benchmark_of, executed_jobs, work_seconds
from defsent_plus.rehearsal.units import (
    ICA,
    NO_FLOPS,
    TRAINING,
    unit_of,
)

LARGER = "larger"  # the second work size's working directory (runner.LARGER)


def rehearsal_units(workdir: Path, job: Job, context: Context) -> float:
    """The work of a rehearsal job in its rule's unit (0: a job of fixed cost)."""
    return unit_of(job.rule).rehearsed(workdir, job, context)


def flops_per_unit(rule: str, architecture, tokens: float, passes: int = 1) -> float:
    """FLOPs of one unit of a rule's work with a model of ``architecture`` (training: ``passes`` of the encoder a
    step, its method's ``encoder_passes``), without scoring an entry space (:func:`scoring_flops`)."""
    hidden, flops = architecture.config["hidden_size"], unit_of(rule).flops
    if flops == NO_FLOPS:
        return 0.0
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


def job_rows(workdir: Path, context: Context) -> list[dict]:
    """One row per rehearsal job: its measurement, its work and the real config's matching work."""
    rows = []
    for job in executed_jobs(workdir):
        done = rehearsal_units(workdir, job, context)
        unit = unit_of(job.rule)
        real_units, tokens = unit.real(job, done, context)
        model = context.model_of(job)
        rows.append({"rule": job.rule, **benchmark_of(workdir, job), "units": done, "real_units": real_units,
                     "real_scored": unit.scored(job, context),
                     "threads": job.threads, "work_seconds": work_seconds(workdir, job),
                     "tokens": tokens, "model": model, "real_jobs": context.seed_scale(job),
                     "requested_minutes": float(job.resources.get("runtime", "nan")),
                     "requested_mb": float(job.resources.get("mem_mb", "nan")),
                     "run": job.wildcards.get("run"), "step": job.wildcards.get("step"), "outputs": job.outputs,
                     "dataset": context.real_dataset(job) if "dataset" in job.wildcards else None,
                     "method": context.real["runs"][job.wildcards["run"]]["method"] if unit.flops == TRAINING else None,
                     "classes": unit.classes(workdir, job),
                     "benchmark": job.benchmark})
    return rows


def classes_of(context: Context, run: str | None) -> int:
    """Classes of a run's objective (0 for a job of no run)."""
    if run is None:
        return 0
    return output_classes(context.real, run, context.method_of_run(run),
                          context.architectures[context.model_of_run(run)], context.built)


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
    kept = {id(r): job_model.keeps_of(r["rule"]) for r in rows}
    measured = {r["run"]: directory_bytes(workdir / r["outputs"][0]) for r in rows
                if kept[id(r)] == job_model.SELECTED_COPY and full}
    trained = {r["run"] for r in rows if kept[id(r)] == job_model.CANDIDATE_WEIGHTS}
    checkpoint = {run: measured.get(run) or counted_checkpoint_bytes(context, run) for run in trained}
    candidates_by_step: dict[tuple, float] = defaultdict(float)
    selected = sum(len(context.real["runs"][run]["steps"]) * checkpoint[run] for run in trained)
    embeddings = spaces = 0.0
    for r in rows:
        architecture = context.architectures.get(r["model"])
        hidden = architecture.config["hidden_size"] if architecture else 0
        if kept[id(r)] == job_model.CANDIDATE_WEIGHTS:
            candidates_by_step[r["run"], r["step"]] += r["real_jobs"] * checkpoint[r["run"]]
        elif kept[id(r)] == job_model.EMBEDDINGS:
            embeddings += r["real_jobs"] * r["real_units"] * hidden * job_model.FLOAT32_BYTES
        elif kept[id(r)] in job_model.SPACES:
            copies = job_model.SPACE_COPIES[kept[id(r)]]
            spaces += copies * context.dataset_size(r["dataset"])[1] * hidden * job_model.FLOAT32_BYTES
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


def cost_sheet(workdir: Path, senteval: Path) -> tuple[pd.DataFrame, pd.DataFrame, dict, Gpu]:
    """(per-rule projection, per-run training memory, disk, the GPU assumed) of a finished rehearsal."""
    context = build_context(workdir, senteval)
    gpu = Gpu(**context.real["costs"]["gpu"])
    rows = job_rows(workdir, context)
    larger = workdir / LARGER
    if (larger / "benchmarks").is_dir():
        rows = with_larger_size(rows, job_rows(larger, replace(context, rehearsal=rehearsal_config(larger))))
    return projected(rows, context, gpu), training_memory(context, gpu), disk_gb(rows, context, workdir), gpu


