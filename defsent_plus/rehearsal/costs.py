"""The cost sheet of a config, from its rehearsal (``<workdir>/results/cost_sheet.{tsv,md}``): per rule, the real
config's jobs and work, the rehearsal's seconds and peak memory per unit of work, FLOPs per unit, and the projection
for the real config: hours on this CPU, GPU-hours on ``costs.gpu``, peak GPU memory of training, and disk.

Per job, ``seconds = start + units × seconds_per_unit`` (units: :mod:`defsent_plus.rehearsal.units`). A full-size
rehearsal runs at two work sizes (``caps.LARGER``): each job gets its own ``start`` and each rule one
``seconds_per_unit`` per model, fitted by least squares over its jobs' two measurements (a job's work clock, where it
keeps one, in place of its wall time). With one size, ``start`` is the intercept of the embedding jobs and
``seconds_per_unit`` each rule's median. FLOPs per token: 2 × the encoder's non-embedding parameters (× 3 when
training), per FastICA iteration 4 × entries × hidden²; a GPU job costs ``start`` plus its FLOPs at ``costs.gpu``'s
rates, training at least its steps' latency floor.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import replace
from itertools import groupby
from operator import itemgetter
from pathlib import Path

import pandas as pd

from defsent_plus.io import write_page, write_tsv
from defsent_plus.pipeline import job_model
from defsent_plus.pipeline.requests import TRAINING_FLOPS, Gpu, forward_flops, output_classes, output_layer_flops
from defsent_plus.rehearsal import estimate
from defsent_plus.rehearsal.caps import LARGER
from defsent_plus.rehearsal.context import Context, build_context
from defsent_plus.rehearsal.records import executed_jobs, work_seconds
from defsent_plus.rehearsal.units import ICA, NO_FLOPS, TRAINING, unit_of

# ---------------------------------------------------------------------------------------- starts and rates


def start_seconds(rows: list[dict]) -> float:
    """The fixed part of a job (start, imports, loading): the intercept of seconds against sentences over the
    embedding jobs."""
    import numpy as np

    points = [(r["units"], r["seconds"]) for r in rows if unit_of(r["rule"]).fits_start and r["units"] > 0]
    if len({u for u, _ in points}) < 2:
        return min((s for r in rows for s in [r["seconds"]] if unit_of(r["rule"]).encodes), default=0.0)
    slope, intercept = np.polyfit([u for u, _ in points], [s for _, s in points], 1)
    return max(float(intercept), 0.0)


def with_larger_size(rows: list[dict], larger: list[dict]) -> list[dict]:
    """Each job's row with its measurement at the rehearsal's second work size (``larger_units``, ``larger_seconds``,
    ``larger_rss_mb``), matched by its benchmark file; a job the second run lacks keeps its row."""
    by_benchmark = {r["benchmark"]: r for r in larger}
    return [row if (other := by_benchmark.get(row.get("benchmark"))) is None else
            {**row, "larger_units": other["units"], "larger_seconds": other["seconds"],
             "larger_work_seconds": other.get("work_seconds"), "larger_rss_mb": other["max_rss_mb"]} for row in rows]


def measured_twice(row: dict) -> bool:
    """Whether a job was measured at two work sizes, its work grown between them."""
    return bool(row["units"]) and row.get("larger_units", 0.0) > row["units"]


def pooled_lines(jobs: list[dict]) -> list[tuple[float, float]]:
    """(start seconds, seconds per unit) of jobs measured at two work sizes: one rate fitted by least squares over
    all of them, each job with its own start (fixed effects), so that a job whose work hardly grew weighs little;
    rate and starts at least 0."""
    import numpy as np

    design, seconds = [], []
    for i, row in enumerate(jobs):
        for work, measured in ((row["units"], row["seconds"]), (row["larger_units"], row["larger_seconds"])):
            design.append([*(1.0 if j == i else 0.0 for j in range(len(jobs))), work])
            seconds.append(measured)
    solution, *_ = np.linalg.lstsq(np.array(design), np.array(seconds), rcond=None)
    rate = max(float(solution[-1]), 0.0)
    return [(max(start_at(row, rate), 0.0), rate) for row in jobs]


def start_at(row: dict, rate: float) -> float:
    """A job's start given its rule's rate: the mean of its two measurements less their work."""
    return (row["seconds"] + row["larger_seconds"] - rate * (row["units"] + row["larger_units"])) / 2


def fixed_seconds(row: dict) -> float:
    """Seconds of a job without a work unit: its measurement at the larger size where there is one."""
    return row.get("larger_seconds", row["seconds"])


def on_own_clock(row: dict) -> dict:
    """A job measured twice, its work's seconds in place of its wall seconds where its record times its work at both
    sizes: the rate then comes from the work alone, not from two wall times whose starts vary by as much as the work
    grew. The start stays the wall time's remainder."""
    if row.get("work_seconds") is None or row.get("larger_work_seconds") is None:
        return row
    rate = (row["larger_work_seconds"] - row["work_seconds"]) / (row["larger_units"] - row["units"])
    start = start_at(row, rate)
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


