"""Every rule's jobs in a config, read from its plan before the DAG exists: their wildcards, named as the rules name
them (``JobKind.jobs`` of :mod:`defsent_plus.pipeline.job_model`). A selected encoder is named, not resolved, so no
selection is asked. A test checks that these are the jobs Snakemake runs from empty, no more, no less.
Light on purpose (no torch, no pandas).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from defsent_plus.names import split_space
from defsent_plus.pipeline.dag import EncoderId, acquired_data, acquired_sources, data_dir

if TYPE_CHECKING:
    from defsent_plus.pipeline.plan import Plan

Wildcards = dict[str, str]
JobsOfPlan = Callable[["Plan"], list[Wildcards]]


def one_job(plan: Plan) -> list[Wildcards]:
    """A rule of one job, without wildcards (the dictionary, the comparison, the summary)."""
    return [{}]


def each(key: str, names: Callable[[Plan], Iterable]) -> JobsOfPlan:
    """One job per name (an encoder: its name) that ``names(plan)`` gives, as wildcard ``key``."""
    return lambda plan: [{key: str(name)} for name in names(plan)]


def one_job_if(condition: Callable[[Plan], Any]) -> JobsOfPlan:
    """A rule of one job, without wildcards, where ``condition(plan)`` holds."""
    return lambda plan: [{}] if condition(plan) else []


def distinct_jobs(jobs: list[Wildcards]) -> list[Wildcards]:
    """Each job once."""
    return list({tuple(job.items()): job for job in jobs}.values())


# ------------------------------------------------------------------------------------------- data, models, datasets


def acquire_data_jobs(plan: Plan) -> list[Wildcards]:
    """The acquired datasets read: SentEval's (every candidate's STS-B dev score), the dictionary's sources, the runs'
    corpora and the baselines' fit corpus file."""
    fit = plan.fit_corpus_inputs().get("corpus", []) if plan.baseline_encoders() else []
    read = {**acquired_data([data_dir("senteval"), *fit]), **acquired_sources(plan.config["dictionary"]["sources"])}
    for run in plan.config["runs"]:
        read.update(plan.run_corpora(run))
    return [{"data": name} for name in read]


def pin_model_jobs(plan: Plan) -> list[Wildcards]:
    """The models read: the dictionary's tokenizer, each run's starting model and each base baseline encoder's."""
    starts = [plan.start(run) for run in plan.config["runs"]]
    baselines = [EncoderId.parse(name) for name in plan.baseline_encoders()]
    models = [plan.config["dictionary"]["tokenizer"],
              *(encoder.model for encoder in [*starts, *baselines] if encoder.kind == "base")]
    return [{"model": model} for model in models]


def read_datasets(plan: Plan) -> list[str]:
    """Every dataset read: the runs', the fit corpus's and, for a subset, its own source."""
    subsets = plan.config.get("subsets", {})
    pending = [cfg["dataset"] for cfg in plan.config["runs"].values()]
    pending += plan.fit_corpus_datasets() if plan.baseline_encoders() else []
    read: list[str] = []
    while pending:
        name = pending.pop()
        if name not in read:
            read.append(name)
            pending += [subsets[name]["dataset"]] if name in subsets else []
    return read


def subset_jobs(heldout: bool) -> JobsOfPlan:
    """The subsets read, those with a held-out split (rule heldout_subset) or without (rule dictionary_subset)."""
    def jobs(plan: Plan) -> list[Wildcards]:
        return [{"dataset": name} for name in read_datasets(plan)
                if name in plan.config.get("subsets", {}) and (plan.heldout(name) is not None) == heldout]
    return jobs


# ------------------------------------------------------------------------------------------------ entry spaces


def entry_space_jobs(plan: Plan) -> list[Wildcards]:
    """Each step's entry space (built by the step's builder) of a run that trains against one, and the starting
    model's of a held-out run (its reverse dictionary's reference)."""
    heldout = set(plan.heldout_runs())
    jobs = []
    for run, cfg in plan.config["runs"].items():
        builders = plan.analysed_encoders(run) if plan.method(run).uses_entry_space else []
        builders += [plan.space_builder(run, 1)] if run in heldout else []
        jobs += [{"encoder": encoder.name, "dataset": cfg["dataset"]} for encoder in builders]
    return jobs


