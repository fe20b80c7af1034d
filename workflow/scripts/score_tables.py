"""Snakemake script: the run's STS or SentEval table (TSV + markdown in the paper's layout, STS: a plot per step)."""

from defsent_plus.evaluation.report import write_score_tables
from defsent_plus.pipeline.jobs import start_job

start_job(snakemake)
write_score_tables(
    rows=snakemake.params.rows,
    best_json=snakemake.input.best,
    out_tsv=snakemake.output.tsv,
    out_md=snakemake.output.md,
    title=snakemake.params.title,
    out_png=snakemake.output.get("png"),
    bootstrap=snakemake.params.bootstrap,
)
