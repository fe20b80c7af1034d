"""Snakemake script: score one encoder's stored embeddings on STS, SentEval transfer or STS-B dev."""

from defsent_plus.evaluation.scoring import write_benchmark_scores
from defsent_plus.pipeline.jobs import start_job

start_job(snakemake)
write_benchmark_scores(
    embeddings=snakemake.input.embeddings,
    record=snakemake.input.record,
    senteval_dir=snakemake.input.senteval,
    out_json=snakemake.output.json,
    out_pairs=snakemake.output.get("pairs"),
    benchmark=snakemake.params.benchmark,
    label=snakemake.wildcards.encoder,
    n_jobs=snakemake.threads,
    sts_aggregation=snakemake.params.sts_aggregation,
    bootstrap=snakemake.params.get("bootstrap"),
    protocol=snakemake.params.get("protocol", "sklearn"),
)
