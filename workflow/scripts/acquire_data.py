"""Snakemake script: put a dataset's verified layout into data/<name> (from a mirror or the official archives)."""

from pathlib import Path

from defsent_plus.acquisition.catalog import resolve
from defsent_plus.acquisition.layout import acquire
from defsent_plus.pipeline.jobs import start_job

start_job(snakemake)
settings = resolve(snakemake.wildcards.data, snakemake.config["data"], Path(snakemake.scriptdir).resolve().parents[1])
acquire(settings.spec, snakemake.output[0], mirror=settings.mirror, link=settings.link, manifest=settings.manifest,
        downloads=Path("data") / "downloads", retry=settings.retry, archives=settings.archives)
