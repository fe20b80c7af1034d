"""Snakemake script: the step's selected model, copied to best/."""

from defsent_plus.pipeline.process import collector_paused

with collector_paused():  # the job's libraries load without the garbage collector's walks (pipeline/process.py)
    from defsent_plus.pipeline.jobs import start_job
    from defsent_plus.training.selection import copy_model

start_job(snakemake)
copy_model(snakemake.input.model, snakemake.output.model)
