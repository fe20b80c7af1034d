"""The jobs whose work the cost model projects, declared once per rule (``JOB_KINDS``): each rule's jobs in a config
(their wildcards, from the plan, before the DAG exists), what one asks its scheduler for (the formulas of
:mod:`defsent_plus.pipeline.requests` applied to its work, with ``costs.margin``), whether it runs on a GPU node when
there is one, and what it writes that stays (vectors, entry spaces). Snakemake's resources (``projected_request`` in
rules/common.smk), the flags of requests set too small, ``estimate`` and the SLURM job groups' starts read these
declarations; a rule with a projected cost needs its rule, its script and one ``JobKind`` here.

A selected encoder is named, not resolved: its work is its run's model's, whichever candidate wins, so no
checkpoint is asked. Light on purpose (no torch, no pandas): the DAG evaluates it for every job of these rules.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from defsent_plus.errors import DefSentError
from defsent_plus.names import TORCH_TRANSFORMS, split_space
from defsent_plus.pipeline.model_architectures import model_architecture
from defsent_plus.pipeline.requests import (
    BASELINE_EVALUATION_SENTENCES,
    EVALUATION_SENTENCES,
    Request,
    TrainingRequest,
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
FLOAT32_BYTES = 4
EMBEDDINGS, SPACES = "embeddings", "spaces"  # what a job's kept outputs are (estimate's disk columns)
# What a rule's work is counted in (the cost sheet's units, defsent_plus/rehearsal/units.py)
EXAMPLES_TRAINED = "examples trained"
SET_SENTENCES = "sentences of a set"
DATASET_TEXTS = "definitions and entries"
PADDED_TOKENS = "padded tokens"
BASELINE_PASS = "sentences of a baselines' pass"
BASELINE_SCORES = "sentences scored per template"
ICA_ITERATIONS = "entries x FastICA iterations"
STS_PAIRS = "STS pairs"
CHECKPOINT_COPY = "a checkpoint's copy"
STS_UNITS = (SET_SENTENCES, BASELINE_PASS, BASELINE_SCORES, STS_PAIRS)  # the work a rehearsal's STS pairs set


def always(job: Wildcards) -> bool:
    return True


def nothing_kept(config: dict, job: Wildcards) -> float:
    return 0.0


@dataclass(frozen=True)
class JobKind:
    """The jobs of one rule. ``unit``: what its work is counted in (the cost sheet's; "" a job of fixed cost);
    ``jobs(plan)``: its jobs in a config (runs that share a starting model and dataset share an entry space and its
    vectors: :func:`distinct_jobs` keeps each once); ``request(config, plan, job, on_gpu)``: what one asks for on a
    GPU node or on CPU threads (None: the rule's declared request); ``on_gpu(job)``: whether it runs on a GPU node
    when the config has one (centring and whitening: numpy, on a CPU); ``keeps``: what its kept outputs are
    (``EMBEDDINGS``, ``SPACES``; "" none) and ``kept_bytes(config, job)`` their size."""

    rule: str
    unit: str = ""
    jobs: Callable[[Plan], list[Wildcards]] | None = None
    request: Callable[[dict, Plan, Wildcards, bool], Request | TrainingRequest] | None = None
    on_gpu: Callable[[Wildcards], bool] = always
    keeps: str = ""
    kept_bytes: Callable[[dict, Wildcards], float] = nothing_kept


# ----------------------------------------------------------------------------------------------- the jobs of a config


def candidate_jobs(plan: Plan) -> list[Wildcards]:
    """Every candidate of every step of every run."""
    return [{"run": c.run, "step": str(c.step), "space": c.space, "seed": str(c.seed)} for run in plan.config["runs"]
            for step in range(1, plan.final_step(run) + 1) for c in plan.candidates(run, step)]


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


def embed_jobs(plan: Plan) -> list[Wildcards]:
    """The STS-B dev vectors (the selection's pooling) of every candidate and of a base starting model (the steps
    report's reference; a run starting from another's selection reads its winning candidate's), and the sentence set
    of every table, for each model of the table and each evaluated pooling."""
    config = plan.config
    dev = [encoder for run in config["runs"] for encoder in (
        *([plan.start(run)] if plan.start(run).kind == "base" else []),
        *(candidate for step in range(1, plan.final_step(run) + 1) for candidate in plan.candidates(run, step)))]
    jobs = [{"encoder": encoder.name, "sentences": "stsb-dev", "pooling": config["selection"]["pooling"]}
            for encoder in dev]
    for evaluator in plan.tables():
        jobs += [{"encoder": row.encoder.name, "sentences": evaluator.sentence_set, "pooling": pooling}
                 for run in config["runs"] for row in plan.table_models(run, evaluator.name)
                 for pooling in config["evaluation"]["poolings"]]
    return jobs


def reverse_dictionary_jobs(plan: Plan) -> list[Wildcards]:
    return [{"run": run} for run in plan.heldout_runs()]


def baseline_embed_jobs(plan: Plan) -> list[Wildcards]:
    return [{"encoder": encoder, "template": template} for encoder in plan.baseline_encoders()
            for template in plan.baseline_grid(encoder)["templates"]]


def distinct_jobs(jobs: list[Wildcards]) -> list[Wildcards]:
    """Each job once."""
    return list({tuple(job.items()): job for job in jobs}.values())


# ------------------------------------------------------------------------------------- what one job asks and keeps


def train_request(config: dict, plan: Plan, job: Wildcards, on_gpu: bool) -> TrainingRequest:
    return training_request(config, plan, job["run"], on_gpu)


def entry_space_request(config: dict, plan: Plan, job: Wildcards, on_gpu: bool) -> Request:
    """Every definition and entry of the dataset through the encoder."""
    model = model_of_encoder(config, job["encoder"])
    return encoding_request(config, model, sum(dataset_size(config, job["dataset"])), on_gpu)


def transform_space_request(config: dict, plan: Plan, job: Wildcards, on_gpu: bool) -> Request:
    model = model_of_encoder(config, job["encoder"])
    return transform_request(config, model, dataset_size(config, job["dataset"])[1], job["transform"], on_gpu)


def embed_request(config: dict, plan: Plan, job: Wildcards, on_gpu: bool) -> Request:
    model = model_of_encoder(config, job["encoder"])
    return encoding_request(config, model, EVALUATION_SENTENCES[job["sentences"]], on_gpu)


def reverse_dictionary_request(config: dict, plan: Plan, job: Wildcards, on_gpu: bool) -> Request:
    run = job["run"]
    return encoding_request(config, model_of_run(config, run),
                            reverse_dictionary_sentences(config, plan.method(run), run), on_gpu)


def baseline_embed_request(config: dict, plan: Plan, job: Wildcards, on_gpu: bool) -> Request:
    """The baselines' evaluation set and fit corpus through the encoder, every layer kept."""
    sentences = BASELINE_EVALUATION_SENTENCES + config["baselines"]["fit_corpus"]["max_sentences"]
    return encoding_request(config, model_of_encoder(config, job["encoder"]), sentences, on_gpu)


def hidden_of(config: dict, encoder: str) -> int:
    """Hidden size of an ``{encoder}`` wildcard's model."""
    return model_architecture(config["models"][model_of_encoder(config, encoder)]).config["hidden_size"]


def vector_bytes(config: dict, job: Wildcards) -> float:
    """A sentence set's float32 vectors."""
    return EVALUATION_SENTENCES[job["sentences"]] * hidden_of(config, job["encoder"]) * FLOAT32_BYTES


def space_pair_bytes(config: dict, job: Wildcards) -> float:
    """AMP's and AC's float32 entry vectors."""
    return 2 * dataset_size(config, job["dataset"])[1] * hidden_of(config, job["encoder"]) * FLOAT32_BYTES


def space_bytes(config: dict, job: Wildcards) -> float:
    """One transformed space's float32 entry vectors."""
    return dataset_size(config, job["dataset"])[1] * hidden_of(config, job["encoder"]) * FLOAT32_BYTES


JOB_KINDS: dict[str, JobKind] = {kind.rule: kind for kind in (
    JobKind("train", EXAMPLES_TRAINED, candidate_jobs, train_request),
    JobKind("entry_space", DATASET_TEXTS, entry_space_jobs, entry_space_request, keeps=SPACES,
            kept_bytes=space_pair_bytes),
    JobKind("transform_space", ICA_ITERATIONS, transform_space_jobs, transform_space_request,
            on_gpu=lambda job: job["transform"] in TORCH_TRANSFORMS, keeps=SPACES, kept_bytes=space_bytes),
    JobKind("embed", SET_SENTENCES, embed_jobs, embed_request, keeps=EMBEDDINGS, kept_bytes=vector_bytes),
    JobKind("reverse_dictionary", PADDED_TOKENS, reverse_dictionary_jobs, reverse_dictionary_request),
    JobKind("baseline_embed", BASELINE_PASS, baseline_embed_jobs, baseline_embed_request),
    JobKind("baseline_grid", BASELINE_SCORES),
    JobKind("score", STS_PAIRS),  # an STS score's pairs (another evaluator's score: fixed)
    JobKind("score_table", STS_PAIRS),
    JobKind("compare_sts", STS_PAIRS),
    JobKind("keep_best", CHECKPOINT_COPY),
)}


def unit_name(rule: str) -> str:
    """What a rule's work is counted in ("" a rule without a job declaration: a job of fixed cost)."""
    kind = JOB_KINDS.get(rule)
    return kind.unit if kind is not None else ""


def projected_kinds() -> dict[str, JobKind]:
    """The job kinds whose jobs ask for a projected request (their jobs enumerated from the plan)."""
    return {rule: kind for rule, kind in JOB_KINDS.items() if kind.request is not None}


def job_kind(rule: str) -> JobKind:
    if rule not in projected_kinds():
        raise DefSentError(rule, "no request model for this rule (defsent_plus/pipeline/job_model.py)")
    return JOB_KINDS[rule]


def rule_request(config: dict, plan: Plan, rule: str, wildcards: Wildcards, on_gpu: bool) -> Request | TrainingRequest:
    """What a job of a rule of ``JOB_KINDS`` asks for: its work in the config through the cost model, with
    ``costs.margin``."""
    return job_kind(rule).request(config, plan, wildcards, on_gpu)


def kept_bytes(config: dict, plan: Plan, keeps: str) -> float:
    """Bytes of every kept output of kind ``keeps`` (``EMBEDDINGS``, ``SPACES``) of a config's jobs."""
    return sum(kind.kept_bytes(config, job) for kind in projected_kinds().values() if kind.keeps == keeps
               for job in distinct_jobs(kind.jobs(plan)))


# ---------------------------------------------------------------------------------------------------- SLURM groups

SLURM_PROFILE = Path(__file__).resolve().parents[2] / "profiles" / "slurm" / "config.yaml"


def slurm_groups(profile: Path = SLURM_PROFILE) -> dict[str, str]:
    """The SLURM profile's job groups, rule -> group name pattern (``embed=eval_{encoder}``); none without it."""
    if not profile.is_file():
        return {}
    entries = yaml.safe_load(profile.read_text(encoding="utf-8")).get("groups") or []
    return dict(entry.split("=", 1) for entry in entries)


def group_of(groups: dict[str, str], rule: str, job: Wildcards) -> str | None:
    """The job group a job of ``rule`` runs in on SLURM (one start for all its jobs), or None."""
    return groups[rule].format(**job) if rule in groups else None


# ------------------------------------------------------------------------------------------- requests set too small


def requests_below_projection(config: dict, plan: Plan, asked: dict[str, dict],
                              on_gpu: Callable[[str], bool]) -> list[str]:
    """Per rule of ``JOB_KINDS`` and key, a ``runtime`` or ``mem_mb`` the user set (``asked``: rule -> its
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
