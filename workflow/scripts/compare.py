"""Snakemake script: a table of every run side by side (STS, or the reverse dictionary)."""

from defsent_plus.evaluation.comparison import pairs_by_run, write_sts_comparison
from defsent_plus.evaluators.reverse_dictionary import write_comparison
from defsent_plus.pipeline.jobs import start_job

start_job(snakemake)
if "uncertainty" in snakemake.output.keys():  # compare_sts (its name differs in a module: rule names there are renamed)
    write_sts_comparison(runs=snakemake.params.runs, out_tsv=snakemake.output.tsv, out_md=snakemake.output.md,
                         pairs=pairs_by_run(snakemake.params.runs, snakemake.params.poolings, snakemake.input.pairs),
                         bootstrap=snakemake.params.bootstrap, published=snakemake.params.published,
                         out_uncertainty=snakemake.output.uncertainty)
else:
    write_comparison(runs=snakemake.params.runs, out_tsv=snakemake.output.tsv, out_md=snakemake.output.md,
                     out_paired=snakemake.output.paired)
