"""Snakemake script: AC and AMP entry spaces of a dataset, built by one encoder."""

from defsent_plus.pipeline.jobs import start_job, work_clock
from defsent_plus.spaces.entry_space import write_entry_space

start_job(snakemake, gpu=True)
with work_clock(snakemake.log.work) as timings:
    write_entry_space(
        encoder_path=snakemake.input.model,
        dataset_path=snakemake.input.dataset,
        outputs={"ac": snakemake.output.ac, "amp": snakemake.output.amp},
        meta_path=snakemake.output.meta,
        batch_size=snakemake.params.batch_size,
        max_length=snakemake.params.max_length,
        encoder_name=snakemake.wildcards.encoder,
        timings=timings,  # the encoding's seconds and pace, into the work clock (benchmarks/)
    )
