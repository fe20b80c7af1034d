"""The cost sheet's page: ``<workdir>/results/cost_sheet.{tsv,md}`` of a finished rehearsal."""

from __future__ import annotations

from pathlib import Path

from defsent_plus.rehearsal.costs import LARGER, cost_sheet
from defsent_plus.rehearsal.records import executed_jobs


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
