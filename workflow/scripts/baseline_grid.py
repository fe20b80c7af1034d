"""Snakemake script: every combination of an encoder's baseline grid scored from its cache."""

from defsent_plus.baselines.report import write_grid
from defsent_plus.pipeline.jobs import start_job

start_job(snakemake)
write_grid(
    caches=snakemake.params.caches,
    senteval_dir=snakemake.input.senteval,
    corpus_txt=snakemake.input.corpus,
    grid=snakemake.params.grid,
    custom_templates=snakemake.params.templates,
    options=snakemake.params.options,
    grid_key=snakemake.params.grid_key,
    outputs={"tsv": snakemake.output.tsv, "md": snakemake.output.md, "png": snakemake.output.png},
    title=snakemake.params.title,
    n_jobs=snakemake.threads,
)
