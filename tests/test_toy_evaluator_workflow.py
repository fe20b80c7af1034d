"""Adding an evaluator is one module plus one registry line: a toy evaluator from outside the package (tests/plugins/
toy_uniformity.py, registered through config ``evaluator_plugins``) scores the stored embeddings of a finished DAG
and writes its run table through the workflow's own rules (score_unpaired -> score_table), with no other change to
the package, and ``evaluation.tables`` puts its table into ``rule all`` without a forward pass or a retraining."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from workflow_utils import PLUGINS, copy_run, planned_jobs, snakemake

from defsent_plus.evaluation.embeddings import sentences_of_set
from defsent_plus.io import read_json, read_npy
from defsent_plus.pipeline import dag

pytestmark = pytest.mark.workflow


@pytest.fixture
def methods_copy(methods_run, tmp_path) -> Path:
    return copy_run(methods_run, tmp_path / "run")


def test_the_toy_evaluator_scores_stored_vectors_writes_its_table_and_joins_rule_all(methods_copy, monkeypatch):
    monkeypatch.syspath_prepend(str(PLUGINS))
    import toy_uniformity

    target = dag.run_file("mirror", "uniformity.tsv")
    result = snakemake(methods_copy, target, pythonpath=[PLUGINS])
    assert "rule embed" not in result.stdout + result.stderr  # it reads the stored STS vectors
    table = pd.read_csv(methods_copy / target, sep="\t")
    assert len(table) == 3 and (table["avg"] < 0).all()  # the starting model and both seeds; log E exp(-t d²) < 0
    assert (methods_copy / dag.run_file("mirror", "uniformity_by_step.png")).stat().st_size > 0
    assert "Uniformity of the STS sentences" in (methods_copy / dag.run_file("mirror", "uniformity.md")).read_text()
    start = json.loads((methods_copy / dag.score_file("tiny", "uniformity", "mean")).read_text())
    assert start["benchmark"] == "uniformity" and start["t"] == 2.0
    assert not (methods_copy / dag.score_file("tiny", "uniformity", "mean", "pairs.parquet")).exists()  # unpaired
    record = read_json(methods_copy / dag.embedding_file("tiny", "sts", "mean", "json"))
    vectors = read_npy(methods_copy / dag.embedding_file("tiny", "sts", "mean"))
    config_file = methods_copy / "config.yaml"
    config = yaml.safe_load(config_file.read_text())
    senteval = config["data"]["senteval"]["mirror"]
    by_sentence = dict(zip(sentences_of_set("sts", senteval), vectors, strict=True))
    assert record["sentences"] == len(by_sentence)
    sentences = toy_uniformity.task_sentences(senteval, "STS12")
    expected = toy_uniformity.uniformity_of(np.stack([by_sentence[s] for s in sentences]), 2.0)
    assert start["scores"]["STS12"] == pytest.approx(expected, abs=1e-12)

    # evaluation.tables puts its table of every run into rule all, without encoding or training again
    config["evaluation"]["tables"] = ["sts", "uniformity"]
    config_file.write_text(yaml.safe_dump(config, sort_keys=False))
    jobs = planned_jobs(methods_copy, pythonpath=[PLUGINS])
    assert jobs["score_table"] == len(config["runs"]) - 1  # the mirror run's is built already
    assert jobs["score_unpaired"] >= len(config["runs"]) - 1
    assert not {"embed", "train", "score", "dev_score"} & set(jobs)