# ------------------------------------------------------------------------------------------- the projection


def flops_per_unit(rule: str, architecture, tokens: float, passes: int = 1) -> float:
    """FLOPs of one unit of a rule's work with a model of ``architecture`` (training: ``passes`` of the encoder a
    step, its method's ``encoder_passes``), without scoring an entry space (:func:`gpu_job`)."""
    hidden, flops = architecture.config["hidden_size"], unit_of(rule).flops
    if flops == NO_FLOPS:
        return 0.0
    if flops == ICA:
        return 4.0 * hidden * hidden  # FastICA: two (hidden x hidden) x (hidden x n) products per iteration
    forward = forward_flops(architecture, tokens)
    return TRAINING_FLOPS * passes * forward if flops == TRAINING else forward


def trains(row: dict) -> bool:
    """Whether a row's job trains (forward and backward passes, the steps' GPU floor)."""
    return unit_of(row["rule"]).flops == TRAINING


def job_rows(workdir: Path, context: Context) -> list[dict]:
    """One row per rehearsal job: its measurement, its work and the real config's matching work."""
    rows = []
    for job in executed_jobs(workdir):
        unit = unit_of(job.rule)
        done = unit.rehearsed(workdir, job, context)
        real_units, tokens = unit.real(job, done, context)
        model = context.model_of(job)
        rows.append({"rule": job.rule, **job.measured, "units": done, "real_units": real_units,
                     "real_scored": unit.scored(job, context) if unit.scored else 0.0,
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
    (scored against every candidate), a memory-bound product FLOPs undercount: the real run's entries against the
    capped subset's, measured on this machine at the job's threads. 0 for other rules and methods."""
    architecture = context.architectures.get(row["model"])
    rehearsed = row.get("classes")
    if (unit_of(row["rule"]).scored is None or architecture is None or not rehearsed
            or not context.method_of_run(row["run"]).uses_entry_space):
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
    passes = context.method_of_run(row["run"]).encoder_passes if trains(row) else 1
    flops = row["real_units"] * flops_per_unit(row["rule"], architecture, row["tokens"], passes)
    if row.get("real_scored"):  # its sentences scored against its run's classes (h · Eᵀ; training: and backward)
        product = output_layer_flops(architecture, classes_of(context, row["run"]))
        flops += row["real_scored"] * product * (TRAINING_FLOPS if trains(row) else 1.0)
    steps = 0.0
    if trains(row):
        steps = row["real_units"] / context.real["runs"][row["run"]]["batch_size"]
        every = context.method_of_run(row["run"]).dev_scorings_every(context.method_options(row["run"]))
        if every:  # scoring STS-B dev while training (SimCSE's and SLT-FAI's select_every steps)
            sentences, tokens = context.real_sets["stsb-dev"]
            flops += steps / every * sentences * forward_flops(architecture, tokens)
    if unit_of(row["rule"]).flops == ICA:
        return flops, gpu.ica_seconds(flops)
    return flops, gpu.seconds(flops, steps, architecture.config["num_hidden_layers"], passes)


def projected(rows: list[dict], context: Context, gpu: Gpu) -> pd.DataFrame:
    """Per rule: real jobs and work, measured seconds per unit, and the projections (CPU hours, GPU-hours)."""
    start, table = start_seconds(rows), []
    for rule, group in groupby(sorted(rows, key=itemgetter("rule")), key=itemgetter("rule")):
        jobs = list(group)
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


def disk_gb(rows: list[dict], context: Context, workdir: Path) -> dict:
    """The real config's checkpoints (:func:`defsent_plus.rehearsal.estimate.checkpoint_gb`; a full-size
    rehearsal's copy of a run's selected model measured, same architecture), the embeddings, the spaces."""
    full = context.rehearsal["rehearsal"]["size"] == "full"  # a tiny rehearsal's copies are tiny models
    kept = {id(r): job_model.kind_of(r["rule"]).keeps for r in rows}
    measured = {r["run"]: sum(p.stat().st_size for p in (workdir / r["outputs"][0]).rglob("*") if p.is_file())
                for r in rows if kept[id(r)] == job_model.SELECTED_COPY and full}
    embeddings = spaces = 0.0
    for r in rows:
        architecture = context.architectures.get(r["model"])
        hidden = architecture.config["hidden_size"] if architecture else 0
        if kept[id(r)] == job_model.EMBEDDINGS:
            embeddings += r["real_jobs"] * r["real_units"] * hidden * job_model.FLOAT32_BYTES
        elif kept[id(r)] in job_model.SPACES:
            copies = job_model.SPACE_COPIES[kept[id(r)]]
            spaces += copies * context.dataset_size(r["dataset"])[1] * hidden * job_model.FLOAT32_BYTES
    return {**estimate.checkpoint_gb(context.real, context.real_plan, measured),
            "keep_weights": context.real["selection"]["keep_weights"],
            "embeddings_gb": embeddings / 1e9, "spaces_gb": spaces / 1e9}


def training_memory(context: Context, gpu: Gpu) -> pd.DataFrame:
    """Per run: peak GPU memory of a training job at the run's batch size and its method's maximum length
    (:func:`~defsent_plus.rehearsal.estimate.training_memory`, with the datasets the rehearsal built)."""
    frame = pd.DataFrame(estimate.training_memory(context.real, context.real_plan, context.built))
    return frame.assign(fits=frame["peak_gpu_gb"] <= gpu.memory_gb)


def cost_sheet(workdir: Path, senteval: Path) -> tuple[pd.DataFrame, pd.DataFrame, dict, Gpu]:
    """(per-rule projection, per-run training memory, disk, the GPU assumed) of a finished rehearsal."""
    context = build_context(workdir, senteval)
    gpu = Gpu(**context.real["costs"]["gpu"])
    rows = job_rows(workdir, context)
    larger = workdir / LARGER
    if (larger / "benchmarks").is_dir():
        second = replace(context, rehearsal=estimate.read_config(larger / "config.yaml"))
        rows = with_larger_size(rows, job_rows(larger, second))
    return projected(rows, context, gpu), training_memory(context, gpu), disk_gb(rows, context, workdir), gpu


# ---------------------------------------------------------------------------------------------- its page


def thread_note(workdir: Path) -> str:
    """The threads the rehearsal's jobs ran with, which its CPU projection assumes (``--set-threads`` changes them)."""
    more = sorted({f"{job.rule} {job.threads}" for job in executed_jobs(workdir) if job.threads > 1})
    return "1 thread a job" + (f"; {', '.join(more)} threads" if more else "")


def write_cost_sheet(workdir: Path, senteval: Path) -> Path:
    """``<workdir>/results/cost_sheet.{tsv,md}``; returns the markdown's path."""
    rules, memory, disk, gpu = cost_sheet(workdir, senteval)
    out = workdir / "results" / "cost_sheet.md"
    write_tsv(out.with_suffix(".tsv"), rules, float_format="%.4g")
    totals = rules[["rehearsal_seconds", "real_cpu_hours", "real_gpu_hours"]].sum()
    context = estimate.read_config(workdir / "config.yaml")
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
    first = estimate.read_config(workdir / "config.yaml")["rehearsal"]["caps"]
    if not (workdir / LARGER / "config.yaml").is_file():
        return (f"one ({first['training_examples']} examples a candidate, {first['sts_pairs']} STS pairs a file): "
                "one start for every rule, each rule's median rate (not calibrated)")
    second = estimate.read_config(workdir / LARGER / "config.yaml")["rehearsal"]["caps"]
    return (f"two ({first['training_examples']} and {second['training_examples']} examples a candidate, "
            f"{first['sts_pairs']} and {second['sts_pairs']} STS pairs a file, {first['entries']} and "
            f"{second['entries']} entries): each job's own start and rate")
