"""What a validated config implies, planned by stage: the training chain (:mod:`.plan_chain`), the evaluation
(:mod:`.plan_evaluation`) and the baselines (:mod:`.plan_baselines`); :class:`Plan` joins them, checks the config's
references, compares the runs (the STS and reverse-dictionary comparison tables, the per-pair similarities of their
intervals and paired tests, the summary's pages) and composes ``rule all`` from the stages' parts.
:mod:`defsent_plus.pipeline.rule_inputs` turns these into the rules' inputs. Light on purpose (no torch).
"""

from __future__ import annotations

from defsent_plus.errors import DefSentError
from defsent_plus.evaluation.evaluators import EVALUATORS, evaluator_of
from defsent_plus.names import TRANSDUCTIVE_NOTE
from defsent_plus.pipeline.dag import (
    EncoderId,
    compare_file,
    dictionary_file,
    run_file,
    score_file,
)
from defsent_plus.pipeline.plan_baselines import BaselinesPlan
from defsent_plus.pipeline.plan_chain import ChainPlan, Selection
from defsent_plus.pipeline.plan_evaluation import EvaluationPlan


class Plan(ChainPlan, EvaluationPlan, BaselinesPlan):
    """What a validated config implies, by stage (chain, evaluation, baselines: one module each), and the comparison.
    ``selection`` reads a step's selection; in the workflow it asks the select_best checkpoint, so calling it makes a
    job wait for (and be re-planned after) that selection."""

    def __init__(self, config: dict, selection: Selection):
        self.config = config
        self.selection = selection
        self.check_references()

    def check_references(self) -> None:
        """Every name the config refers to exists: models, datasets, methods, start_from runs (no cycles)."""
        self._require_model("dictionary.tokenizer", self.config["dictionary"]["tokenizer"])
        datasets = {"a", "b", "c", *self.config.get("subsets", {})}
        for run, cfg in self.config["runs"].items():
            if "model" in cfg:
                self._require_model(f"runs.{run}.model", cfg["model"])
            if cfg["dataset"] not in datasets:
                raise DefSentError(f"config: runs.{run}.dataset", f"unknown dataset {cfg['dataset']!r}; expected "
                                                                   f"a, b, c or a subset ({sorted(datasets)})")
            self.check_steps(run)
            self.method_options(run)
            self.start(run)
        self.check_published()
        self.check_baselines()
        self.check_tables()

    def check_tables(self) -> None:
        """Every ``evaluation.tables`` entry names a registered evaluator that writes a table."""
        tabled = [name for name, evaluator in EVALUATORS.all().items() if evaluator.table]
        for name in self.config["evaluation"]["tables"]:
            if evaluator_of(name).table is None:
                raise DefSentError("config: evaluation.tables", f"evaluator {name!r} writes no table; expected one "
                                                                f"of {tabled}")

    def check_published(self) -> None:
        """Every ``published.<run>`` names a run, one of the evaluated poolings and (``space``) one of the run's
        final-step spaces; ``compare_with: seeds`` needs the final step's seeds in the table."""
        config = self.config
        for run, spec in config.get("published", {}).items():
            if run not in config["runs"]:
                raise DefSentError(f"config: published.{run}", f"no run named {run!r} (runs: {sorted(config['runs'])})")
            poolings = config["evaluation"]["poolings"]
            if spec.get("pooling", poolings[0]) not in poolings:
                raise DefSentError(f"config: published.{run}.pooling", f"{spec['pooling']!r} is not evaluated "
                                                                      f"(evaluation.poolings: {poolings})")
            spaces = [c.space for c in self.candidates(run, self.final_step(run))]
            if "space" in spec and spec["space"] not in spaces:
                raise DefSentError(f"config: published.{run}.space", f"{spec['space']!r} is not a space of the "
                                                                    f"run's final step ({sorted(set(spaces))})")
            if spec.get("compare_with", "selected") == "seeds" and config["evaluation"]["final"] != "candidates":
                raise DefSentError(f"config: published.{run}.compare_with", "seeds needs the final step's seeds in "
                                                                           "the table (evaluation.final: candidates)")

    def check_steps(self, run: str) -> None:
        """Entry-space methods name each step's spaces; other methods have none and at most ``max_steps`` steps."""
        method, steps = self.method(run), self.run(run)["steps"]
        for k, step in enumerate(steps):
            if method.uses_entry_space != ("spaces" in step):
                need = "needs" if method.uses_entry_space else "takes no"
                raise DefSentError(f"config: runs.{run}.steps[{k}].spaces", f"method {method.name} {need} entry "
                                                                           "spaces")
        if method.max_steps is not None and len(steps) > method.max_steps:
            raise DefSentError(f"config: runs.{run}.steps", f"method {method.name} trains {method.max_steps} "
                                                            f"step(s) (no PST), got {len(steps)}")

    def _require_model(self, key: str, name: str) -> None:
        if name not in self.config["models"]:
            raise DefSentError(f"config: {key}", f"no model named {name!r} in models "
                                                 f"(configured: {sorted(self.config['models'])})")

    def targets(self) -> list[str]:
        """What ``rule all`` builds, composed of the stages' parts: the dictionary stats and, per run, every step's
        selected model (the chain) and the run's evaluation (isotropy, tables, steps report); then each evaluator's
        own targets, the STS comparison, the baselines' pages, the reverse-dictionary comparison and the summary."""
        targets = [dictionary_file("stats.tsv")]
        for run in self.config["runs"]:
            targets += self.chain_targets(run) + self.evaluation_targets(run)
        for evaluator in EVALUATORS.all().values():
            targets += evaluator.targets(self) if evaluator.targets else []
        return [*targets, compare_file("sts.tsv"), *self.baseline_targets(),
                *([compare_file("reverse_dictionary.tsv")] if self.heldout_runs() else []), compare_file("summary.md")]

    def comparison_pages(self) -> list[str]:
        """The comparison tables' markdown pages, in the summary's order."""
        return [compare_file("sts.md"), *([compare_file("reverse_dictionary.md")] if self.heldout_runs() else [])]

    def run_details(self) -> list[dict]:
        """Per run, its method and the detail files the summary links to (those ``rule all`` builds for it)."""
        heldout = set(self.heldout_runs())
        return [{"run": run, "method": self.method(run).name,
                 "files": [run_file(run, name) for name in (*self.table_files(), "steps.tsv", "curves.png",
                                                             *(["reverse_dictionary.md"] if run in heldout else []))]}
                for run in self.config["runs"]]

    def table_title(self, run: str, title: str) -> str:
        """A run's table title, marked when its model is transductive."""
        return f"{title} ({TRANSDUCTIVE_NOTE})" if self.transductive(run) else title

    def sts_comparison(self) -> list[dict]:
        """Every run's STS table with its method and chain (rule compare_sts); transductive runs are marked."""
        return [{"run": run, "method": self.method(run).name, "chain": " → ".join(self.chain(run)),
                 "sts": run_file(run, "sts.tsv"), **({"transductive": True} if self.transductive(run) else {})}
                for run in self.config["runs"]]

    def comparison_pairs(self) -> list[str]:
        """The per-pair similarities of the comparison's intervals and paired tests: per run, per pooling, its
        starting model's and its final dev-selected model's, as the run's table scored them (asks the final
        selections: with ``evaluation.final: candidates`` the selected model is its winning candidate)."""
        return [score_file(encoder, "sts", pooling, "pairs.parquet") for run in self.config["runs"]
                for pooling in self.config["evaluation"]["poolings"]
                for encoder in (self.start(run), self.scored_final(run))]

    def comparison_scores(self) -> list[str]:
        """The score records beside :meth:`comparison_pairs`' files, whose provenance the comparison's page cites."""
        return [path.removesuffix(".pairs.parquet") + ".json" for path in self.comparison_pairs()]

    def scored_final(self, run: str) -> EncoderId:
        """A run's final dev-selected model under the name its STS table scores it by."""
        last = self.final_step(run)
        if self.config["evaluation"]["final"] == "best":
            return EncoderId.selected(run, last)
        best = self.selection(run, last)
        return EncoderId.candidate(run, last, best["space"], best["seed"])

    def reverse_dictionary_comparison(self) -> list[dict]:
        """Every held-out run's reverse dictionary (rule compare_reverse_dictionary)."""
        return [{"run": run, "json": run_file(run, "reverse_dictionary.json")} for run in self.heldout_runs()]
