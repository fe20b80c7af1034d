"""The workflow's identities, paths and plan (defsent_plus.pipeline.dag), without running Snakemake."""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import SimpleNamespace

import pytest
import yaml
from conftest import FIXTURES, REPO
from workflow_utils import validated

from defsent_plus.errors import DefSentError
from defsent_plus.names import SPACE_PATTERN, split_space
from defsent_plus.pipeline import dag
from defsent_plus.pipeline.dag import EncoderId
from defsent_plus.pipeline.plan import Evaluated, Plan
from defsent_plus.pipeline.rule_inputs import RuleInputs
from defsent_plus.pipeline.snakemake_api import PREFIX_VARIABLE

SELECTED = {"space": "amp", "seed": 1}


class RecordingSelection:
    """Stands in for the select_best checkpoint: records which selections were asked."""

    def __init__(self):
        self.asked: list[tuple[str, int]] = []

    def __call__(self, run: str, step: int) -> dict:
        self.asked.append((run, int(step)))
        return {**SELECTED, "model": dag.trained_model(EncoderId.candidate(run, step, **SELECTED))}


def tiny_config(**runs) -> dict:
    text = (FIXTURES / "tiny" / "config.yaml").read_text().format(model="/models/tiny", fixtures=FIXTURES)
    config = yaml.safe_load(text)
    config["runs"].update(runs)
    return validated(config)


@pytest.fixture
def selection() -> RecordingSelection:
    return RecordingSelection()


@pytest.fixture
def plan(selection) -> Plan:
    return Plan(tiny_config(), selection)


@pytest.mark.parametrize("encoder", [
    EncoderId.base("minilm"),
    EncoderId.selected("default", 2),
    EncoderId.candidate("default", 3, "amp.ica", 0),
    EncoderId.candidate("my-run_2", 12, "ac.whiten", 10),
])
def test_names_parse_back_to_the_same_identity(encoder):
    assert EncoderId.parse(encoder.name) == encoder
    assert re.fullmatch(dag.WILDCARDS["encoder"], encoder.name)


def test_kinds_and_names():
    assert EncoderId.base("minilm").name == "minilm"
    assert EncoderId.selected("default", 2).name == "default.step2"
    assert EncoderId.candidate("default", 3, "amp.ica", 0).name == "default.step3.amp.ica.seed0"
    assert [EncoderId.parse(n).kind for n in ("m", "r.step1", "r.step1.amp.seed0")] == ["base", "selected",
                                                                                          "candidate"]


@pytest.mark.parametrize("name", ["r.step0", "r.step1.X-y.seed0", "r.step1.amp", "a b", "r.step1.amp.seedx"])
def test_malformed_names_are_refused(name):
    with pytest.raises(ValueError, match="not an encoder name"):
        EncoderId.parse(name)
    assert not re.fullmatch(dag.WILDCARDS["encoder"], name)


def test_path_functions_are_also_the_rules_output_patterns():
    candidate = EncoderId.candidate("tiny", 2, "amp", 1)
    assert dag.trained_model(candidate) == dag.candidate_file("{run}", "{step}", "{space}", "{seed}", "model").format(
        run="tiny", step=2, space="amp", seed=1)
    assert dag.score_file(candidate, "sts", "mean") == "results/eval/tiny.step2.amp.seed1/sts_mean.json"
    assert dag.space_file("{encoder}", "{dataset}", "amp").format(encoder="tiny.step1", dataset="a") == \
        dag.space_file(EncoderId.selected("tiny", 1), "a", "amp")


def test_step_one_space_is_built_by_the_base_model_later_ones_by_the_previous_best(plan):
    assert plan.space_builder("tiny", 1) == EncoderId.base("tiny")
    assert plan.space_builder("tiny", 3) == EncoderId.selected("tiny", 2)
    assert plan.space_of("tiny", 3, "amp.ica") == "results/entry_spaces/tiny.step2/a/amp.ica.npy"


