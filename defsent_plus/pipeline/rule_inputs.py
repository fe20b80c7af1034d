"""The Snakemake inputs of every rule, as named input functions of the job's wildcards, built from a :class:`Plan`.

A rule computed from an encoder gets, besides its files, a ``selection`` input that asks every selection the
encoder comes from (the select_best checkpoint): no rule can forget that dependency. Each file is its own input
function, so while a selection is pending the other inputs stay known and a dry run still lists the jobs that make
them. Light on purpose (no torch).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from defsent_plus.pipeline import dag
from defsent_plus.pipeline.dag import EncoderId
from defsent_plus.pipeline.plan import Plan

InputFunction = Callable[[Any], "str | list[str]"]


def encoder_of(wildcards) -> EncoderId:
    """The encoder of an ``{encoder}`` job."""
    return EncoderId.parse(wildcards.encoder)


def candidate_of(wildcards) -> EncoderId:
    """The candidate of a ``{run}/step{step}/{space}/seed{seed}`` job."""
    return EncoderId.candidate(wildcards.run, wildcards.step, wildcards.space, wildcards.seed)


def formatted(pattern: str | list[str]) -> InputFunction:
    """An input function: ``pattern`` (or each of a list of patterns) filled with the job's wildcards."""
    if isinstance(pattern, list):
        return lambda wildcards: [p.format(**wildcards) for p in pattern]
    return lambda wildcards: pattern.format(**wildcards)


def entries(files: Callable[[Any], dict], names: tuple[str, ...]) -> dict[str, InputFunction]:
    """One input function per name: that entry of ``files(wildcards)`` (none where it has no such entry)."""
    return {name: (lambda wildcards, name=name: files(wildcards).get(name, [])) for name in names}


class RuleInputs:
    """Named input functions per rule (``input: **INPUTS.<rule>(...)`` in the rule files)."""

    def __init__(self, plan: Plan):
        self.plan = plan

    def computed_from(self, encoder: Callable[[Any], EncoderId], model: bool = True,
                      **files: InputFunction) -> dict[str, InputFunction]:
        """``files``, the encoder's model directory (with ``model``) and the ``selection`` wait."""
        items = dict(files)
        if model:
            items["model"] = lambda wildcards: self.plan.model_dir(encoder(wildcards))
        items["selection"] = lambda wildcards: self.plan.wait_for_selections(encoder(wildcards))
        return items

    def of_encoder(self, model: bool = True, **patterns: str | list[str]) -> dict[str, InputFunction]:
        """An ``{encoder}`` job: its model (with ``model``) and files given as wildcard patterns."""
        return self.computed_from(encoder_of, model, **{name: formatted(p) for name, p in patterns.items()})

    def entry_space(self) -> dict[str, InputFunction]:
        """The encoder that builds the spaces, and the dataset whose entries it embeds."""
        return self.computed_from(encoder_of, dataset=lambda wildcards: self.plan.dataset_file(wildcards.dataset))

    def training(self) -> dict[str, InputFunction]:
        """A candidate's starting weights (``base``), ``dataset``, frozen entry ``space`` (methods with one) and
        ``senteval`` data (methods that select on STS-B dev while training)."""
        files = entries(lambda wildcards: self.plan.training_files(candidate_of(wildcards)),
                        ("base", "dataset", "space", "senteval", "corpus"))
        return self.computed_from(candidate_of, model=False, **files)

    def selection(self) -> dict[str, InputFunction]:
        """A step's candidates: their dev scores (after the previous step's selection). Not their weights, which
        ``selection.keep_weights: selected`` deletes: adding a seed re-selects without retraining the others."""
        plan = self.plan
        return self.computed_from(  # the step's candidates share their selections: the first one's are the step's
            lambda wildcards: plan.candidates(wildcards.run, wildcards.step)[0], model=False,
            dev=lambda wildcards: [dag.dev_file(c) for c in plan.candidates(wildcards.run, wildcards.step)],
        )

    def kept_best(self) -> dict[str, InputFunction]:
        """The selected candidate's weights (after the step's selection)."""
        return {"model": lambda wildcards: self.plan.selection(wildcards.run, int(wildcards.step))["model"]}

    def pruning(self) -> dict[str, InputFunction]:
        """Everything that reads a step's candidates' weights (they are deleted after it)."""
        return entries(lambda wildcards: self.plan.weight_readers(wildcards.run, int(wildcards.step)),
                       ("dev", "best", "tables", "mteb", "baselines"))

    def reverse_dictionary(self) -> dict[str, InputFunction]:
        """The final dev-selected model, the held-out queries, the run's starting model and its AMP space of the run's
        entries (the untrained reference, and every model's ``cosine`` protocol); for entry-space methods also the
        spaces the final step trained on."""
        plan = self.plan

        def final_spaces(wildcards) -> list[str]:
            run, last = wildcards.run, plan.final_step(wildcards.run)
            if not plan.method(run).uses_entry_space:
                return []
            return [plan.space_of(run, last, space) for space in plan.run(run)["steps"][-1]["spaces"]]

        return self.computed_from(
            lambda wildcards: EncoderId.selected(wildcards.run, plan.final_step(wildcards.run)),
            spaces=final_spaces,
            dataset=lambda wildcards: plan.dataset_file(plan.run(wildcards.run)["dataset"]),
            queries=lambda wildcards: plan.queries_file(plan.run(wildcards.run)["dataset"]),
            base=lambda wildcards: plan.model_dir(plan.start(wildcards.run)),
            base_space=lambda wildcards: [plan.space_of(wildcards.run, 1, "amp")],
        )

    def score_table(self) -> dict[str, InputFunction]:
        """A run's table of one ``{evaluator}``: the score files of the models its declaration names, their per-pair
        similarities (paired evaluators) and the final selection."""
        plan = self.plan

        def rows(wildcards) -> list[dict]:
            return plan.score_rows(plan.table_models(wildcards.run, wildcards.evaluator), wildcards.evaluator)

        return {
            "scores": lambda wildcards: [row["scores"] for row in rows(wildcards)],
            "pairs": lambda wildcards: [row["pairs"] for row in rows(wildcards) if "pairs" in row],
            "best": lambda wildcards: dag.best_json(wildcards.run, plan.final_step(wildcards.run)),
        }

    def steps_report(self) -> dict[str, InputFunction]:
        """Every step's selection, every candidate's training summary, the starting model's dev score."""
        plan = self.plan
        return {
            "best": lambda wildcards: [record["best"] for record in plan.step_records(wildcards.run)],
            "train": lambda wildcards: [path for record in plan.step_records(wildcards.run)
                                        for path in record["train"]],
            "metrics": lambda wildcards: [path for record in plan.step_records(wildcards.run)
                                          for path in record["metrics"]],
            "start_dev": lambda wildcards: plan.dev_of(plan.start(wildcards.run)),
        }
