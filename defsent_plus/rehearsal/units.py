"""How the cost sheet counts a job's work: one :class:`Unit` per kind of work the job model names
(``JobKind.unit``, :mod:`defsent_plus.pipeline.job_model`), never per rule. A unit says how many the rehearsal job did
(from its records), how many the real config's job will do and at how many tokens each, which of them are scored
against its run's classes and what a unit's FLOPs are (what its outputs leave on disk: ``JobKind.keeps``). A rule
of no unit costs its seconds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import reduce
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from defsent_plus.io import read_json
from defsent_plus.pipeline import dag
from defsent_plus.pipeline import job_model as model
from defsent_plus.pipeline.requests import MEDIAN_DEFINITION_TOKENS, reverse_dictionary_sentences
from defsent_plus.rehearsal.context import Context, HeldOutTexts, definition_texts, sts_pairs

if TYPE_CHECKING:
    from defsent_plus.rehearsal.records import Job

FORWARD, TRAINING, ICA, NO_FLOPS = "forward", "training", "ica", "none"  # what a unit's FLOPs are


@dataclass(frozen=True)
class Unit:
    """``rehearsed(workdir, job, context)``: units the rehearsal job did; ``real(job, units, context)``: (units,
    tokens a unit) of the real config's matching job (both 0: a job of fixed cost); ``scored(job, context)``:
    sentences the real job scores against its run's classes (an entry space, the vocabulary; None: none);
    ``flops``: a unit's FLOPs (``FORWARD``: its tokens through the encoder, ``TRAINING``: forward and backward × the
    method's encoder passes, at least the steps' GPU floor, ``ICA``: 4 × hidden², ``NO_FLOPS``); ``encodes``: an
    encoding job's (a one-size sheet fits every job's start on them, ``fits_start``: on the seconds of jobs of many
    sizes against their units); ``classes(workdir, job)``: what the rehearsal job scored against (None: nothing)."""

    rehearsed: Callable[[Path, Job, Context], float] = lambda workdir, job, context: 0.0
    real: Callable[[Job, float, Context], tuple[float, float]] = lambda job, units, context: (0.0, 0)
    scored: Callable[[Job, Context], float] | None = None
    flops: str = NO_FLOPS
    encodes: bool = False
    fits_start: bool = False
    classes: Callable[[Path, Job], int | None] = lambda workdir, job: None


def unit_of(rule: str) -> Unit:
    """The unit of a rule's work, as its job declaration names it (none: a job of fixed cost)."""
    return UNITS.get(model.kind_of(rule).unit, FIXED)


def examples_trained(workdir: Path, job: Job, context: Context) -> float:
    summary = read_json(workdir / job.output("train.json"))
    return summary["examples"] * summary["config"].get("epochs", 1)


def recorded(suffix: str, *keys: str) -> Callable[[Path, Job], int | None]:
    """What a rehearsal job's JSON output ending with ``suffix`` records under ``keys``, nested (None: nothing)."""
    def read(workdir: Path, job: Job) -> int | None:
        return reduce(lambda record, key: (record or {}).get(key), keys, read_json(workdir / job.output(suffix)))

    return read


def real_examples(job: Job, context: Context) -> float:
    examples, epochs = context.training_examples(job.wildcards["run"])
    return examples * epochs


def set_sentences(workdir: Path, job: Job, context: Context) -> float:
    record = read_json(workdir / job.output(".json"))
    return 0.0 if "source" in record else record["sentences"]  # served from the baselines' cache: no encoding


def real_set_sentences(job: Job, units: float, context: Context) -> tuple[float, float]:
    if not units:  # read from a cache in the rehearsal, so in the real run too
        return 0.0, 0
    return context.real_sets.get(job.wildcards["sentences"], (units, MEDIAN_DEFINITION_TOKENS))


def dataset_texts(workdir: Path, job: Job, context: Context) -> float:
    record = read_json(workdir / job.output("entry_space.json"))
    return record["definitions"] + record["entries"]


def real_dataset_texts(job: Job, units: float, context: Context) -> tuple[float, float]:
    definitions, entries = context.dataset_size(context.real_dataset(job))
    return definitions + entries, MEDIAN_DEFINITION_TOKENS


def padded_tokens_encoded(workdir: Path, job: Job, context: Context) -> float:
    """A reverse-dictionary job's padded tokens, its queries and the definitions left in its subset as the rehearsal
    split them."""
    run = job.wildcards["run"]
    subset = context.rehearsal["runs"][run]["dataset"]
    texts = HeldOutTexts(list(pd.read_parquet(workdir / dag.subset_file(subset, "queries.parquet"))["definition"]),
                         definition_texts(pd.read_parquet(workdir / dag.subset_file(subset))))
    return context.reverse_dictionary_tokens(run, texts, context.rehearsal)


