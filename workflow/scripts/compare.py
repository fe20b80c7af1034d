"""Snakemake script: a table of every run side by side (STS, or the reverse dictionary)."""

from defsent_plus.evaluation.comparison import pairs_by_run, write_sts_comparison
from defsent_plus.evaluation.reverse_dictionary import write_comparison
from defsent_plus.methods import method_of
from defsent_plus.pipeline.jobs import start_job, work_clock

start_job(snakemake)
params, output = snakemake.params, snakemake.output
with work_clock(snakemake.log.work):
    if "uncertainty" in output.keys():  # compare_sts (its name differs in a module: rule names there are renamed)
        write_sts_comparison(runs=params.runs, out_tsv=output.tsv, out_md=output.md,
                             pairs=pairs_by_run(params.runs, params.poolings, snakemake.input.pairs),
                             bootstrap=params.bootstrap, published=params.published,
                             out_uncertainty=output.uncertainty)
    else:
        write_comparison(runs=params.runs, method_of=method_of, out_tsv=output.tsv, out_md=output.md,
                         out_paired=output.paired)
