"""Snakemake script: a run's table of one evaluator (TSV + markdown in the paper's layout, a plot per PST step)."""

from defsent_plus.evaluation.report import write_score_tables
from defsent_plus.pipeline.jobs import start_job, work_clock
from defsent_plus.pipeline.plan import unshown_steps

start_job(snakemake)
with work_clock(snakemake.log.work):
    write_score_tables(
        rows=snakemake.params.rows,
        best_json=snakemake.input.best,
        out_tsv=snakemake.output.tsv,
        out_md=snakemake.output.md,
        title=snakemake.params.title,
        out_png=snakemake.output.get("png"),
        bootstrap=snakemake.params.bootstrap,
        columns=snakemake.params.columns,
        axis=snakemake.params.axis,
        unshown=unshown_steps(snakemake.params.rows, snakemake.wildcards.evaluator),
    )
