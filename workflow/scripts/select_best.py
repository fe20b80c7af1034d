"""Snakemake script: the step's best (space, seed) by STS-B dev score, copied to best/."""

from defsent_plus.logs import log_to
from defsent_plus.training import write_best

log_to(snakemake.log[0])
write_best(
    snakemake.input.dev, snakemake.input.models, snakemake.output.best, snakemake.output.model,
    labels=snakemake.params.candidates,
)
