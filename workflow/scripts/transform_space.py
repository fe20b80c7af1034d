"""Snakemake script: a candidate entry space (centered, PCA-whitened or ICA-transformed)."""

from defsent_plus.names import TORCH_TRANSFORMS
from defsent_plus.pipeline.jobs import start_job
from defsent_plus.spaces.transforms import write_transform

start_job(snakemake, gpu=snakemake.wildcards.transform in TORCH_TRANSFORMS)  # center, whiten: numpy, no torch
write_transform(
    space_path=snakemake.input.space,
    transform=snakemake.wildcards.transform,
    options=snakemake.params.options,
    threads=snakemake.threads,
    out_space=snakemake.output.space,
    out_info=snakemake.output.info,
)
