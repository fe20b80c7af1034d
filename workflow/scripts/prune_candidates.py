"""Snakemake script: a step's candidates' weights deleted once everything that reads them is done."""

from defsent_plus.pipeline.jobs import start_job
from defsent_plus.training.selection import prune_candidates

start_job(snakemake)
prune_candidates(model_dirs=snakemake.params.model_dirs, record=snakemake.output.record)
