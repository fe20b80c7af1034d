"""Snakemake script: score one encoder with one pooling on STS, SentEval transfer or STS-B dev."""

import torch

from defsent_plus.devices import hold_gpus
from defsent_plus.logs import log_to
from defsent_plus.report import write_benchmark_scores

log_to(snakemake.log[0])
hold_gpus(getattr(snakemake.resources, "gpu", 0))  # own GPU slot (none for CPU jobs) before CUDA starts
torch.set_num_threads(snakemake.threads)
write_benchmark_scores(
    snakemake.params.model, snakemake.params.senteval_dir, snakemake.output[0],
    benchmark=snakemake.params.benchmark, pooling=snakemake.params.pooling,
    batch_size=snakemake.params.batch_size, max_length=snakemake.params.max_length, label=snakemake.params.label,
    n_jobs=snakemake.threads,
)
