"""Snakemake script: score one encoder with one pooling on STS, SentEval transfer or STS-B dev."""

from defsent_plus.evaluation.scoring import write_benchmark_scores
from defsent_plus.pipeline.jobs import start_job

start_job(snakemake, gpu=True)
write_benchmark_scores(
    model_dir=snakemake.input.model,
    senteval_dir=snakemake.input.senteval,
    out_json=snakemake.output[0],
    benchmark=snakemake.params.benchmark,
    pooling=snakemake.params.pooling,
    batch_size=snakemake.params.batch_size,
    max_length=snakemake.params.max_length,
    label=snakemake.wildcards.encoder,
    n_jobs=snakemake.threads,
    sts_aggregation=snakemake.params.sts_aggregation,
)
