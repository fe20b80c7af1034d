"""Every rule's jobs, declared once per rule as a :class:`JobKind` (``JOB_KINDS``; wildcards read from the plan before
the DAG exists, named as the rules name them; requests projected by :mod:`defsent_plus.pipeline.requests`).
Snakemake's resources, ``estimate``, the cost sheet and the SLURM job groups read these; a new rule needs one
``JobKind`` here (tests check that every rule has one and that its jobs are exactly the jobs Snakemake runs from empty).

A selected encoder is named, not resolved: no checkpoint is asked. Light on purpose (no torch, no pandas).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from defsent_plus.errors import DefSentError
from defsent_plus.names import TORCH_TRANSFORMS, split_space
from defsent_plus.pipeline.dag import EncoderId, acquired_data, acquired_sources, data_dir
from defsent_plus.pipeline.model_architectures import model_architecture
from defsent_plus.pipeline.requests import (
    BASELINE_EVALUATION_SENTENCES,
    EVALUATION_SENTENCES,
    Request,
    dataset_size,
    encoding_request,
    model_of_encoder,
    model_of_run,
    projection,
    reverse_dictionary_sentences,
    training_request,
    transform_request,
)

if TYPE_CHECKING:
    from defsent_plus.pipeline.plan import Plan

Wildcards = dict[str, str]
JobsOfPlan = Callable[["Plan"], list[Wildcards]]  # a rule's jobs in a config
RequestOf = Callable[[dict, "Plan", Wildcards, bool], Request]  # (config, plan, job, on_gpu) -> its request

FLOAT32_BYTES = 4
# What a job's outputs leave on disk (estimate's and the cost sheet's disk figures)
CANDIDATE_WEIGHTS, SELECTED_COPY, EMBEDDINGS, SPACE_PAIR, SPACE = (
    "candidate weights", "selected copy", "embeddings", "space pair", "space")
SPACE_COPIES = {SPACE_PAIR: 2, SPACE: 1}  # AMP and AC; one transformed space
SPACES = tuple(SPACE_COPIES)
# What a rule's work is counted in (the cost sheet's units, defsent_plus/rehearsal/units.py)
EXAMPLES_TRAINED = "examples trained"
SET_SENTENCES = "sentences of a set"
DATASET_TEXTS = "definitions and entries"
PADDED_TOKENS = "padded tokens"
BASELINE_PASS = "sentences of a baselines' pass"
BASELINE_SCORES = "sentences scored per template"
ICA_ITERATIONS = "entries x FastICA iterations"
STS_PAIRS = "STS pairs"
STS_UNITS = (SET_SENTENCES, BASELINE_PASS, BASELINE_SCORES, STS_PAIRS)  # the work a rehearsal's STS pairs set


def always(job: Wildcards) -> bool:
    return True


def never(job: Wildcards) -> bool:
    return False


@dataclass(frozen=True)
class JobKind:
    """The jobs of one rule. ``jobs(plan)``: its jobs in a config (runs that share a starting model and dataset share
    an entry space and its vectors: :func:`distinct_jobs` keeps each once); ``unit``: what its work is counted in
    (the cost sheet's; "" a job of fixed cost); ``request(config, plan, job, on_gpu)``: what one asks for on a GPU
    node or on CPU threads (None: the rule's declared request); ``on_gpu(job)``: whether it runs on a GPU node when
    the config has one (the encoding rules and training; of the transforms ICA only: centring and whitening are
    numpy, on a CPU); ``keeps``: what its outputs leave on disk
    (``CANDIDATE_WEIGHTS``, ``SELECTED_COPY``, ``EMBEDDINGS``, one of ``SPACES``; "" nothing counted) and
    ``kept_bytes(config, job)`` their size where ``estimate`` counts it from the config alone (embeddings, spaces)."""

    rule: str
    jobs: JobsOfPlan
    unit: str = ""
    request: RequestOf | None = None
    on_gpu: Callable[[Wildcards], bool] = never
    keeps: str = ""
    kept_bytes: Callable[[dict, Wildcards], float] | None = None


def each(key: str, names: Callable[[Plan], Iterable]) -> JobsOfPlan:
    """One job per name (an encoder: its name) that ``names(plan)`` gives, as wildcard ``key``."""
    return lambda plan: [{key: str(name)} for name in names(plan)]


def one_job_if(condition: Callable[[Plan], Any]) -> JobsOfPlan:
    """A rule of one job, without wildcards, where ``condition(plan)`` holds."""
    return lambda plan: [{}] if condition(plan) else []


one_job = one_job_if(lambda plan: True)  # a rule of one job always (the dictionary, the comparison, the summary)


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
    return lambda plan: [{"dataset": name} for name in read_datasets(plan)
                         if name in plan.config.get("subsets", {}) and (plan.heldout(name) is not None) == heldout]


# ------------------------------------------------------------------------------------------------ entry spaces


def entry_space_jobs(plan: Plan) -> list[Wildcards]:
    """Each step's entry space (built by the step's builder) of a run that trains against one, and the starting
    model's of a held-out run (its reverse dictionary's reference)."""
    heldout = set(plan.heldout_runs())
    jobs = []
    for run, cfg in plan.config["runs"].items():
        builders = [encoder for encoder, _ in plan.analysed_spaces(run)]
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


# ---------------------------------------------------------------------------------------------------- the chain


def candidate_jobs(plan: Plan) -> list[Wildcards]:
    """Every candidate of every step of every run."""
    return [{"run": c.run, "step": str(c.step), "space": c.space, "seed": str(c.seed)} for run in plan.config["runs"]
            for step in plan.steps(run) for c in plan.candidates(run, step)]


def step_jobs(plan: Plan) -> list[Wildcards]:
    """Every step of every run (its selection, its selected copy)."""
    return [{"run": run, "step": str(step)} for run in plan.config["runs"] for step in plan.steps(run)]


# -------------------------------------------------------------------------------------------------- evaluation


def embed_jobs(plan: Plan) -> list[Wildcards]:
    """The STS-B dev vectors (the selection's pooling) of every encoder scored on it, and the sentence set of every
    table the DAG builds, for each model of the table and each evaluated pooling."""
    dev = [{"encoder": encoder.name, "sentences": "stsb-dev", "pooling": plan.config["selection"]["pooling"]}
           for encoder in plan.dev_scored()]
    return dev + [{"encoder": encoder, "sentences": evaluator.sentence_set, "pooling": pooling}
                  for evaluator, encoder, pooling in table_scores(plan)]


def table_scores(plan: Plan) -> list[tuple]:
    """(evaluator, encoder name, pooling) of every score of every table the DAG builds."""
    return [(evaluator, row.encoder.name, pooling) for evaluator in plan.built_tables() for run in plan.config["runs"]
            for row in plan.table_models(run, evaluator.name) for pooling in plan.config["evaluation"]["poolings"]]


def score_jobs(paired: bool) -> JobsOfPlan:
    """The scores of every table the DAG builds whose evaluator writes per-pair similarities (rule score) or not
    (rule score_unpaired): each model of the table, each evaluated pooling."""
    return lambda plan: [{"encoder": encoder, "evaluator": evaluator.name, "pooling": pooling}
                         for evaluator, encoder, pooling in table_scores(plan) if evaluator.paired == paired]


# ------------------------------------------------------------------------------------- what one job asks and keeps


def encoding(sentences: Callable[[dict, Wildcards], float]) -> RequestOf:
    """The request of a job encoding ``sentences(config, job)`` sentences through its ``{encoder}``'s model."""
    return lambda config, plan, job, on_gpu: encoding_request(config, model_of_encoder(config, job["encoder"]),
                                                              sentences(config, job), on_gpu)


def hidden_of(config: dict, encoder: str) -> int:
    """Hidden size of an ``{encoder}`` wildcard's model."""
    return model_architecture(config["models"][model_of_encoder(config, encoder)]).config["hidden_size"]


def vector_bytes(config: dict, job: Wildcards) -> float:
    """A sentence set's float32 vectors."""
    return EVALUATION_SENTENCES[job["sentences"]] * hidden_of(config, job["encoder"]) * FLOAT32_BYTES


def space_bytes(config: dict, job: Wildcards) -> float:
    """One space's float32 entry vectors."""
    return dataset_size(config, job["dataset"])[1] * hidden_of(config, job["encoder"]) * FLOAT32_BYTES


JOB_KINDS: dict[str, JobKind] = {kind.rule: kind for kind in (
    # data, models, the dictionary and its subsets
    JobKind("acquire_data", acquire_data_jobs),
    JobKind("pin_model", pin_model_jobs),
    JobKind("dictionary", one_job),
    JobKind("dictionary_subset", subset_jobs(heldout=False)),
    JobKind("heldout_subset", subset_jobs(heldout=True)),
    # entry spaces
    JobKind("entry_space", entry_space_jobs, DATASET_TEXTS,  # every definition and entry of the dataset
            encoding(lambda config, job: sum(dataset_size(config, job["dataset"]))), on_gpu=always,
            keeps=SPACE_PAIR, kept_bytes=lambda config, job: SPACE_COPIES[SPACE_PAIR] * space_bytes(config, job)),
    JobKind("transform_space", transform_space_jobs, ICA_ITERATIONS,
            lambda config, plan, job, on_gpu: transform_request(config, model_of_encoder(config, job["encoder"]),
                                                                dataset_size(config, job["dataset"])[1],
                                                                job["transform"], on_gpu),
            on_gpu=lambda job: job["transform"] in TORCH_TRANSFORMS, keeps=SPACE, kept_bytes=space_bytes),
    JobKind("isotropy", lambda plan: [{"encoder": encoder.name, "dataset": dataset} for run in plan.config["runs"]
                                      for encoder, dataset in plan.analysed_spaces(run)]),
    # the training chain
    JobKind("train", candidate_jobs, EXAMPLES_TRAINED,
            lambda config, plan, job, on_gpu: training_request(config, plan, job["run"], on_gpu), on_gpu=always,
            keeps=CANDIDATE_WEIGHTS),
    JobKind("select_best", step_jobs),
    JobKind("keep_best", step_jobs, keeps=SELECTED_COPY),
    JobKind("prune_candidates", lambda plan: step_jobs(plan) if plan.keeps_selected_weights_only else []),
    # evaluation
    JobKind("embed", embed_jobs, SET_SENTENCES,
            encoding(lambda config, job: EVALUATION_SENTENCES[job["sentences"]]), on_gpu=always, keeps=EMBEDDINGS,
            kept_bytes=vector_bytes),
    JobKind("dev_score", each("encoder", lambda plan: plan.dev_scored())),
    JobKind("score", score_jobs(paired=True), STS_PAIRS),  # an STS score's pairs (another evaluator's: fixed)
    JobKind("score_unpaired", score_jobs(paired=False)),
    JobKind("score_table", lambda plan: [{"run": run, "evaluator": evaluator.name} for run in plan.config["runs"]
                                         for evaluator in plan.built_tables()], STS_PAIRS),
    JobKind("steps_report", each("run", lambda plan: plan.config["runs"])),
    JobKind("mteb", lambda plan: [{"encoder": encoder.name, "pooling": pooling}
                                  for encoder, pooling in plan.mteb_models()]),
    JobKind("reverse_dictionary", each("run", lambda plan: plan.heldout_runs()), PADDED_TOKENS,
            lambda config, plan, job, on_gpu: encoding_request(
                config, model_of_run(config, job["run"]),
                reverse_dictionary_sentences(config, plan.method(job["run"]), job["run"]), on_gpu),
            on_gpu=always),
    # training-free baselines
    JobKind("baseline_fit_corpus", one_job_if(lambda plan: plan.baseline_encoders())),
    JobKind("baseline_embed", lambda plan: [{"encoder": encoder, "template": template}
                                            for encoder in plan.baseline_encoders()
                                            for template in plan.baseline_grid(encoder)["templates"]],
            BASELINE_PASS,  # the evaluation set and fit corpus
            encoding(lambda config, job: BASELINE_EVALUATION_SENTENCES
                     + config["baselines"]["fit_corpus"]["max_sentences"]), on_gpu=always),
    JobKind("baseline_grid", each("encoder", lambda plan: plan.baseline_encoders()), BASELINE_SCORES),
    # the comparison
    JobKind("compare_sts", one_job, STS_PAIRS),
    JobKind("compare_reverse_dictionary", one_job_if(lambda plan: plan.heldout_runs())),
    JobKind("summary", one_job),
)}


def kind_of(rule: str) -> JobKind:
    """A rule's declaration; a rule this workflow no longer has: a job of fixed cost that keeps nothing."""
    return JOB_KINDS.get(rule) or JobKind(rule, lambda plan: [])


def gpu_capable_rules() -> list[str]:
    """The rules whose jobs (all, or some: transform_space's FastICA) run on a GPU node when there is one."""
    return [rule for rule, kind in JOB_KINDS.items() if kind.on_gpu is not never]


def projected_kinds() -> dict[str, JobKind]:
    """The job kinds whose jobs ask for a projected request (their jobs enumerated from the plan)."""
    return {rule: kind for rule, kind in JOB_KINDS.items() if kind.request is not None}


def rule_request(config: dict, plan: Plan, rule: str, wildcards: Wildcards, on_gpu: bool) -> Request:
    """What a job of a rule whose request is projected asks for: its work in the config through the cost model, with
    ``costs.margin``."""
    if rule not in projected_kinds():
        raise DefSentError(rule, "no request model for this rule (defsent_plus/pipeline/job_model.py)")
    return JOB_KINDS[rule].request(config, plan, wildcards, on_gpu)


def kept_bytes(config: dict, plan: Plan, *keeps: str) -> float:
    """Bytes of every output a config's jobs leave on disk of the kinds ``keeps`` (``EMBEDDINGS``; ``*SPACES``), where
    ``estimate`` counts them from the config alone."""
    return sum(kind.kept_bytes(config, job) for kind in JOB_KINDS.values() if kind.keeps in keeps
               for job in distinct_jobs(kind.jobs(plan)))


# ------------------------------------------------------------------------------------------- requests set too small


def requests_below_projection(config: dict, plan: Plan, asked: dict[str, dict],
                              on_gpu: Callable[[str], bool]) -> list[str]:
    """Per rule whose request is projected and key, a ``runtime`` or ``mem_mb`` the user set (``asked``: rule -> its
    ``--set-resources`` values) below the projection of one of the rule's jobs in this config: the largest
    projection, the job that has it and how many jobs exceed the request."""
    problems = []
    for rule, kind in projected_kinds().items():
        keys = [key for key in ("runtime", "mem_mb") if isinstance(asked.get(rule, {}).get(key), int | float)]
        if not keys:
            continue
        jobs = distinct_jobs(kind.jobs(plan))
        projected = [(projection(config, kind.request(config, plan, job, on_gpu(rule))), job) for job in jobs]
        for key in keys:
            value = asked[rule][key]
            over = [(p[key], job) for p, job in projected if p.get(key, 0) > value]
            if over:
                top, job = max(over, key=lambda pair: pair[0])
                shown = f"{math.ceil(top * 10) / 10} min" if key == "runtime" else f"{math.ceil(top)} MB"  # up
                named = ", ".join(f"{name}={wildcard}" for name, wildcard in job.items())
                problems.append(f"rule {rule}: {key}={value} is below the projection {shown} of its job {named} "
                                f"({len(over)} of {len(projected)} jobs project more; "
                                "defsent_plus/pipeline/job_model.py)")
    return problems