def real_padded_tokens(job: Job, units: float, context: Context) -> tuple[float, float]:
    """In padded tokens: a few queries pad much more than thousands; without a built dataset (Oxford stand-ins) the
    median definition's tokens, no padding."""
    run = job.wildcards["run"]
    texts = (context.heldout or {}).get(context.real["runs"][run]["dataset"])
    if texts is None:
        return queries_encoded(job, context) * MEDIAN_DEFINITION_TOKENS, 1.0
    return context.reverse_dictionary_tokens(run, texts, context.real), 1.0


def queries_encoded(job: Job, context: Context) -> float:
    """Sentences a real reverse-dictionary job encodes and scores, its method's protocol's (DefSent+'s queries
    against every entry, DefSent's definitions and queries against the vocabulary)."""
    run = job.wildcards["run"]
    texts = (context.heldout or {}).get(context.real["runs"][run]["dataset"])
    return reverse_dictionary_sentences(context.real, context.method_of_run(run), run, context.built,
                                        None if texts is None else len(texts.queries))


def baseline_sentences(index: Path) -> float:
    """Sentences of a baselines' forward pass (its cache's index): the evaluation set's and the fit corpus's."""
    record = read_json(index)
    return float(record["eval_sentences"] + record["corpus_sentences"])


def baseline_pass(workdir: Path, job: Job, context: Context) -> float:
    return baseline_sentences(workdir / job.output(job.wildcards["template"]) / "index.json")


def baseline_scores(workdir: Path, job: Job, context: Context) -> float:
    folder = (workdir / job.output("scores.tsv")).parent
    return sum(baseline_sentences(index) for index in folder.glob("cache/*/index.json"))


def real_baseline_scores(job: Job, units: float, context: Context) -> tuple[float, float]:
    """Each template's sentences, scored: no forward pass."""
    baselines = context.real["baselines"]
    templates = len(baselines["grids"][baselines["encoders"][job.wildcards["encoder"]]]["templates"])
    return context.real_sets["baselines"][0] * templates, 0


def ica_iterations(workdir: Path, job: Job, context: Context) -> float:
    """Entries × FastICA's iterations (centring and whitening: none)."""
    if job.wildcards.get("transform") != "ica":
        return 0.0
    name, record = job.wildcards["dataset"], read_json(workdir / job.output(".json"))
    dataset = dag.subset_file(name) if name in context.rehearsal["subsets"] else dag.dictionary_file(f"{name}.parquet")
    return record["n_iter"] * float(pd.read_parquet(workdir / dataset).shape[0])


def real_ica_iterations(job: Job, units: float, context: Context) -> tuple[float, float]:
    if not units:
        return 0.0, 0
    _, entries = context.dataset_size(context.real_dataset(job))
    return entries * context.real["entry_space"]["ica"]["max_iter"], 0


def sts_pairs_scored(workdir: Path, job: Job, context: Context) -> float:
    """The stand-in's STS pairs, for a job that scores STS (its evaluator's; the comparison's has none)."""
    scores_sts = job.wildcards.get("evaluator", "sts") == "sts"
    return float(sts_pairs(workdir / dag.data_dir("senteval"))) if scores_sts else 0.0


def real_sts_pairs(job: Job, units: float, context: Context) -> tuple[float, float]:
    """Every STS pair of the real data where the rehearsal job scored STS, scored and resampled: no forward
    pass."""
    return (context.real_sets["sts-pairs"][0], 0) if units else (0.0, 0)


FIXED = Unit()
UNITS = {
    model.EXAMPLES_TRAINED: Unit(examples_trained, lambda job, units, context: (real_examples(job, context),
                                                                               MEDIAN_DEFINITION_TOKENS),
                                 scored=real_examples, flops=TRAINING, classes=recorded("train.json", "classes")),
    model.SET_SENTENCES: Unit(set_sentences, real_set_sentences, flops=FORWARD, encodes=True, fits_start=True),
    model.DATASET_TEXTS: Unit(dataset_texts, real_dataset_texts, flops=FORWARD, encodes=True),
    model.PADDED_TOKENS: Unit(padded_tokens_encoded, real_padded_tokens, scored=queries_encoded, flops=FORWARD,
                              classes=recorded("reverse_dictionary.json", "trained", "candidates")),
    model.BASELINE_PASS: Unit(baseline_pass, lambda job, units, context: context.real_sets["baselines"],
                              flops=FORWARD),
    model.BASELINE_SCORES: Unit(baseline_scores, real_baseline_scores),
    model.ICA_ITERATIONS: Unit(ica_iterations, real_ica_iterations, flops=ICA),
    model.STS_PAIRS: Unit(sts_pairs_scored, real_sts_pairs),
}
