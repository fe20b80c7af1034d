"""Snakemake script: the baselines' fit corpus (sampled definitions or a text file)."""

from defsent_plus.baselines.sentences import write_fit_corpus
from defsent_plus.pipeline.jobs import start_job

start_job(snakemake)
write_fit_corpus(
    options=snakemake.params.options,
    dataset=snakemake.input.get("dataset"),
    queries=snakemake.input.get("queries", []),
    out_txt=snakemake.output[0],
)
