"""DefSent beside DefSent+ in one DAG on the tiny config: DefSent's candidates, its head, its reverse-dictionary
protocol, and the tables comparing every run. The runs (``workflow_utils.DEFSENT_RUNS``) are part of the session's
``methods_run`` DAG."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from safetensors import safe_open

from defsent_plus.methods.defsent.objective import HEAD_FILE
from defsent_plus.names import TRAINING_CARD
from defsent_plus.pipeline import dag

pytestmark = pytest.mark.workflow


def test_defsent_candidates_predict_the_vocabulary_and_keep_their_head(methods_run):
    for seed in (0, 1):
        model = methods_run / dag.candidate_file("ds", 1, "vocab", seed, "model")
        card = json.loads((model / TRAINING_CARD).read_text())
        assert card["method"] == "defsent" and card["entry_space"] is None and card["pooling"] == "max"
        assert card["head"]["head"] == "initialised" and card["head"]["seed"] == seed  # tiny_bert has no MLM head
        with safe_open(str(model / HEAD_FILE), framework="pt") as head:
            assert any(key.startswith("cls.predictions.transform") for key in head.keys())
    summary = json.loads((methods_run / dag.candidate_file("ds", 1, "vocab", 0, "train.json")).read_text())
    assert summary["config"]["optimizer"] == "adam" and summary["config"]["schedule"] == "constant"
    assert summary["config"]["warmup_ratio"] == 0.1 and summary["config"]["max_grad_norm"] is None
    steps = pd.read_csv(methods_run / dag.run_file("ds", "steps.tsv"), sep="\t")
    assert set(steps["space"]) == {"vocab"} and (steps["classes"] == summary["classes"]).all()
    assert steps["fitted"].notna().all()


def test_defsent_reverse_dictionary_ranks_the_vocabulary_for_every_split(methods_run):
    result = json.loads((methods_run / dag.run_file("ds", "reverse_dictionary.json")).read_text())
    assert result["method"] == "defsent"
    trained = result["trained"]
    assert set(trained["all_definitions"]) == {"train", "dev", "test"}
    assert set(trained["heldout_queries"]) == {"dev", "test"}
    for metrics in trained["all_definitions"].values():
        assert 0 < metrics["mrr_at_10"] <= metrics["mrr"] <= 1
    assert trained["all_definitions"]["dev"]["queries"] > trained["heldout_queries"]["dev"]["queries"]


def test_comparison_tables_show_every_method(methods_run):
    sts = pd.read_csv(methods_run / dag.compare_file("sts.tsv"), sep="\t")
    assert sts["model"].str.startswith("base").sum() == 1  # the shared starting model once
    assert {"ds, dev-selected", "dp, dev-selected"} <= set(sts["model"])  # the page's one label per model
    assert "ds (step 1 vocab), mean ± std" in set(sts["model"])
    rd = pd.read_csv(methods_run / dag.compare_file("reverse_dictionary.tsv"), sep="\t")
    assert set(rd["method"]) == {"defsent", "defsent_plus"}
    assert set(rd[rd["method"] == "defsent"]["protocol"]) == {"all_definitions", "heldout_queries", "cosine"}
    assert set(rd[rd["method"] == "defsent_plus"]["protocol"]) == {"heldout_queries", "cosine"}
    cosine = rd[rd["protocol"] == "cosine"]
    assert set(zip(cosine["run"], cosine["model"], strict=True)) == {(run, model) for run in ("ds", "dp")
                                                                    for model in ("trained", "base")}
    # like for like: both runs' base rows are the same model on the same queries against the same space
    base = cosine[cosine["model"] == "base"].set_index(["run", "split"])["mrr"]
    assert base["ds"].to_dict() == base["dp"].to_dict()
    assert (cosine["mrr_low"] <= cosine["mrr"]).all() and (cosine["mrr"] <= cosine["mrr_high"]).all()
    header = (methods_run / dag.compare_file("reverse_dictionary.md")).read_text()
    assert "DefSent:" in header and "DefSent+:" in header and "Trained − base on the same queries" in header
    assert "DefSent+ base rows: a starting model has no pooler" in header and "Chance level" in header


def test_the_sts_comparison_tests_every_run_against_its_start_and_the_others(methods_run):
    text = (methods_run / dag.compare_file("sts.md")).read_text()
    first_cells = [line.split("|")[1].strip() for line in text[text.index("## Uncertainty"):].splitlines()
                   if line.startswith("| ")]
    assert {"ds − its start (tiny)", "ds − dp", "ds, dev-selected", "dp, dev-selected"} <= set(first_cells)
    assert any(cell.startswith("sim_dp − its start (sim") for cell in first_cells)