def test_candidates_follow_config_order(plan):
    names = [c.name for c in plan.candidates("tiny", 3)]
    assert names == ["tiny.step3.amp.seed0", "tiny.step3.amp.seed1", "tiny.step3.amp.ica.seed0",
                     "tiny.step3.amp.ica.seed1"]


def inputs_of(plan: Plan, encoder: EncoderId, **files) -> dict:
    """Evaluate every named input function as Snakemake would, for a job computed from ``encoder``."""
    functions = RuleInputs(plan).computed_from(lambda wildcards: encoder, **files)
    return {name: function(None) for name, function in functions.items()}


def test_every_input_waits_for_the_selection_its_encoder_comes_from(plan, selection):
    assert inputs_of(plan, EncoderId.base("tiny")) == {"model": "resources/models/tiny", "selection": []}
    inputs_of(plan, EncoderId.candidate("tiny", 1, "amp", 0), model=False)
    assert selection.asked == []
    inputs = inputs_of(plan, EncoderId.candidate("tiny", 3, "amp", 0), model=False, space=lambda w: "x.npy")
    assert selection.asked == [("tiny", 2)] and inputs == {"space": "x.npy", "selection": []}
    inputs = inputs_of(plan, EncoderId.selected("tiny", 2))
    assert selection.asked[1:] == [("tiny", 2), ("tiny", 2)]  # its model directory, and the wait
    assert inputs["model"] == "results/tiny/step2/amp/seed1/model"


def test_a_pending_selection_leaves_the_other_inputs_known(plan):
    def pending(run, step):
        raise LookupError(f"selection {run} step {step} pending")

    plan.selection = pending
    functions = RuleInputs(plan).computed_from(lambda w: EncoderId.candidate("tiny", 3, "amp", 0), model=True,
                                               space=lambda w: "x.npy")
    assert functions["space"](None) == "x.npy" and functions["model"](None).endswith("seed0/model")
    with pytest.raises(LookupError, match="tiny step 2 pending"):
        functions["selection"](None)


def test_training_starts_from_the_pinned_base_model_with_the_previous_steps_space(plan, selection):
    files = plan.training_files(EncoderId.candidate("tiny", 2, "amp", 0))
    assert files == {"base": "resources/models/tiny", "dataset": "results/dictionary/a.parquet",
                     "space": "results/entry_spaces/tiny.step1/a/amp.npy"}
    assert selection.asked == []  # the wait is the job's own `selection` input


def test_a_run_can_start_from_another_runs_selected_model(selection):
    tiny = tiny_config()["runs"]["tiny"]
    chained = {k: v for k, v in tiny.items() if k != "model"} | {"start_from": "tiny"}
    plan = Plan(tiny_config(chain=chained), selection)
    assert plan.start("chain") == EncoderId.selected("tiny", 3)
    assert plan.space_builder("chain", 1) == EncoderId.selected("tiny", 3)
    files = plan.training_files(EncoderId.candidate("chain", 1, "amp", 0))
    assert files["base"] == "results/tiny/step3/amp/seed1/model"  # the selected candidate's own directory
    assert files["space"] == "results/entry_spaces/tiny.step3/a/amp.npy"
    assert plan.depends_on(EncoderId.candidate("chain", 1, "amp", 0)) == [("tiny", 3)]
    assert plan.evaluated("chain")[0].encoder == EncoderId.selected("tiny", 3)
    assert plan.dev_of(plan.start("chain")) == "results/eval/tiny.step3.amp.seed1/dev.json"


def test_start_from_cycles_and_unknown_runs_are_refused(selection):
    tiny = tiny_config()["runs"]["tiny"]
    base = {k: v for k, v in tiny.items() if k != "model"}
    with pytest.raises(DefSentError, match=r"start_from: runs start from each other in a cycle \(x -> y -> x\)"):
        Plan(tiny_config(x=base | {"start_from": "y"}, y=base | {"start_from": "x"}), selection)
    with pytest.raises(DefSentError, match="runs.x.start_from: no run named 'nope'"):
        Plan(tiny_config(x=base | {"start_from": "nope"}), selection)


