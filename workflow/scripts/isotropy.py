"""Snakemake script: isotropy metrics and SVD/PCA plots of every analysed entry space."""

from defsent_plus.pipeline.jobs import start_job
from defsent_plus.spaces.isotropy import write_isotropy

start_job(snakemake)
write_isotropy(
    spaces=dict(zip(snakemake.params.names, snakemake.input.spaces, strict=True)),
    plots=snakemake.output.plots,
    transforms=dict(zip(snakemake.params.transformed, snakemake.input.transforms, strict=True)),
    out_json=snakemake.output.metrics,
    title=f"{{space}} space of {snakemake.wildcards.encoder} on {snakemake.wildcards.dataset}",
    **snakemake.params.options,
)
