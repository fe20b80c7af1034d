"""The contrastive chain on the tiny config: SimCSE and SLT-FAI as runs, DefSent+ started from SimCSE's selected
model, in-training STS-B dev selection and the chain in the comparison table. The runs
(``workflow_utils.CONTRASTIVE_RUNS``) are part of the session's ``methods_run`` DAG."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from defsent_plus.names import TRAINING_CARD
from defsent_plus.pipeline import dag
from defsent_plus.pipeline.dag import EncoderId

pytestmark = pytest.mark.workflow


def read(workdir: Path, path: str) -> dict:
    return json.loads((workdir / path).read_text())


def test_simcse_keeps_the_weights_of_its_best_dev_score(methods_run):
    summary = read(methods_run, dag.candidate_file("sim", 1, "contrastive", 0, "train.json"))
    selection = summary["selection"]
    steps = summary["steps"]
    assert [step for step, _ in selection["curve"]] == [*range(4, steps + 1, 4), *([steps] if steps % 4 else [])]
    assert selection["best_dev"] == max(score for _, score in selection["curve"])
    assert summary["temperature"] == 0.05 and summary["views"] == ["none", "dropout"]
    assert summary["classes"] == 8 and summary["config"]["select_every"] == 4  # InfoNCE over the batch of 8


def test_slt_fai_logs_each_sub_loss_and_its_frequency_labels(methods_run):
    log = (methods_run / dag.log_file("slt_c", "step1", "contrastive", "seed0", "train")).read_text()
    for part in ("'usrl'", "'adversarial'", "'incomplete'", "'nt_xent'"):
        assert part in log
    card = read(methods_run, dag.candidate_file("slt_c", 1, "contrastive", 0, "model") + "/" + TRAINING_CARD)
    assert card["method"] == "slt_fai" and card["low_frequency_types"] > 0


def test_defsent_plus_trains_from_the_contrastive_models_weights(methods_run):
    best = read(methods_run, dag.best_json("sim", 1))["best"]
    card = read(methods_run, dag.candidate_file("sim_dp", 1, "amp", 0, "model") + "/" + TRAINING_CARD)
    assert card["base_model"] == best["model"] == dag.trained_model(EncoderId.candidate("sim", 1, "contrastive", 0))
    space = read(methods_run, dag.space_meta(EncoderId.selected("sim", 1), "a"))
    assert space["encoder"] == "sim.step1"  # step 1's entry space is built by SimCSE's selected model
    sts = pd.read_csv(methods_run / dag.compare_file("sts.tsv"), sep="\t")
    assert "tiny → sim → sim_dp" in set(sts["chain"].dropna())


def test_consert_slt_fai_trains_as_its_variant_and_every_table_marks_it_transductive(methods_run):
    summary = read(methods_run, dag.candidate_file("slt_c", 1, "contrastive", 0, "train.json"))
    card = read(methods_run, dag.candidate_file("slt_c", 1, "contrastive", 0, "model") + "/" + TRAINING_CARD)
    assert card["variant"] == "consert" and card["transductive"] and card["corpus"] == "stssick"
    assert card["views"] == ["feature_cutoff", "token_shuffle"] and card["dropout"] is False
    assert summary["config"]["epochs"] == 2 and summary["config"]["optimizer"] == "adamw_uncorrected"
    assert summary["steps"] > 5  # two epochs of 40 sentences in batches of 8, unless it stopped early
    assert any(d.startswith("epochs 2 where the consert variant") for d in card["deviations"])
    assert any(d.startswith("lr 0.001 where the consert variant") for d in card["deviations"])
    log = (methods_run / dag.log_file("slt_c", "step1", "contrastive", "seed0", "train")).read_text()
    assert "'nt_xent'" in log and "epoch 2 " in log
    assert "transductive" in (methods_run / dag.run_file("slt_c", "sts.md")).read_text()
    compare = (methods_run / dag.compare_file("sts.md")).read_text()
    sts = pd.read_csv(methods_run / dag.compare_file("sts.tsv"), sep="\t")
    methods = dict(zip(sts["model"], sts["method"], strict=True))
    assert methods["slt_c, dev-selected"] == "slt_fai †" and "† transductive" in compare
    assert methods["sim, dev-selected"] == "simcse"  # an inductive run is not marked
