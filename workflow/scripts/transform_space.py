"""Snakemake script: a candidate entry space (centered, PCA-whitened or ICA-transformed)."""

import threadpoolctl

from defsent_plus.devices import hold_gpus
from defsent_plus.io import read_npy, write_json, write_npy
from defsent_plus.logs import log_to
from defsent_plus.transforms import apply_transform

log_to(snakemake.log[0])
hold_gpus(getattr(snakemake.resources, "gpu", 0))  # own GPU slot (none for CPU jobs) before CUDA starts
options = dict(snakemake.params.options)
if snakemake.wildcards.transform == "ica":
    options["threads"] = snakemake.threads  # entry_space.ica.threads, through the rule's threads
with threadpoolctl.threadpool_limits(snakemake.threads):
    space, info = apply_transform(read_npy(snakemake.input.space), snakemake.wildcards.transform, **options)
write_npy(snakemake.output.space, space)
write_json(snakemake.output.info, {"input": snakemake.input.space, "transform": snakemake.wildcards.transform, **info})