def transform_space_jobs(plan: Plan) -> list[Wildcards]:
    """The transformed spaces of each step's builder: those its step trains against and the analysed ones."""
    analysed = plan.config["entry_space"]["analyse"]
    jobs = []
    for run, cfg in plan.config["runs"].items():
        if not plan.method(run).uses_entry_space:
            continue
        for step, block in enumerate(cfg["steps"], start=1):
            encoder = plan.space_builder(run, step).name
            jobs += [{"encoder": encoder, "dataset": cfg["dataset"], "base": base, "transform": transform}
                     for base, transform in map(split_space, [*block["spaces"], *analysed]) if transform]
    return jobs


def isotropy_jobs(plan: Plan) -> list[Wildcards]:
    return [{"encoder": encoder.name, "dataset": dataset} for run in plan.config["runs"]
            for encoder, dataset in plan.analysed_spaces(run)]


# ---------------------------------------------------------------------------------------------------- the chain


def candidate_jobs(plan: Plan) -> list[Wildcards]:
    """Every candidate of every step of every run."""
    return [{"run": c.run, "step": str(c.step), "space": c.space, "seed": str(c.seed)} for run in plan.config["runs"]
            for step in range(1, plan.final_step(run) + 1) for c in plan.candidates(run, step)]


def step_jobs(plan: Plan) -> list[Wildcards]:
    """Every step of every run (its selection, its selected copy)."""
    return [{"run": run, "step": str(step)} for run in plan.config["runs"]
            for step in range(1, plan.final_step(run) + 1)]


def pruning_jobs(plan: Plan) -> list[Wildcards]:
    """Every step's pruning, with ``selection.keep_weights: selected``."""
    return step_jobs(plan) if plan.keeps_selected_weights_only else []


# -------------------------------------------------------------------------------------------------- evaluation


def embed_jobs(plan: Plan) -> list[Wildcards]:
    """The STS-B dev vectors (the selection's pooling) of every encoder scored on it, and the sentence set of every
    table the DAG builds, for each model of the table and each evaluated pooling."""
    dev = [{"encoder": encoder.name, "sentences": "stsb-dev", "pooling": plan.config["selection"]["pooling"]}
           for encoder in plan.dev_scored()]
    return dev + [{"encoder": encoder, "sentences": evaluator.sentence_set, "pooling": pooling}
                  for evaluator, encoder, pooling in table_scores(plan)]


def table_scores(plan: Plan) -> Iterator[tuple]:
    """(evaluator, encoder name, pooling) of every score of every table the DAG builds."""
    for evaluator in plan.built_tables():
        for run in plan.config["runs"]:
            for row in plan.table_models(run, evaluator.name):
                for pooling in plan.config["evaluation"]["poolings"]:
                    yield evaluator, row.encoder.name, pooling


dev_score_jobs = each("encoder", lambda plan: plan.dev_scored())


def score_jobs(paired: bool) -> JobsOfPlan:
    """The scores of every table the DAG builds whose evaluator writes per-pair similarities (rule score) or not
    (rule score_unpaired): each model of the table, each evaluated pooling."""
    def jobs(plan: Plan) -> list[Wildcards]:
        return [{"encoder": encoder, "evaluator": evaluator.name, "pooling": pooling}
                for evaluator, encoder, pooling in table_scores(plan) if evaluator.paired == paired]
    return jobs


def score_table_jobs(plan: Plan) -> list[Wildcards]:
    return [{"run": run, "evaluator": evaluator.name} for run in plan.config["runs"]
            for evaluator in plan.built_tables()]


run_jobs = each("run", lambda plan: plan.config["runs"])  # one job a run (its steps report)


def mteb_jobs(plan: Plan) -> list[Wildcards]:
    return [{"encoder": encoder.name, "pooling": pooling} for encoder, pooling in plan.mteb_models()]


reverse_dictionary_jobs = each("run", lambda plan: plan.heldout_runs())
reverse_dictionary_comparison_jobs = one_job_if(lambda plan: plan.heldout_runs())


# ---------------------------------------------------------------------------------------------------- baselines


fit_corpus_jobs = one_job_if(lambda plan: plan.baseline_encoders())
baseline_grid_jobs = each("encoder", lambda plan: plan.baseline_encoders())


def baseline_embed_jobs(plan: Plan) -> list[Wildcards]:
    return [{"encoder": encoder, "template": template} for encoder in plan.baseline_encoders()
            for template in plan.baseline_grid(encoder)["templates"]]
