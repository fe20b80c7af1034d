"""Snakemake script: a seeded sub-sample of a dataset's entries; with a held-out split, also its queries."""

from defsent_plus.dictionary import write_subset
from defsent_plus.logs import log_to

log_to(snakemake.log[0])
heldout = getattr(snakemake.params, "heldout", None)
write_subset(
    snakemake.input[0], snakemake.output[0], snakemake.params.max_entries, snakemake.params.seed,
    heldout=heldout, queries_path=snakemake.output.queries if heldout is not None else None,
    where=f"config: subsets.{snakemake.wildcards.dataset}.heldout",
)
