"""Snakemake script: per-step table (dev score per seed, chosen seed, loss, seconds), its plot, the training curves."""

from defsent_plus.evaluation.curves import plot_training_curves
from defsent_plus.evaluation.report import write_steps_report
from defsent_plus.pipeline.jobs import start_job

start_job(snakemake)
write_steps_report(
    steps=snakemake.params.steps,
    start_dev_json=snakemake.input.start_dev,
    out_tsv=snakemake.output.tsv,
    out_png=snakemake.output.png,
    title=snakemake.params.title,
)
plot_training_curves(
    steps=snakemake.params.steps,
    out_png=snakemake.output.curves,
    title=f"Training curves of run {snakemake.wildcards.run}",
)
