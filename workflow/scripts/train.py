"""Snakemake script: one epoch of a run's training method from its starting weights (against a frozen entry space)."""

from defsent_plus.methods import method_of
from defsent_plus.pipeline.jobs import start_job, work_clock
from defsent_plus.training.resume import ResumeSettings
from defsent_plus.training.trackers import job_tracking
from defsent_plus.training.trainer import train_candidate

start_job(snakemake, gpu=True)
with work_clock(snakemake.log.work) as timings:
    train_candidate(
        method=method_of(snakemake.params.method),  # the declaration (plugins registered by start_job)
        options=snakemake.params.options,
        lr=snakemake.params.lr,
        batch_size=snakemake.params.batch_size,
        pooling=snakemake.params.pooling,
        seed=int(snakemake.wildcards.seed),
        base_model=snakemake.input.base,
        dataset_path=snakemake.input.dataset,
        space_path=snakemake.input.get("space") or None,  # methods without an entry space have none
        senteval_dir=snakemake.input.get("senteval") or None,  # methods that select on STS-B dev while training
        model_out=snakemake.output.model,
        summary_out=snakemake.output.summary,
        metrics_out=snakemake.output.metrics,  # every step's metrics, appended while the job runs
        max_examples=snakemake.params.get("max_examples"),  # a rehearsal's cap (none: every example)
        resume=ResumeSettings(**snakemake.config["resume"]),  # how often to save; not a parameter
        compile=snakemake.config["training"]["compile"],  # torch.compile (GPU); like the device, not a parameter
        tracking=job_tracking(snakemake.config["logging"], **snakemake.wildcards, params=dict(snakemake.params)),
        timings=timings,  # the loop's seconds and pace, into the work clock (benchmarks/)
    )