@pytest.mark.parametrize("key, change", [
    ("runs.tiny.model", lambda c: c["runs"]["tiny"].update(model="nope")),
    ("dictionary.tokenizer", lambda c: c["dictionary"].update(tokenizer="nope")),
    ("runs.tiny.dataset", lambda c: c["runs"]["tiny"].update(dataset="nope")),
    ("runs.tiny.method", lambda c: c["runs"]["tiny"].update(method="nope")),
])
def test_config_references_to_unknown_names_name_the_key(selection, key, change):
    config = tiny_config()
    change(config)
    with pytest.raises(DefSentError, match=rf"config: {key}: .*'nope'"):
        Plan(config, selection)


def test_evaluated_models_are_records_with_label_group_and_step(plan):
    rows = plan.evaluated("tiny")
    assert rows[0] == Evaluated(EncoderId.base("tiny"), "base (tiny)", "", 0)
    final = rows[1:]
    assert [r.encoder for r in final] == plan.candidates("tiny", 3)
    assert {r.group for r in final} == {"step 3 amp", "step 3 amp.ica"} and {r.step for r in final} == {3}
    plan.config["evaluation"].update(steps="all", final="best")
    assert [(r.encoder.name, r.step) for r in plan.evaluated("tiny")] == [
        ("tiny", 0), ("tiny.step1", 1), ("tiny.step2", 2), ("tiny.step3", 3)]


def test_score_rows_pair_each_model_with_each_pooling(plan):
    plan.config["evaluation"]["poolings"] = ["cls", "mean"]
    rows = plan.score_rows(plan.endpoints("tiny"), "senteval")
    assert [(r["scores"], r["pooling"]) for r in rows] == [
        ("results/eval/tiny/senteval_cls.json", "cls"), ("results/eval/tiny/senteval_mean.json", "mean"),
        ("results/eval/tiny.step3/senteval_cls.json", "cls"), ("results/eval/tiny.step3/senteval_mean.json", "mean")]


def test_targets(plan):
    targets = plan.targets()
    assert "results/tiny/step3/best" in targets and "results/tiny/eval/sts.tsv" in targets
    assert [t for t in targets if t.endswith("isotropy.json")] == [
        f"results/entry_spaces/{e}/a/isotropy.json" for e in ("tiny", "tiny.step1", "tiny.step2")]


def test_wildcard_constraints_come_from_the_shared_names():
    assert dag.WILDCARDS["space"] == SPACE_PATTERN
    schema = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
    for section in ("models", "runs", "subsets"):
        assert schema["properties"][section]["propertyNames"]["pattern"] == f"^{dag.NAME}$", section


def test_the_schema_fills_method_defaults_and_errors_name_the_key():
    config = tiny_config()
    del config["methods"]
    del config["runs"]["tiny"]["method"]
    validated(config)
    assert config["runs"]["tiny"]["method"] == "defsent_plus"
    assert config["methods"]["defsent_plus"]["schedule"] == "linear"
    config["runs"]["tiny"]["steps"][0]["lr"] = -1
    with pytest.raises(DefSentError, match=r"^config: runs.tiny.steps.0.lr: -1 is less than or equal to"):
        validated(config)


def test_a_misspelt_top_level_key_is_an_error_naming_it_and_the_nearest_key():
    config = tiny_config()
    config["evalution"] = config.pop("evaluation")
    with pytest.raises(DefSentError, match=r"^config: evalution: unknown top-level key; did you mean 'evaluation'\?"):
        validated(config)


def wildcards(**values) -> SimpleNamespace:
    """What Snakemake passes an input function: attributes, and ``**`` unpacking for format()."""
    class Wildcards(SimpleNamespace, Mapping):
        def __getitem__(self, key):
            return getattr(self, key)

        def __iter__(self):
            return iter(vars(self))

        def __len__(self):
            return len(vars(self))

    return Wildcards(**values)


