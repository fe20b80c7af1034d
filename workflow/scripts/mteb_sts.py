"""Snakemake script: MTEB's STS tasks (and any configured MTEB task) on one encoder's stored STS vectors."""

from defsent_plus.evaluation.mteb_eval import write_mteb
from defsent_plus.pipeline.jobs import start_job

start_job(snakemake)
write_mteb(
    embeddings=snakemake.input.embeddings,
    record=snakemake.input.record,
    pairs=snakemake.input.pairs,
    senteval_dir=snakemake.input.senteval,
    model_dir=snakemake.input.model,
    out_dir=snakemake.output.results,
    out_check=snakemake.output.check,
    name=f"defsent-plus/{snakemake.wildcards.encoder}.{snakemake.wildcards.pooling}",
    revision=snakemake.params.revision,
    pooling=snakemake.wildcards.pooling,
    extra_tasks=snakemake.params.tasks,
    batch_size=snakemake.params.batch_size,
    max_length=snakemake.params.max_length,
)
