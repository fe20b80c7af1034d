"""The evaluation of a plan: the models of each run's tables, how a sentence set is encoded (or read from the
baselines' cache), the score files of a table, the steps report, the held-out split and its reverse dictionary, and
MTEB's cross-checks. Part of :class:`defsent_plus.pipeline.plan.Plan`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from defsent_plus.baselines.spec import (
    NO_TEMPLATE,
    SHARED_POOLINGS,
    SHARED_SENTENCE_SETS,
    caches_last_layer,
)
from defsent_plus.errors import DefSentError
from defsent_plus.evaluation.evaluators import Evaluator, evaluator_of
from defsent_plus.names import alternatives
from defsent_plus.pipeline.dag import (
    EncoderId,
    baseline_cache,
    best_json,
    isotropy_file,
    mteb_check,
    run_file,
    score_file,
    subset_file,
    train_metrics,
    train_summary,
)

UNSHOWN_STEPS = {  # why a table's models leave out earlier PST steps, per Table.models (with evaluation.steps: all
    # an evaluated table shows every step, so a step it leaves out means evaluation.steps: final)
    "evaluated": "evaluation.steps is final (evaluation.steps: all adds each step's best)",
    "endpoints": "this table scores the starting and the final dev-selected model only",
}


def unshown_steps(rows: Sequence[dict], evaluator: str) -> str:
    """The by-step plot's line naming the PST steps a table's ``rows`` (:meth:`EvaluationPlan.score_rows`, each
    with its ``step``) leave out before the final one, and why (empty if none). Read from the rows the job already
    has, so that the line is no parameter of its own: a finished run's tables stay up to date."""
    shown = {int(row["step"]) for row in rows}
    missing = [k for k in range(1, max(shown, default=0)) if k not in shown]
    if not missing:
        return ""
    reason = UNSHOWN_STEPS[evaluator_of(evaluator, "rule score_table: evaluator").table.models]
    return f"step{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing))} not evaluated: {reason}"


@dataclass(frozen=True)
class Evaluated:
    """One model of a run's evaluation tables."""

    encoder: EncoderId
    label: str
    group: str  # final-step candidates of one space share a group (mean ± std over seeds); "" otherwise
    step: int  # PST step, 0 for the run's starting model


