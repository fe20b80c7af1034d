"""What a train job asks its scheduler for: its run's projected work, with a margin; a user's smaller request is
flagged before anything runs."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
import yaml
from conftest import FIXTURES, REPO
from workflow_utils import snakemake, validated, write_tiny_config

from defsent_plus.methods.simcse import STSSICK_SENTENCES
from defsent_plus.pipeline.model_architectures import architecture_names, architecture_of
from defsent_plus.pipeline.plan import Plan
from defsent_plus.pipeline.requests import (
    Gpu,
    embedding_parameters,
    layer_parameters,
    train_flops,
    training_examples,
    training_request,
)
from defsent_plus.rehearsal import models as building

PAPER_CONFIG = REPO / "configs" / "bert-large.yaml"


def plan_and_config(path: Path) -> tuple[Plan, dict]:
    config = validated(yaml.safe_load(path.read_text()))
    return Plan(config, selection=lambda run, step: {}), config


@pytest.mark.parametrize("name", architecture_names())
def test_the_closed_form_parameter_count_is_the_models_own(name):
    architecture = architecture_of(name)
    count = layer_parameters(architecture.config) + embedding_parameters(architecture.config)
    assert count == building.parameter_count(architecture)


def test_the_stssick_corpus_size_is_the_local_datas(senteval_dir):
    from defsent_plus.training.corpus import stssick_sentences

    assert len(stssick_sentences(senteval_dir)) == STSSICK_SENTENCES


def test_a_contrastive_runs_examples_are_its_corpus_sample_not_its_whole_corpus():
    """contrastive-minilm trains SimCSE, SLT-FAI and ConSERT + SLT-FAI each on a 5,000-sentence sample
    (``max_sentences``): the projection counted every definition of a5k and all 79,192 stssick sentences (its
    ConSERT run projected 7.3 times its measured seconds)."""
    plan, config = plan_and_config(REPO / "configs" / "contrastive-minilm.yaml")
    for run in ("simcse", "slt_fai", "slt_fai_consert"):
        options = plan.method(run).resolved_options(plan.method_options(run))
        assert options["max_sentences"] == 5000
        assert training_examples(config, run, plan.method(run), options) == (5000, 1)
    whole, method = {**options, "max_sentences": None}, plan.method("slt_fai_consert")
    assert training_examples(config, "slt_fai_consert", method, whole) == (STSSICK_SENTENCES, 1)
    assert training_examples(config, "slt_fai_consert", method, {**whole, "max_sentences": 10 ** 6}) == (
        STSSICK_SENTENCES, 1)


def test_a_train_request_grows_with_the_work_and_the_model_and_keeps_its_margin():
    plan, config = plan_and_config(PAPER_CONFIG)
    run = next(iter(config["runs"]))
    large = training_request(config, plan, run, on_gpu=False)
    fewer = copy.deepcopy(config)
    fewer["subsets"] = {"a10k": {"dataset": "a", "max_entries": 10_000, "seed": 0}}
    fewer["runs"][run]["dataset"] = "a10k"
    small = training_request(fewer, Plan(fewer, selection=lambda run, step: {}), run, on_gpu=False)
    assert small.steps < large.steps and small.runtime < large.runtime
    assert large.runtime >= config["costs"]["margin"] * large.seconds / 60
    base = copy.deepcopy(config)
    base["models"] = {name: "hub:bert-base-uncased" for name in config["models"]}
    smaller_model = training_request(base, Plan(base, selection=lambda run, step: {}), run, on_gpu=False)
    assert smaller_model.mem_mb < large.mem_mb and smaller_model.seconds < large.seconds
    on_gpu = training_request(config, plan, run, on_gpu=True)
    assert on_gpu.seconds < large.seconds and on_gpu.runtime >= config["costs"]["min_runtime_minutes"]


def resources_of_train_jobs(output: str) -> list[dict]:
    jobs, current = [], None
    for line in output.splitlines():
        if re.match(r"^(?:local)?(?:rule|checkpoint) \w+:$", line):
            current = line.strip().split()[-1].rstrip(":")
        elif current == "train" and line.strip().startswith("resources:"):
            jobs.append(dict(part.split("=", 1) for part in line.strip().removeprefix("resources: ").split(", ")))
    return jobs


def test_the_train_rule_asks_for_its_projection_and_flags_a_smaller_user_request(tmp_path, tiny_bert):
    write_tiny_config(tmp_path, tiny_bert)
    config = validated(yaml.safe_load((tmp_path / "config.yaml").read_text()))
    request = training_request(config, Plan(config, selection=lambda run, step: {}), "tiny", on_gpu=False)
    result = snakemake(tmp_path, "--dry-run")
    jobs = resources_of_train_jobs(result.stdout)
    assert jobs and {(int(j["runtime"]), int(j["mem_mb"])) for j in jobs} == {(request.runtime, request.mem_mb)}
    assert "Request too small" not in result.stdout + result.stderr
    result = snakemake(tmp_path, "--dry-run", "--set-resources", "train:runtime=1")
    assert "Request too small: rule train: runtime=1 is below the projection" in result.stdout + result.stderr


def test_a_model_of_unknown_architecture_asks_for_the_rules_fixed_request():
    from defsent_plus.pipeline.requests import UNKNOWN_MODEL_REQUEST

    plan, config = plan_and_config(PAPER_CONFIG)
    config["models"] = {name: "hub:someone/a-model-without-a-shipped-architecture" for name in config["models"]}
    request = training_request(config, Plan(config, selection=lambda run, step: {}), next(iter(config["runs"])),
                               on_gpu=True)
    assert (request.runtime, request.mem_mb) == (UNKNOWN_MODEL_REQUEST["runtime"], UNKNOWN_MODEL_REQUEST["mem_mb"])


def test_the_gpu_defaults_reproduce_the_measured_h200_rows():
    """config costs.gpu's defaults come from bench/gpu_throughput.py on an H200 (its output: tests/fixtures/gpu/;
    docs/results.md): the cost model with them gives each measured BERT-base row, and BERT-large's training step,
    within 3%."""
    schema = yaml.safe_load((REPO / "workflow" / "schemas" / "config.schema.yaml").read_text())
    defaults = {k: v["default"] for k, v in schema["properties"]["costs"]["properties"]["gpu"]["properties"].items()}
    gpu = Gpu(**defaults)
    for shape in ("bert-base", "bert-large"):
        rows = {r["what"]: r for r in json.loads((FIXTURES / "gpu" / f"2026-11-26-h200-{shape}.json")
                                                  .read_text())["rows"]}
        architecture = architecture_of(f"{shape}-uncased")
        layers, hidden = architecture.config["num_hidden_layers"], architecture.config["hidden_size"]
        training = rows["training"]
        step = gpu.seconds(train_flops(architecture, 32, 206_546, training["mean_tokens"]), 1, layers)
        assert step * 1000 == pytest.approx(training["ms_per_step"], rel=0.03), shape
        if shape == "bert-base":
            definitions = 378_769
            flops = definitions * 2.0 * layer_parameters(architecture.config) * training["mean_tokens"]
            assert gpu.seconds(flops, 0, layers) == pytest.approx(rows["entry space"]["seconds"], rel=0.03)
            ica = rows["ica"]["steps"] * 4.0 * hidden * hidden * 206_546
            assert gpu.ica_seconds(ica) == pytest.approx(rows["ica"]["seconds"], rel=0.03)


def test_the_cost_model_asks_a_methods_declaration_not_its_name_or_options():
    """A method's cost facts are its declaration's (TrainingCosts): a SimCSE run costed with a declaration that
    says otherwise follows the declaration, whatever the method's name and its options say."""
    from dataclasses import replace

    from defsent_plus.methods.base import VOCABULARY, TrainingCosts
    from defsent_plus.pipeline.model_architectures import model_architecture
    from defsent_plus.pipeline.requests import model_of_run, output_classes
    from defsent_plus.rehearsal.estimate import saved_weights_bytes

    plan, config = plan_and_config(REPO / "configs" / "contrastive-minilm.yaml")
    simcse = plan.method("simcse")
    options = simcse.resolved_options(plan.method_options("simcse"))
    architecture = model_architecture(config["models"][model_of_run(config, "simcse")])
    declared = replace(simcse, costs=TrainingCosts(classes=VOCABULARY, sentences=lambda options, definitions: 1234.0,
                                                   saves_masked_lm_head=True))
    assert output_classes(config, "simcse", simcse, architecture) == 0  # in-batch contrast
    assert output_classes(config, "simcse", declared, architecture) == architecture.config["vocab_size"]
    assert training_examples(config, "simcse", declared, options) == (1234.0, 1)
    bert = architecture_of("bert-base-uncased")  # MiniLM's package has no masked-LM head
    assert saved_weights_bytes(bert, declared) > saved_weights_bytes(bert, simcse)  # with the head
    assert simcse.dev_scorings_every(options) == options["select_every"] > 0
    assert replace(simcse, dev_in_training=False).dev_scorings_every(options) == 0
