"""The training chain of a plan: runs, their methods and options, PST steps and their candidates, the model a
run starts from, who builds a step's entry space, where an encoder's weights are, and the files a candidate's
training reads. Part of :class:`defsent_plus.pipeline.plan.Plan` (``config``, ``selection``)."""

from __future__ import annotations

from collections.abc import Callable

from jsonschema import Draft202012Validator

from defsent_plus.errors import DefSentError
from defsent_plus.methods import Method, method_of
from defsent_plus.pipeline.dag import (
    EncoderId,
    acquired_data,
    baselines_file,
    best_dir,
    data_dir,
    dev_file,
    dictionary_file,
    mteb_check,
    pinned_model,
    pruned_record,
    run_file,
    space_file,
    subset_file,
    trained_model,
)

Selection = Callable[[str, int], dict]  # (run, step) -> best.json's "best" record ({"space", "seed", "model"})


class ChainPlan:
    """What a config's runs train: runs, steps, candidates, selections and the files they read."""

    config: dict  # the validated config (set by Plan)
    selection: Selection  # reads a step's selection (set by Plan)

    def run(self, run: str) -> dict:
        return self.config["runs"][run]

    def method(self, run: str) -> Method:
        return method_of(self.run(run)["method"], f"config: runs.{run}.method")

    def method_options(self, run: str) -> dict:
        """The run's method options: ``methods.<method>`` with the run's own ``options`` over it (checked against
        the method's block; e.g. one SLT-FAI run per variant in one config)."""
        method = self.method(run)
        options = {**self.config.get("methods", {}).get(method.name, {}), **self.run(run).get("options", {})}
        errors = sorted(Draft202012Validator(method.options_schema()).iter_errors(options), key=str)
        if errors:
            key = ".".join(str(part) for part in errors[0].absolute_path)
            raise DefSentError(f"config: runs.{run}.options.{key}".rstrip("."), errors[0].message)
        return options

    def final_step(self, run: str) -> int:
        return len(self.run(run)["steps"])

    def start(self, run: str, seen: tuple[str, ...] = ()) -> EncoderId:
        """The model a run starts from: its configured ``model``, or another run's final dev-selected model
        (``start_from``, the paper's Table 3 chain). Every PST step trains from these weights."""
        cfg = self.run(run)
        if "start_from" not in cfg:
            return EncoderId.base(cfg["model"])
        other = cfg["start_from"]
        if other not in self.config["runs"]:
            raise DefSentError(f"config: runs.{run}.start_from", f"no run named {other!r}")
        if other in seen + (run,):
            raise DefSentError(f"config: runs.{run}.start_from",
                               f"runs start from each other in a cycle ({' -> '.join(seen + (run, other))})")
        self.start(other, seen + (run,))
        return EncoderId.selected(other, self.final_step(other))

    def space_builder(self, run: str, step: int) -> EncoderId:
        """Who builds step k's entry space: the run's starting model at step 1, step k-1's best after."""
        step = int(step)
        return self.start(run) if step == 1 else EncoderId.selected(run, step - 1)

    def candidates(self, run: str, step: int) -> list[EncoderId]:
        """The (space, seed) candidates trained at a step, in config order (a method without an entry space: its
        target, e.g. ``vocab``, in place of the space)."""
        cfg = self.run(run)
        targets = self.method(run).targets(cfg["steps"][int(step) - 1])
        return [EncoderId.candidate(run, step, target, seed) for target in targets for seed in cfg["seeds"]]

    def dataset_file(self, name: str) -> str:
        """Parquet of dataset a, b, c or of a configured subset."""
        if name in self.config.get("subsets", {}):
            return subset_file(name)
        return dictionary_file(f"{name}.parquet")

    def run_dataset(self, run: str) -> str:
        return self.dataset_file(self.run(run)["dataset"])

    def space_of(self, run: str, step: int, space: str) -> str:
        """The entry space a step's candidates train against."""
        return space_file(self.space_builder(run, step), self.run(run)["dataset"], space)

    def depends_on(self, encoder: EncoderId) -> list[tuple[str, int]]:
        """The selections (run, step) an encoder comes from directly: a step's best its own step's; a candidate
        its previous step's (at step 1: the one its run starts from, if any); a base model none."""
        if encoder.kind == "base":
            return []
        if encoder.kind == "selected":
            return [(encoder.run, encoder.step)]
        builder = self.space_builder(encoder.run, encoder.step)
        return [] if builder.kind == "base" else [(builder.run, builder.step)]

    @property
    def keeps_selected_weights_only(self) -> bool:
        """``selection.keep_weights: selected``: candidates' weights are temporary, each step's ``best/`` stays."""
        return self.config["selection"]["keep_weights"] == "selected"

    def model_dir(self, encoder: EncoderId) -> str:
        """Where an encoder's weights are: the pinned copy, a candidate's model/, or, for a step's best, the
        winning candidate's own directory (so re-selecting the same candidate re-runs nothing after it); the step's
        ``best/`` copy when only the selected weights are kept."""
        if encoder.kind == "base":
            return pinned_model(encoder.model)
        if encoder.kind == "selected":
            if self.keeps_selected_weights_only:
                return best_dir(encoder.run, encoder.step)
            return self.selection(encoder.run, encoder.step)["model"]
        return trained_model(encoder)

    def weight_readers(self, run: str, step: int) -> dict[str, list[str]]:
        """What reads a step's candidates' weights (``prune_candidates`` waits for it): their dev scores, the copy of
        the selected one, the run's STS table where it evaluates them (``evaluation.final: candidates``), MTEB's
        cross-checks of them (which load their weights) and the training-free grids of candidate encoders."""
        candidates = self.candidates(run, step)
        names = {c.name for c in candidates}
        evaluated = any(row.encoder.name in names for row in self.evaluated(run))
        return {"dev": [dev_file(c) for c in candidates], "best": [best_dir(run, step)],
                "tables": [run_file(run, "sts.tsv")] if evaluated else [],
                "mteb": [mteb_check(e, pooling) for e, pooling in self.mteb_models() if e.name in names],
                "baselines": [baselines_file(e, "scores.tsv") for e in self.baseline_encoders() if e in names]}

    def dev_of(self, encoder: EncoderId) -> str:
        """An encoder's STS-B dev score file (a step's best: its winning candidate's)."""
        if encoder.kind == "selected":
            best = self.selection(encoder.run, encoder.step)
            return dev_file(EncoderId.candidate(encoder.run, encoder.step, best["space"], best["seed"]))
        return dev_file(encoder)

    def wait_for_selections(self, encoder: EncoderId) -> list[str]:
        """Ask every selection the encoder comes from (no files). In the workflow, asking a pending selection makes
        the job wait and be planned afresh once it is known: Snakemake re-plans only a checkpoint's direct
        dependents, and a job planned indirectly would keep a stale "input updated" reason."""
        for run, step in self.depends_on(encoder):
            self.selection(run, step)
        return []

    def training_files(self, candidate: EncoderId) -> dict[str, str]:
        """A candidate's training: the run's starting weights (``base``), its ``dataset``, for methods that use
        one the frozen entry ``space`` built by the previous step's best, and for methods that select their weights
        on STS-B dev while training (SimCSE) the ``senteval`` data."""
        files = {"base": self.model_dir(self.start(candidate.run)), "dataset": self.run_dataset(candidate.run)}
        method = self.method(candidate.run)
        if method.uses_entry_space:
            files["space"] = self.space_of(candidate.run, candidate.step, candidate.space)
        if method.dev_in_training:
            files["senteval"] = data_dir("senteval")
        corpora = self.run_corpora(candidate.run)
        if corpora:
            files["corpus"] = list(corpora.values())
        return files

    def run_corpora(self, run: str) -> dict[str, str]:
        """The acquired datasets a run's method options read (a corpus file, a frequency corpus), by name."""
        options = self.method_options(run)
        return acquired_data([options.get("corpus_file"), options.get("frequency_corpus")])

    def chain(self, run: str) -> list[str]:
        """The model a run comes from and the runs in between: ``[model, run1, ..., run]`` (000 Table 3's chain)."""
        cfg = self.run(run)
        return [cfg["model"], run] if "model" in cfg else [*self.chain(cfg["start_from"]), run]

    def transductive(self, run: str) -> bool:
        """Whether a run, or a run its starting weights come from, trained on the evaluation sets' sentences."""
        return any(self.method(r).transductive(self.method_options(r)) for r in self.chain(run)[1:])

    def chain_targets(self, run: str) -> list[str]:
        """``rule all``'s part of a run's chain: every step's selected model (and, with ``keep_weights: selected``,
        the record of its candidates' pruning)."""
        steps = range(1, self.final_step(run) + 1)
        return [best_dir(run, step) for step in steps] + [
            pruned_record(run, step) for step in steps if self.keeps_selected_weights_only]