class EvaluationPlan:
    """What a config evaluates: the tables' models, their embeddings and scores, the held-out split, MTEB."""

    config: dict  # the validated config (set by Plan)

    def evaluated(self, run: str) -> list[Evaluated]:
        """The models of a run's STS table: its starting model; each earlier step's best with
        ``evaluation.steps: all``; the final step's best (``evaluation.final: best``) or every candidate."""
        options, last = self.config["evaluation"], self.final_step(run)
        rows = [self._start_row(run)]
        earlier = range(1, last) if options["steps"] == "all" else []
        rows += [Evaluated(EncoderId.selected(run, k), f"step {k} best", "", k) for k in earlier]
        if options["final"] == "best":
            return rows + [Evaluated(EncoderId.selected(run, last), f"step {last} best", "", last)]
        return rows + [Evaluated(c, f"step {last} {c.space} seed {c.seed}", f"step {last} {c.space}", last)
                       for c in self.candidates(run, last)]

    def endpoints(self, run: str) -> list[Evaluated]:
        """The starting model and the final dev-selected model (a slower evaluator's table: SentEval's)."""
        last = self.final_step(run)
        return [self._start_row(run), Evaluated(EncoderId.selected(run, last), "final best", "", last)]

    def table_models(self, run: str, evaluator: str) -> list[Evaluated]:
        """The models of a run's table of ``evaluator``: the set its declaration names."""
        models = evaluator_of(evaluator, "rule score_table: evaluator").table.models
        return {"evaluated": self.evaluated, "endpoints": self.endpoints}[models](run)

    def tables(self) -> list[Evaluator]:
        """The evaluators whose tables ``rule all`` builds for every run (``evaluation.tables``)."""
        return [evaluator_of(name) for name in self.config["evaluation"]["tables"]]

    def built_tables(self) -> list[Evaluator]:
        """The evaluators whose tables the DAG builds for every run: ``evaluation.tables`` and STS's, which the
        comparison and the summary read."""
        return [evaluator_of(name) for name in dict.fromkeys(["sts", *self.config["evaluation"]["tables"]])]

    def dev_scored(self) -> list[EncoderId]:
        """The encoders scored on STS-B dev: every candidate (its selection) and a base starting model (the steps
        report's reference; a run starting from another's selection reads its winning candidate's)."""
        runs = self.config["runs"]
        return [encoder for run in runs for encoder in (
            *([self.start(run)] if self.start(run).kind == "base" else []),
            *(candidate for step in range(1, self.final_step(run) + 1) for candidate in self.candidates(run, step)))]

    def _start_row(self, run: str) -> Evaluated:
        start = self.start(run)
        label = f"base ({start.name})" if start.kind == "base" else f"start ({start.name}, dev-selected)"
        return Evaluated(start, label, "", 0)

    def embedding_options(self, sentences: str) -> dict:
        """How a sentence set is encoded: STS-B dev with the selection's options (so evaluation options never re-run
        a selection), every other set with the evaluation's."""
        block = self.config["selection" if sentences == "stsb-dev" else "evaluation"]
        return {"batch_size": block["batch_size"], "max_length": block["max_length"]}

    def embedding_job(self, encoder: str, sentences: str, pooling: str) -> dict:
        """An ``embed`` job's params: its forward pass's options and, where the encoder's baselines pass computes the
        same vectors bit for bit (its last layer over the STS sentences, same batches), the ``cache`` to read them
        from instead (:mod:`defsent_plus.baselines.reuse`), so they are not encoded twice."""
        options = self.embedding_options(sentences)
        if not self._cached_by_baselines(encoder, sentences, pooling, options["max_length"]):
            return options
        return {**options, "cache": baseline_cache(encoder, NO_TEMPLATE), "aggregation": pooling,
                "alignment": self.config["baselines"]["alignment"]}

    def _cached_by_baselines(self, encoder: str, sentences: str, pooling: str, max_length: int) -> bool:
        if encoder not in self.baseline_encoders() or sentences not in SHARED_SENTENCE_SETS:
            return False
        grid = self.baseline_grid(encoder)
        return (pooling in SHARED_POOLINGS and NO_TEMPLATE in grid["templates"]
                and self.config["baselines"]["max_length"] == max_length
                and caches_last_layer(self.baseline_request(encoder, NO_TEMPLATE), pooling))

    def score_rows(self, models: list[Evaluated], benchmark: str) -> list[dict]:
        """One record per (model, pooling) of a table: its score file, label, seed group and step; a paired
        evaluator's (STS) also its per-pair similarities (``pairs``)."""
        paired = evaluator_of(benchmark, "rule score_table: evaluator").paired
        return [{"scores": score_file(row.encoder, benchmark, pooling),
                 **({"pairs": score_file(row.encoder, benchmark, pooling, "pairs.parquet")} if paired else {}),
                 "label": row.label, "group": row.group, "step": row.step, "pooling": pooling}
                for row in models for pooling in self.config["evaluation"]["poolings"]]

    def step_records(self, run: str) -> list[dict]:
        """Per PST step: its selection file, every candidate's training summary and metrics table (the steps
        report and the training curves)."""
        return [{"step": k, "best": best_json(run, k), "train": [train_summary(c) for c in self.candidates(run, k)],
                 "metrics": [train_metrics(c) for c in self.candidates(run, k)]}
                for k in range(1, self.final_step(run) + 1)]

    def analysed_encoders(self, run: str) -> list[EncoderId]:
        """Encoders whose entry spaces a run builds (one per step): their isotropy is measured."""
        return [self.space_builder(run, k) for k in range(1, self.final_step(run) + 1)]

    def analysed_spaces(self, run: str) -> list[tuple[EncoderId, str]]:
        """(encoder, dataset) of every step's entry space whose isotropy is measured (methods that train against
        one)."""
        if not self.method(run).uses_entry_space:
            return []
        return [(encoder, self.run(run)["dataset"]) for encoder in self.analysed_encoders(run)]

    def heldout(self, dataset: str) -> dict | None:
        """A subset's held-out split (subsets.<name>.heldout), or None (also for datasets a, b, c)."""
        return self.config.get("subsets", {}).get(dataset, {}).get("heldout")

    def queries_file(self, dataset: str) -> str:
        if self.heldout(dataset) is None:
            raise DefSentError(f"config: subsets.{dataset}.heldout", "dataset has no held-out split")
        return subset_file(dataset, "queries.parquet")

    def subset_pattern(self, heldout: bool) -> str:
        """Regex of the configured subsets with (or without) a held-out split; it matches nothing if none."""
        names = tuple(name for name in self.config.get("subsets", {}) if (self.heldout(name) is not None) == heldout)
        return alternatives(names) or "(?!)"

    def heldout_runs(self) -> list[str]:
        """Runs evaluated as a reverse dictionary: those trained on a subset with a held-out split by a method that
        declares a reverse-dictionary protocol."""
        return [run for run, cfg in self.config["runs"].items()
                if self.heldout(cfg["dataset"]) is not None and self.method(run).reverse_dictionary is not None]

    def revision_source(self, encoder: EncoderId) -> dict:
        """What identifies a model for MTEB's ``revision``: its root model's name (the rule adds that model's pinned
        identity) and, for a trained model, its name and the config of every run of its chain and of the stages
        they read."""
        if encoder.kind == "base":
            return {"model": encoder.model}
        chain = self.chain(encoder.run)
        return {"model": chain[0], "encoder": encoder.name,
                "runs": {run: [self.run(run), self.method_options(run)] for run in chain[1:]},
                **{block: self.config.get(block) for block in ("dictionary", "subsets", "entry_space", "selection")}}

    def mteb_models(self) -> list[tuple[EncoderId, str]]:
        """With ``evaluation.mteb.enabled``: every (model, pooling) of the STS tables, which MTEB cross-checks."""
        options = self.config["evaluation"].get("mteb", {})
        if not options.get("enabled"):
            return []
        encoders = dict.fromkeys(row.encoder for run in self.config["runs"] for row in self.evaluated(run))
        return [(encoder, pooling) for encoder in encoders for pooling in self.config["evaluation"]["poolings"]]

    def mteb_checks(self) -> list[str]:
        """MTEB's cross-check of every (model, pooling) of :meth:`mteb_models`."""
        return [mteb_check(encoder, pooling) for encoder, pooling in self.mteb_models()]

    def table_files(self) -> list[str]:
        """A run's files of the tables ``rule all`` builds, as the summary links them."""
        return [name for e in self.tables() for name in (f"{e.name}.md", f"{e.name}_by_step.png")]

    def reverse_dictionary_targets(self) -> list[str]:
        """Every held-out run's reverse dictionary."""
        return [run_file(run, "reverse_dictionary.json") for run in self.heldout_runs()]

    def evaluation_targets(self, run: str) -> list[str]:
        """``rule all``'s part of a run's evaluation: the isotropy of every step's entry space (methods that train
        against one), its table of each evaluator of ``evaluation.tables`` and its steps report."""
        isotropy = [isotropy_file(encoder, dataset) for encoder, dataset in self.analysed_spaces(run)]
        return [*isotropy, *(run_file(run, f"{evaluator.name}.tsv") for evaluator in self.tables()),
                run_file(run, "steps.tsv")]