def evaluate(functions: dict, w) -> dict:
    return {name: function(w) for name, function in functions.items()}


def test_rule_inputs_of_every_rule(plan, selection):
    inputs = RuleInputs(plan)
    w = wildcards(run="tiny", step="2", space="amp", seed="1", encoder="tiny.step1", dataset="a", base="amp")
    assert evaluate(inputs.training(), w) == {
        "base": "resources/models/tiny", "dataset": "results/dictionary/a.parquet",
        "space": "results/entry_spaces/tiny.step1/a/amp.npy", "senteval": [], "corpus": [], "selection": []}
    assert selection.asked == [("tiny", 1)]
    selected = evaluate(inputs.selection(), w)
    assert selected["dev"] == [dag.dev_file(c) for c in plan.candidates("tiny", 2)]
    assert evaluate(inputs.entry_space(), w) == {"dataset": "results/dictionary/a.parquet",
                                                 "model": "results/tiny/step1/amp/seed1/model", "selection": []}
    assert evaluate(inputs.of_encoder(model=False, space=dag.space_file("{encoder}", "{dataset}", "{base}")), w) == {
        "space": "results/entry_spaces/tiny.step1/a/amp.npy", "selection": []}
    table = evaluate(inputs.score_table(), wildcards(run="tiny", evaluator="sts"))
    assert table["scores"][0] == "results/eval/tiny/sts_mean.json" and table["best"] == "results/tiny/step3/best.json"
    assert table["pairs"][0] == "results/eval/tiny/sts_mean.pairs.parquet"
    senteval = evaluate(inputs.score_table(), wildcards(run="tiny", evaluator="senteval"))
    assert senteval["scores"] == ["results/eval/tiny/senteval_mean.json", "results/eval/tiny.step3/senteval_mean.json"]
    assert senteval["pairs"] == []  # SentEval is not paired
    assert evaluate(inputs.steps_report(), w)["start_dev"] == "results/eval/tiny/dev.json"


def test_reverse_dictionary_queries_need_a_held_out_subset(plan):
    with pytest.raises(DefSentError, match=r"config: subsets.a.heldout: dataset has no held-out split"):
        plan.queries_file("a")


@pytest.mark.parametrize("space, parts", [("amp", ("amp", None)), ("ac.ica", ("ac", "ica"))])
def test_space_names_split_into_base_and_transform(space, parts):
    assert split_space(space) == parts


@pytest.mark.parametrize("space", ["amp.pca", "xyz", "amp."])
def test_unknown_space_names_are_refused(space):
    with pytest.raises(ValueError, match="unknown entry space"):
        split_space(space)


DEFSENT_RUN = {"method": "defsent", "model": "tiny", "dataset": "a", "training_pooling": "max", "seeds": [0, 3],
               "batch_size": 4, "steps": [{"lr": 1e-3}]}


def test_a_method_without_entry_space_trains_its_seeds_against_the_vocabulary(selection):
    plan = Plan(tiny_config(ds=DEFSENT_RUN), selection)
    assert plan.candidates("ds", 1) == [EncoderId.candidate("ds", 1, "vocab", 0),
                                        EncoderId.candidate("ds", 1, "vocab", 3)]
    assert EncoderId.parse("ds.step1.vocab.seed3") == EncoderId.candidate("ds", 1, "vocab", 3)
    assert dag.trained_model(plan.candidates("ds", 1)[1]) == "results/ds/step1/vocab/seed3/model"
    assert set(plan.training_files(plan.candidates("ds", 1)[0])) == {"base", "dataset"}  # no entry space
    assert not any("entry_spaces/tiny/a" in t and "ds" in t for t in plan.targets())
    assert "results/compare/sts.tsv" in plan.targets()


