"""Snakemake script: one encoder's embeddings of one sentence set with one pooling (the evaluators read them), by a
forward pass or, where the plan found them there, from the encoder's baselines cache."""

from defsent_plus.baselines.reuse import write_cached_sentence_embeddings
from defsent_plus.evaluation.embeddings import write_sentence_embeddings
from defsent_plus.pipeline.jobs import start_job

start_job(snakemake, gpu=True)
options = snakemake.params.options
common = dict(model_dir=snakemake.input.model, senteval_dir=snakemake.input.senteval,
              sentence_set=snakemake.wildcards.sentences, pooling=snakemake.params.pooling,
              out_npy=snakemake.output.npy, out_json=snakemake.output.json, label=snakemake.wildcards.encoder)
if "cache" in options:
    write_cached_sentence_embeddings(cache_dir=snakemake.input.cache, source=options, **common)
else:
    write_sentence_embeddings(batch_size=options["batch_size"], max_length=options["max_length"], **common)
