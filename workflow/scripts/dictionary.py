"""Snakemake script: merge the configured dictionaries into datasets a, b, c (+ stats.tsv)."""

import os

from defsent_plus.dictionary.datasets import write_dictionary_stage
from defsent_plus.pipeline.jobs import start_job

start_job(snakemake)
os.environ["RAYON_NUM_THREADS"] = str(snakemake.threads)  # the tokenizer's threads (Rust, read on first use): the job's
write_dictionary_stage(
    sources=snakemake.params.sources,
    tokenizer_path=snakemake.input.tokenizer,
    outputs={name: snakemake.output[name] for name in ("a", "b", "c")},
    stats_path=snakemake.output.stats,
    primary=snakemake.params.primary,
    lowercase=snakemake.params.lowercase,
    on_malformed=snakemake.params.on_malformed,
)
