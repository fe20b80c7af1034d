"""Snakemake script: a seeded sub-sample of a dataset's entries."""

from defsent_plus.dictionary import write_subset
from defsent_plus.logs import log_to

log_to(snakemake.log[0])
write_subset(snakemake.input[0], snakemake.output[0], snakemake.params.max_entries, snakemake.params.seed)
