"""Snakemake script: per-step table (dev score per seed, chosen seed, loss, seconds) and its plot."""

from defsent_plus.logs import log_to
from defsent_plus.report import write_steps_report

log_to(snakemake.log[0])
steps = snakemake.params.steps
trains = [snakemake.input.train[sum(steps[:i]) : sum(steps[: i + 1])] for i in range(len(steps))]
write_steps_report(
    snakemake.input.best, trains, snakemake.input.base_dev, snakemake.output.tsv, snakemake.output.png,
    title=snakemake.params.title,
)
