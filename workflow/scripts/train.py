"""Snakemake script: one epoch of training of the base encoder on a frozen entry space."""

import torch

from defsent_plus.devices import hold_gpus
from defsent_plus.logs import log_to
from defsent_plus.training import TrainConfig, train_on_space

log_to(snakemake.log[0])
hold_gpus(getattr(snakemake.resources, "gpu", 0))  # own GPU slot (none for CPU jobs) before CUDA starts
torch.set_num_threads(snakemake.threads)
options = snakemake.params.options
cfg = TrainConfig(
    lr=snakemake.params.lr,
    batch_size=snakemake.params.batch_size,
    seed=int(snakemake.wildcards.seed),
    max_length=options["max_length"],
    pooling=snakemake.params.pooling,
    weight_decay=options["weight_decay"],
    adam_eps=options["adam_eps"],
    max_grad_norm=options["max_grad_norm"],
    bucket_by_length=options["bucket_by_length"],
)
train_on_space(
    snakemake.params.base, snakemake.input.dataset, snakemake.input.space,
    snakemake.output.model, snakemake.output.summary, cfg,
)
