"""Snakemake script: copy a configured model to its pinned path, with a card naming its spec and identity."""

from defsent_plus.pipeline.jobs import start_job
from defsent_plus.pipeline.model_store import pin_model

start_job(snakemake)
name = snakemake.wildcards.model
pin_model(spec=snakemake.config["models"][name], identity=snakemake.params.identity, out_dir=snakemake.output[0],
          where=f"config: models.{name}")
