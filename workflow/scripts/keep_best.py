"""Snakemake script: the step's selected model, copied to best/."""

from defsent_plus.pipeline.jobs import start_job
from defsent_plus.training.selection import copy_model

start_job(snakemake)
copy_model(snakemake.input.model, snakemake.output.model)
