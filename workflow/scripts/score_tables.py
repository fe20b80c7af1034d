"""Snakemake script: the run's STS or SentEval table (TSV + markdown in the paper's layout, STS: a plot per step)."""

from defsent_plus.logs import log_to
from defsent_plus.report import write_score_tables

log_to(snakemake.log[0])
write_score_tables(
    snakemake.input.scores, snakemake.input.best, snakemake.params.labels, snakemake.params.groups,
    snakemake.output.tsv, snakemake.output.md, title=snakemake.params.title,
    steps=snakemake.params.get("steps"), out_png=snakemake.output.get("png"),
)