@pytest.mark.parametrize("run, key, message", [
    (DEFSENT_RUN | {"steps": [{"lr": 1e-3, "spaces": ["amp"]}]}, r"runs\.bad\.steps\[0\]\.spaces",
     "defsent takes no entry spaces"),
    (DEFSENT_RUN | {"steps": [{"lr": 1e-3}, {"lr": 1e-3}]}, r"runs\.bad\.steps",
     r"defsent trains 1 step\(s\) \(no PST\), got 2"),
    (DEFSENT_RUN | {"method": "defsent_plus"}, r"runs\.bad\.steps\[0\]\.spaces", "defsent_plus needs entry spaces"),
])
def test_steps_must_suit_the_method(selection, run, key, message):
    with pytest.raises(DefSentError, match=rf"config: {key}: method {message}"):
        Plan(tiny_config(bad=run), selection)


def test_method_defaults_are_the_methods_own(selection):
    config = tiny_config(ds=DEFSENT_RUN)
    config["methods"]["defsent"] = {"max_length": 16}
    methods = validated(config)["methods"]
    assert methods["defsent"] == {"max_length": 16, "weight_decay": 0.0, "adam_eps": 1e-8, "optimizer": "adam",
                                  "max_grad_norm": None, "bucket_by_length": False, "schedule": "constant",
                                  "warmup_ratio": 0.1, "warmup_rounding": "none", "select_every": 0}
    assert methods["defsent_plus"]["optimizer"] == "adamw" and methods["defsent_plus"]["schedule"] == "linear"


def test_contrastive_training_reads_dev_data_and_an_acquired_corpus(selection):
    config = tiny_config(sim={**DEFSENT_RUN, "method": "simcse"})
    config["methods"]["simcse"]["corpus_file"] = "data/wiki1m/wiki1m_for_simcse.txt"
    plan = Plan(config, selection)
    files = plan.training_files(EncoderId.candidate("sim", 1, "contrastive", 0))
    assert files["senteval"] == "data/senteval" and files["corpus"] == ["data/wiki1m"]
    assert plan.candidates("sim", 1)[0].name == "sim.step1.contrastive.seed0"


def test_a_chained_run_names_its_chain(selection):
    simcse = {**DEFSENT_RUN, "method": "simcse"}
    chained = {k: v for k, v in tiny_config()["runs"]["tiny"].items() if k != "model"} | {"start_from": "sim"}
    plan = Plan(tiny_config(sim=simcse, dp=chained), selection)
    assert plan.chain("dp") == ["tiny", "sim", "dp"]
    assert {r["run"]: r["chain"] for r in plan.sts_comparison()}["dp"] == "tiny → sim → dp"
    assert plan.training_files(EncoderId.candidate("dp", 2, "amp", 0))["base"] == \
        dag.trained_model(EncoderId.candidate("sim", 1, **SELECTED))  # every step from SimCSE's selected weights


SHIPPED_CONFIGS = sorted([REPO / "config.yaml", *(REPO / "configs").glob("*.yaml")])


@pytest.mark.parametrize("path", SHIPPED_CONFIGS, ids=lambda p: p.name)
def test_every_shipped_config_validates_and_plans(path, selection):
    plan = Plan(validated(yaml.safe_load(path.read_text())), selection)
    assert plan.targets()
    for run in plan.config["runs"]:
        assert plan.candidates(run, plan.final_step(run))


