"""Snakemake script: STS-B dev score of one trained (space, seed) model."""

import torch

from defsent_plus.logs import log_to
from defsent_plus.selection import write_dev_score

log_to(snakemake.log[0])
torch.set_num_threads(snakemake.threads)
write_dev_score(
    snakemake.input.model, snakemake.params.senteval_dir, snakemake.output[0],
    pooling=snakemake.params.pooling, batch_size=snakemake.params.batch_size,
    max_length=snakemake.params.max_length,
    labels={"space": snakemake.wildcards.space, "seed": int(snakemake.wildcards.seed)},
)
