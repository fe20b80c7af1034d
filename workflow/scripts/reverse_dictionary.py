"""Snakemake script: reverse dictionary on a run's held-out entries (final dev-selected model, base reference)."""

import torch

from defsent_plus.devices import hold_gpus
from defsent_plus.logs import log_to
from defsent_plus.reverse_dictionary import write_reverse_dictionary

log_to(snakemake.log[0])
hold_gpus(getattr(snakemake.resources, "gpu", 0))  # own GPU slot (none for CPU jobs) before CUDA starts
torch.set_num_threads(snakemake.threads)
write_reverse_dictionary(
    snakemake.input.model, snakemake.input.spaces, snakemake.input.dataset, snakemake.input.queries,
    snakemake.params.base, snakemake.input.base_space, snakemake.output.json, snakemake.output.tsv,
    snakemake.output.md, batch_size=snakemake.params.batch_size, max_length=snakemake.params.max_length,
    title=snakemake.params.title,
)
