"""Snakemake script: a seeded sub-sample of a dataset's entries; with a held-out split, also its queries."""

from defsent_plus.dictionary.subsets import write_subset
from defsent_plus.pipeline.jobs import start_job

start_job(snakemake)
heldout = snakemake.params.get("heldout")
write_subset(
    dataset_path=snakemake.input.dataset,
    out_path=snakemake.output.subset,
    max_entries=snakemake.params.max_entries,
    seed=snakemake.params.seed,
    heldout=heldout,
    queries_path=snakemake.output.get("queries"),
    where=f"config: subsets.{snakemake.wildcards.dataset}.heldout",
)
