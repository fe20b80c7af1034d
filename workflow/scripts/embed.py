"""Snakemake script: one encoder's embeddings of one sentence set with one pooling (the evaluators read them)."""

from defsent_plus.evaluation.embeddings import write_sentence_embeddings
from defsent_plus.pipeline.jobs import start_job

start_job(snakemake, gpu=True)
write_sentence_embeddings(
    model_dir=snakemake.input.model,
    senteval_dir=snakemake.input.senteval,
    sentence_set=snakemake.wildcards.sentences,
    pooling=snakemake.params.pooling,
    batch_size=snakemake.params.options["batch_size"],
    max_length=snakemake.params.options["max_length"],
    out_npy=snakemake.output.npy,
    out_json=snakemake.output.json,
    label=snakemake.wildcards.encoder,
)
