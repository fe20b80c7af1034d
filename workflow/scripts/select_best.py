"""Snakemake script: the step's best (space, seed) by STS-B dev score."""

from defsent_plus.pipeline.jobs import start_job
from defsent_plus.training.selection import write_selection

start_job(snakemake)
write_selection(dev_jsons=snakemake.input.dev, candidates=snakemake.params.candidates,
                best_json=snakemake.output.best)
