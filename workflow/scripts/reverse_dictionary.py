"""Snakemake script: reverse dictionary on a run's held-out entries (final dev-selected model, base reference)."""

from defsent_plus.evaluation.reverse_dictionary import write_run_reverse_dictionary
from defsent_plus.methods import method_of
from defsent_plus.pipeline.jobs import start_job, work_clock

start_job(snakemake, gpu=True)
with work_clock(snakemake.log.work):
    write_run_reverse_dictionary(
        method=method_of(snakemake.params.method, "rule reverse_dictionary: method"),
        pooling=snakemake.params.pooling,
        model_dir=snakemake.input.model,
        spaces=snakemake.input.spaces,
        dataset=snakemake.input.dataset,
        queries=snakemake.input.queries,
        base_model=snakemake.input.base,
        base_space=snakemake.input.base_space,
        out_json=snakemake.output.json,
        out_tsv=snakemake.output.tsv,
        out_md=snakemake.output.md,
        batch_size=snakemake.params.batch_size,
        max_length=snakemake.params.max_length,
        title=snakemake.params.title,
        bootstrap=snakemake.params.bootstrap,
    )