def test_only_runs_whose_method_declares_a_reverse_dictionary_plan_one_on_a_held_out_subset(selection):
    contrastive = {"model": "tiny", "dataset": "held", "training_pooling": "cls", "seeds": [0], "batch_size": 8,
                   "steps": [{"lr": 1.0e-3}]}
    config = tiny_config(sim=dict(contrastive, method="simcse"), slt=dict(contrastive, method="slt_fai"),
                         ds=dict(contrastive, method="defsent"),
                         dp={**contrastive, "method": "defsent_plus", "steps": [{"lr": 1.0e-3, "spaces": ["amp"]}]})
    config["subsets"] = {"held": {"dataset": "a", "max_entries": 5, "seed": 0, "heldout": {"dev": 0.2, "test": 0.2}}}
    plan = Plan(validated(config), selection)
    assert plan.heldout_runs() == ["ds", "dp"]
    targets = plan.targets()
    assert {dag.run_file(run, "reverse_dictionary.json") for run in ("ds", "dp")} <= set(targets)
    assert not {dag.run_file(run, "reverse_dictionary.json") for run in ("sim", "slt")} & set(targets)
    assert [record["run"] for record in plan.reverse_dictionary_comparison()] == ["ds", "dp"]


def test_auto_threads_are_half_the_given_cores_and_a_number_is_kept():
    from defsent_plus.pipeline.requests import threads_per_job

    assert [threads_per_job("auto", cores) for cores in (1, 2, 3, 16, None)] == [1, 1, 1, 8, 1]
    assert threads_per_job(3, 2) == 3


@pytest.mark.parametrize("final, scored", [("best", EncoderId.selected("tiny", 3)),
                                           ("candidates", EncoderId.candidate("tiny", 3, **SELECTED))])
def test_the_comparison_reads_the_final_model_as_its_runs_table_scored_it(selection, final, scored):
    """``evaluation.final: best`` scores the selected model itself; ``candidates`` scores each candidate, so the
    comparison reads the winning one's similarities (asking the selection) instead of scoring the model again."""
    config = tiny_config()
    config["evaluation"]["final"] = final
    plan = Plan(config, selection)
    assert scored in {row.encoder for row in plan.evaluated("tiny")}
    pooling = config["evaluation"]["poolings"][0]
    assert plan.comparison_pairs()[:2] == [dag.score_file(EncoderId.base("tiny"), "sts", pooling, "pairs.parquet"),
                                           dag.score_file(scored, "sts", pooling, "pairs.parquet")]
    assert (("tiny", 3) in selection.asked) == (final == "candidates")


def test_mteb_checks_every_model_of_the_sts_tables_once_and_only_when_enabled(selection):
    config = tiny_config()
    assert Plan(config, selection).mteb_checks() == []
    config["evaluation"]["mteb"] = {"enabled": True, "tasks": []}
    plan = Plan(config, selection)
    encoders = list(dict.fromkeys(row.encoder for run in config["runs"] for row in plan.evaluated(run)))
    assert plan.mteb_checks() == [dag.mteb_check(e, "mean") for e in encoders]
    assert set(plan.mteb_checks()) <= set(plan.targets())


def test_a_steps_candidates_are_pruned_only_after_mteb_read_the_ones_it_checks(selection):
    """With ``keep_weights: selected`` and every final candidate evaluated, MTEB's checks load the candidates'
    weights: the step's pruning waits for them; an earlier step's candidates are not checked, so not waited for."""
    config = tiny_config()
    config["selection"]["keep_weights"] = "selected"
    config["evaluation"].update(final="candidates", mteb={"enabled": True, "tasks": []})
    plan = Plan(config, selection)
    last = plan.final_step("tiny")
    assert plan.weight_readers("tiny", last)["mteb"] == [dag.mteb_check(c, "mean")
                                                          for c in plan.candidates("tiny", last)]
    assert plan.weight_readers("tiny", 1)["mteb"] == []


@pytest.mark.parametrize(("name", "message"), [("uniformty", "unknown evaluator 'uniformty'"),
                                                ("mteb", "evaluator 'mteb' writes no table")])
def test_a_table_of_an_unknown_or_tableless_evaluator_is_refused_naming_the_key(selection, name, message):
    config = tiny_config()
    config["evaluation"]["tables"] = ["sts", name]
    with pytest.raises(DefSentError, match=f"config: evaluation.tables: {message}"):
        Plan(config, selection)


