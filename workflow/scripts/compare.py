"""Snakemake script: a table of every run side by side (STS, or the reverse dictionary)."""

from defsent_plus.evaluation.comparison import write_reverse_dictionary_comparison, write_sts_comparison
from defsent_plus.pipeline.jobs import start_job

start_job(snakemake)
if snakemake.rule == "compare_sts":
    write_sts_comparison(runs=snakemake.params.runs, out_tsv=snakemake.output.tsv, out_md=snakemake.output.md,
                         bootstrap=snakemake.params.bootstrap)
else:
    write_reverse_dictionary_comparison(runs=snakemake.params.runs, out_tsv=snakemake.output.tsv,
                                        out_md=snakemake.output.md)
