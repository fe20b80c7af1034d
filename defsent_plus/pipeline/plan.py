"""What a validated config implies: :class:`Plan` checks the config's references and plans, by stage, the training
chain, the evaluation, the training-free baselines and the comparison of the runs, and composes ``rule all`` from the
stages' parts. :mod:`defsent_plus.pipeline.rule_inputs` turns these into the rules' inputs. Light (no torch).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from jsonschema import Draft202012Validator

from defsent_plus.baselines.spec import (
    NO_TEMPLATE,
    SHARED_POOLINGS,
    SHARED_SENTENCE_SETS,
    caches_last_layer,
    check_grid,
    extraction_request,
)
from defsent_plus.errors import DefSentError
from defsent_plus.evaluation.evaluators import EVALUATORS, Evaluator, evaluator_of
from defsent_plus.methods import Method, method_of
from defsent_plus.names import TRANSDUCTIVE_NOTE, alternatives
from defsent_plus.pipeline.dag import (
    EncoderId,
    acquired_data,
    baseline_cache,
    baselines_file,
    best_dir,
    best_json,
    compare_file,
    data_dir,
    dev_file,
    dictionary_file,
    isotropy_file,
    mteb_check,
    pinned_model,
    pruned_record,
    run_file,
    score_file,
    space_file,
    subset_file,
    train_metrics,
    train_summary,
    trained_model,
)

Selection = Callable[[str, int], dict]  # (run, step) -> best.json's "best" record ({"space", "seed", "model"})

UNSHOWN_STEPS = {  # why a table's models leave out earlier PST steps, per Table.models (with evaluation.steps: all
    # an evaluated table shows every step, so a step it leaves out means evaluation.steps: final)
    "evaluated": "evaluation.steps is final (evaluation.steps: all adds each step's best)",
    "endpoints": "this table scores the starting and the final dev-selected model only",
}


def unshown_steps(rows: Sequence[dict], evaluator: str) -> str:
    """The by-step plot's line naming the PST steps a table's ``rows`` (:meth:`Plan.score_rows`, each
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


class Plan:
    """See the module. ``selection`` reads a step's selection; in the workflow it asks the select_best checkpoint,
    so calling it makes a job wait for (and be re-planned after) that selection."""

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

    def check_baselines(self) -> None:
        """Every baseline encoder is an encoder of this DAG, its grid exists and names only known things."""
        baselines = self.config.get("baselines", {})
        for name, grid in baselines.get("encoders", {}).items():
            key = f"config: baselines.encoders.{name}"
            try:
                encoder = EncoderId.parse(name)
            except ValueError as err:
                raise DefSentError(key, str(err)) from None
            if encoder.kind == "base":
                self._require_model(key, encoder.model)
            elif encoder.run not in self.config["runs"] or encoder.step > self.final_step(encoder.run) or (
                    encoder.kind == "candidate" and encoder not in self.candidates(encoder.run, encoder.step)):
                raise DefSentError(key, f"{name!r} is not an encoder of this config's runs")
            if grid not in baselines.get("grids", {}):
                raise DefSentError(key, f"no grid named {grid!r} (configured: {sorted(baselines.get('grids', {}))})")
        for name, grid in baselines.get("grids", {}).items():
            check_grid(grid, baselines.get("templates", {}), f"config: baselines.grids.{name}")
        fit = baselines.get("fit_corpus", {})
        if not fit.get("file") and fit.get("dataset", "a") not in {"a", "b", "c", *self.config.get("subsets", {})}:
            raise DefSentError("config: baselines.fit_corpus.dataset", f"unknown dataset {fit['dataset']!r}")

    # ------------------------------------------------------------------------------------------- the chain

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

    def steps(self, run: str) -> range:
        """A run's PST steps, 1 to the final one."""
        return range(1, self.final_step(run) + 1)

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

    def winner(self, run: str, step: int) -> EncoderId:
        """A step's dev-selected candidate (asks its selection)."""
        best = self.selection(run, step)
        return EncoderId.candidate(run, step, best["space"], best["seed"])

    def dev_of(self, encoder: EncoderId) -> str:
        """An encoder's STS-B dev score file (a step's best: its winning candidate's)."""
        return dev_file(self.winner(encoder.run, encoder.step) if encoder.kind == "selected" else encoder)

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
        method, cfg = self.method(candidate.run), self.run(candidate.run)
        files = {"base": self.model_dir(self.start(candidate.run)), "dataset": self.dataset_file(cfg["dataset"])}
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
        return [best_dir(run, step) for step in self.steps(run)] + [
            pruned_record(run, step) for step in self.steps(run) if self.keeps_selected_weights_only]

    # ------------------------------------------------------------------------------------------ evaluation

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
        return [encoder for run in self.config["runs"] for encoder in (
            *([self.start(run)] if self.start(run).kind == "base" else []),
            *(candidate for step in self.steps(run) for candidate in self.candidates(run, step)))]

    def _start_row(self, run: str) -> Evaluated:
        start = self.start(run)
        label = f"base ({start.name})" if start.kind == "base" else f"start ({start.name}, dev-selected)"
        return Evaluated(start, label, "", 0)

    def embedding_job(self, encoder: str, sentences: str, pooling: str) -> dict:
        """An ``embed`` job's params: its forward pass's options (STS-B dev: the selection's, so evaluation options
        never re-run a selection; every other set: the evaluation's) and, where the encoder's baselines pass computes
        the same vectors, the ``cache`` to read them from instead (:mod:`defsent_plus.baselines.reuse`)."""
        block = self.config["selection" if sentences == "stsb-dev" else "evaluation"]
        options = {"batch_size": block["batch_size"], "max_length": block["max_length"]}
        if encoder not in self.baseline_encoders() or sentences not in SHARED_SENTENCE_SETS:
            return options
        if not (pooling in SHARED_POOLINGS and NO_TEMPLATE in self.baseline_grid(encoder)["templates"]
                and self.config["baselines"]["max_length"] == options["max_length"]
                and caches_last_layer(self.baseline_request(encoder, NO_TEMPLATE), pooling)):
            return options
        return {**options, "cache": baseline_cache(encoder, NO_TEMPLATE), "aggregation": pooling,
                "alignment": self.config["baselines"]["alignment"]}

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
                for k in self.steps(run)]

    def analysed_spaces(self, run: str) -> list[tuple[EncoderId, str]]:
        """(encoder, dataset) of every step's entry space, built by the step's builder, whose isotropy is measured
        (methods that train against one)."""
        if not self.method(run).uses_entry_space:
            return []
        return [(self.space_builder(run, k), self.run(run)["dataset"]) for k in self.steps(run)]

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

    def evaluation_targets(self, run: str) -> list[str]:
        """``rule all``'s part of a run's evaluation: the isotropy of every step's entry space (methods that train
        against one), its table of each evaluator of ``evaluation.tables`` and its steps report."""
        isotropy = [isotropy_file(encoder, dataset) for encoder, dataset in self.analysed_spaces(run)]
        return [*isotropy, *(run_file(run, f"{evaluator.name}.tsv") for evaluator in self.tables()),
                run_file(run, "steps.tsv")]

    # ------------------------------------------------------------------------------------------- baselines

    def baseline_encoders(self) -> list[str]:
        return list(self.config.get("baselines", {}).get("encoders", {}))

    def baseline_grid(self, encoder: str) -> dict:
        baselines = self.config["baselines"]
        return baselines["grids"][baselines["encoders"][encoder]]

    def baseline_grid_key(self, encoder: str) -> str:
        return f"config: baselines.grids.{self.config['baselines']['encoders'][encoder]}"

    def baseline_request(self, encoder: str, template: str) -> dict:
        """What the (encoder, template) forward pass computes (its job's params)."""
        return extraction_request(self.baseline_grid(encoder), template, self.config["baselines"]["templates"])

    def baseline_templates(self, encoder: str) -> dict[str, str]:
        """The user templates an encoder's grid uses (its grid job's params)."""
        custom = self.config["baselines"]["templates"]
        return {name: custom[name] for name in self.baseline_grid(encoder)["templates"] if name in custom}

    def baseline_caches(self, encoder: str) -> dict[str, str]:
        """An encoder's cache directory per template of its grid."""
        return {template: baseline_cache(encoder, template) for template in self.baseline_grid(encoder)["templates"]}

    def fit_corpus_inputs(self) -> dict[str, str | list[str]]:
        """The fit corpus' sources: its text file's acquired dataset, or the dictionary dataset and every held-out
        query file (none of those queries may enter the corpus)."""
        options = self.config["baselines"]["fit_corpus"]
        if options.get("file"):
            return {"corpus": list(acquired_data([options["file"]]).values())}
        dataset, *heldout = self.fit_corpus_datasets()
        return {"dataset": self.dataset_file(dataset), "queries": [subset_file(name, "queries.parquet")
                                                                  for name in heldout]}

    def fit_corpus_datasets(self) -> list[str]:
        """The dictionary datasets the fit corpus reads: its dataset, then every subset with a held-out split (none
        of whose queries may enter it); none where it is a text file."""
        options = self.config["baselines"]["fit_corpus"]
        if options.get("file"):
            return []
        return [options["dataset"], *(name for name in self.config.get("subsets", {})
                                      if self.heldout(name) is not None)]

    def baseline_targets(self) -> list[str]:
        """``rule all``'s part of the baselines: each encoder's grid table, summary and per-layer plot."""
        return [baselines_file(encoder, name) for encoder in self.baseline_encoders()
                for name in ("scores.tsv", "summary.md", "layers.png")]

    # ----------------------------------------------------------------------------- rule all, the comparison

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
        tables = [name for e in self.tables() for name in (f"{e.name}.md", f"{e.name}_by_step.png")]
        return [{"run": run, "method": self.method(run).name,
                 "files": [run_file(run, name) for name in (*tables, "steps.tsv", "curves.png",
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
        return EncoderId.selected(run, last) if self.config["evaluation"]["final"] == "best" else self.winner(run, last)

    def reverse_dictionary_comparison(self) -> list[dict]:
        """Every held-out run's reverse dictionary (rule compare_reverse_dictionary)."""
        return [{"run": run, "json": run_file(run, "reverse_dictionary.json")} for run in self.heldout_runs()]