def test_evaluation_tables_decide_which_run_tables_rule_all_builds(selection):
    config = tiny_config()
    assert dag.run_file("tiny", "sts.tsv") in Plan(config, selection).targets()
    config["evaluation"]["tables"] = ["sts", "senteval"]
    targets = Plan(config, selection).targets()
    assert {dag.run_file("tiny", "sts.tsv"), dag.run_file("tiny", "senteval.tsv")} <= set(targets)


def test_mteb_revisions_tell_models_and_configs_apart(selection):
    from defsent_plus.pipeline.dag import digest

    config = tiny_config()
    plan = Plan(config, selection)
    base, trained = EncoderId.base("tiny"), EncoderId.selected("tiny", 3)
    assert plan.revision_source(base) == {"model": "tiny"}
    before = digest(plan.revision_source(trained))
    config["runs"]["tiny"]["steps"][0]["lr"] = 0.5
    assert digest(Plan(config, selection).revision_source(trained)) != before
    assert digest({"b": 1, "a": [1, 2]}) == digest({"a": [1, 2], "b": 1})  # key order is no change


def test_stop_after_runs_a_chains_first_steps_with_the_jobs_of_the_whole_chain(selection):
    whole = Plan(tiny_config(), selection)
    first = Plan(tiny_config(tiny={**whole.run("tiny"), "stop_after": 1}), selection)
    assert (whole.final_step("tiny"), first.final_step("tiny")) == (3, 1)
    assert first.run("tiny")["steps"] == whole.run("tiny")["steps"][:1]
    candidate = EncoderId.candidate("tiny", 1, "amp", 0)
    assert first.training_files(candidate) == whole.training_files(candidate)
    assert any("/step1/" in target for target in first.targets())
    assert not any("/step2/" in target or "/step3/" in target for target in first.targets())


def test_stop_after_past_the_last_step_is_refused_and_digits_from_the_command_line_count():
    steps = [{"lr": 1.0e-3, "spaces": ["amp"]}] * 2
    with pytest.raises(DefSentError, match=r"runs\.tiny\.stop_after.*2 step\(s\), cannot stop after step 3"):
        tiny_config(tiny={"model": "tiny", "dataset": "a", "training_pooling": "cls", "seeds": [0],
                          "batch_size": 8, "steps": steps, "stop_after": 3})
    config = tiny_config(tiny={"model": "tiny", "dataset": "a", "training_pooling": "cls", "seeds": [0],
                               "batch_size": 8, "steps": steps, "stop_after": "1"})  # --config runs='{...}'
    assert config["runs"]["tiny"]["stop_after"] == 1 and len(config["runs"]["tiny"]["steps"]) == 1


def test_a_subset_without_max_entries_is_the_whole_dataset_to_the_cost_model():
    from defsent_plus.pipeline.requests import dataset_size

    config = tiny_config()
    config["subsets"] = {"a_all": {"dataset": "a", "heldout": {"dev": 0.02, "test": 0.02}}}
    config = validated(config)
    assert config["subsets"]["a_all"]["max_entries"] is None
    assert dataset_size(config, "a_all", {"a": (378_769, 206_546)}) == (378_769, 206_546)


def test_the_paper_scale_minilm_config_trains_all_of_dataset_a_in_three_steps_or_one(selection):
    config = yaml.safe_load((REPO / "configs" / "minilm-full.yaml").read_text())
    whole = Plan(validated(yaml.safe_load(yaml.safe_dump(config))), selection)
    (run,) = whole.config["runs"]
    subset = whole.config["subsets"][whole.run(run)["dataset"]]
    assert subset["dataset"] == "a" and subset["max_entries"] is None and subset["heldout"]
    assert whole.final_step(run) == 3 and whole.run(run)["batch_size"] == 32
    config["runs"][run]["stop_after"] = 1
    assert Plan(validated(config), selection).final_step(run) == 1


