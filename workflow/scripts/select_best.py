"""Snakemake script: the step's best (space, seed) by STS-B dev score, copied to best/."""

from defsent_plus.pipeline.jobs import start_job
from defsent_plus.training.selection import write_best

start_job(snakemake)
write_best(
    dev_jsons=snakemake.input.dev,
    model_dirs=snakemake.input.models,
    best_json=snakemake.output.best,
    best_dir=snakemake.output.model,
    labels=snakemake.params.candidates,
)
