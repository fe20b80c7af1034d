"""Snakemake script: score one encoder's stored embeddings with one evaluator (STS, SentEval, STS-B dev, a plugin)."""

from defsent_plus.evaluation.embeddings import write_scores
from defsent_plus.pipeline.jobs import start_job, work_clock

start_job(snakemake)
with work_clock(snakemake.log.work):
    write_scores(
        evaluator=snakemake.params.evaluator,
        embeddings=snakemake.input.embeddings,
        record=snakemake.input.record,
        senteval_dir=snakemake.input.senteval,
        out_json=snakemake.output.json,
        out_pairs=snakemake.output.get("pairs"),
        options=snakemake.params.options,
        label=snakemake.wildcards.encoder,
        threads=snakemake.threads,
    )
