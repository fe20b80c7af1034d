"""Snakemake script: the comparison's front page (results/compare/summary.md, and .rst for the HTML report)."""

from defsent_plus.evaluation.summary import write_summary
from defsent_plus.pipeline.jobs import start_job

start_job(snakemake)
write_summary(pages=snakemake.input.pages, runs=snakemake.params.runs,
              plots=list(zip(snakemake.params.plotted, snakemake.input.plots, strict=True)),
              out_md=snakemake.output.md, out_rst=snakemake.output.rst)
