"""Snakemake script: AC and AMP entry spaces of a dataset, built by one encoder."""

import torch

from defsent_plus.devices import hold_gpus
from defsent_plus.entry_space import write_entry_space
from defsent_plus.logs import log_to

log_to(snakemake.log[0])
hold_gpus(getattr(snakemake.resources, "gpu", 0))  # own GPU slot (none for CPU jobs) before CUDA starts
torch.set_num_threads(snakemake.threads)
write_entry_space(
    encoder_path=snakemake.params.encoder,
    dataset_path=snakemake.input.dataset,
    outputs={"ac": snakemake.output.ac, "amp": snakemake.output.amp},
    meta_path=snakemake.output.meta,
    batch_size=snakemake.params.batch_size,
    max_length=snakemake.params.max_length,
    encoder_name=snakemake.wildcards.encoder,
)