def test_every_file_a_dictionary_source_reads_is_a_rule_input(tmp_path):
    """The tiny config's Oxford splits, TSV and GCIDE files, an acquired folder by its dataset name, the WordNet
    data files of an nltk_data root; not the GCIDE of the installed package (no path)."""
    wordnet = tmp_path / "nltk_data" / "corpora" / "wordnet"
    wordnet.mkdir(parents=True)
    for name in ("data.adj", "data.adv", "data.noun", "data.verb"):
        (wordnet / name).write_text("")
    sources = [*tiny_config()["dictionary"]["sources"], {"name": "acquired", "type": "oxford", "path": "data/oxford"},
               {"name": "wn", "type": "wordnet", "path": str(tmp_path / "nltk_data")}, {"type": "gcide"}]
    inputs = dag.dictionary_inputs(sources)
    assert inputs == {
        "oxford": "data/oxford",
        "source_oxford": [str(FIXTURES / "oxford" / split) for split in ("train.txt", "valid.txt", "test.txt")],
        "source_tiny": [str(FIXTURES / "tiny" / "dictionary.tsv")],
        "source_gcide": sorted(str(file) for file in (FIXTURES / "gcide").glob("words_*.json")),
        "source_wn": [str(wordnet / name) for name in ("data.adj", "data.adv", "data.noun", "data.verb")],
    }


@pytest.mark.parametrize(("source", "message"), [
    ({"name": "mine", "type": "tsv", "path": "no/such.tsv"},
     r"^config: dictionary.sources\[1\].path: source 'mine': no/such.tsv not found \(expected a file of "
     r"entry<TAB>definition lines\)$"),
    ({"type": "defsentplus", "path": "Ox+WN.csv"}, r"sources\[1\].path: source 'defsentplus': Ox\+WN.csv not found"),
    ({"name": "ox", "type": "oxford", "path": str(FIXTURES / "tsv")},
     r"sources\[1\].path: source 'ox': .*tsv/train.txt not found \(expected a folder holding train.txt, valid.txt"),
    ({"type": "gcide", "path": "nowhere"}, r"source 'gcide': nowhere not found \(expected a folder of GCIDE"),
    ({"type": "wordnet", "path": "nowhere"},
     r"source 'wordnet': nowhere/corpora/wordnet/data.adj not found \(expected an nltk_data root holding "
     r"corpora/wordnet: set the key to one, or run `defsent-plus setup-wordnet --target <dir>`\)"),
])
def test_a_dictionary_source_that_does_not_exist_is_an_error_naming_its_key(source, message):
    with pytest.raises(DefSentError, match=message):
        dag.dictionary_inputs([{"type": "gcide"}, source])


def test_a_source_in_an_acquired_folder_is_that_folder_not_yet_there():
    assert dag.dictionary_inputs([{"type": "defsentplus", "path": "data/oxford/Ox+WN.csv"}]) == {
        "oxford": "data/oxford"}


def test_a_relative_source_of_a_module_is_looked_for_under_its_prefix(tmp_path, monkeypatch):
    (tmp_path / "defsent").mkdir()
    (tmp_path / "defsent" / "mine.tsv").write_text("cat\ta pet\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(PREFIX_VARIABLE, "defsent")
    assert dag.dictionary_inputs([{"name": "mine", "type": "tsv", "path": "mine.tsv"}]) == {
        "source_mine": ["mine.tsv"]}  # Snakemake prefixes it
    with pytest.raises(DefSentError, match=r"source 'other': defsent/other.tsv not found"):
        dag.dictionary_inputs([{"name": "other", "type": "tsv", "path": "other.tsv"}])


def test_wordnet_as_nltks_zip_is_that_zip(tmp_path):
    (tmp_path / "corpora").mkdir()
    (tmp_path / "corpora" / "wordnet.zip").write_bytes(b"")
    assert dag.dictionary_inputs([{"type": "wordnet", "path": str(tmp_path)}]) == {
        "source_wordnet": [str(tmp_path / "corpora" / "wordnet.zip")]}
