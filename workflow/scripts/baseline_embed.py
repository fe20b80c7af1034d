"""Snakemake script: one (encoder, template) forward pass into the baselines' cache."""

from defsent_plus.baselines.extract import write_cache
from defsent_plus.pipeline.jobs import start_job

start_job(snakemake, gpu=True)
write_cache(
    model_dir=snakemake.input.model,
    senteval_dir=snakemake.input.senteval,
    corpus_txt=snakemake.input.corpus,
    out_dir=snakemake.output[0],
    request=snakemake.params.request,
    options=snakemake.params.options,
    grid_key=snakemake.params.grid_key,
)
