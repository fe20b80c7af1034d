"""The baselines stage on the tiny config: a grid for the base model, post-processing for a trained step's model,
and what re-runs when the grid changes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from workflow_utils import copy_run, planned_jobs, snakemake, validated, write_tiny_config

from defsent_plus.baselines.spec import combinations
from defsent_plus.evaluation.sts import STS_TASKS
from defsent_plus.pipeline import dag

pytestmark = pytest.mark.workflow
TRAINED = "tiny.step1"  # the tiny run's dev-selected step-1 model
GRIDS = {
    "full": {"templates": ["none", "T0", "T2"], "layers": [["last"], [-1, 0]], "layer_sweep": ["cls", "mean", "mask"],
             "aggregations": ["cls", "mean", "mean_nospecial", "max", "idf", "idf_task", "biases", "mask"],
             "sources": ["encoder", "avg", "encoder+avg", "random"],
             "postprocess": ["none", "zscore", "quantile", "abtt1", "zscore+l2"], "fit": ["corpus", "eval"]},
    "post": {"postprocess": ["none", "whiten", "center+l2"]},
}
BASELINES = {"encoders": {"tiny": "full", TRAINED: "post"}, "grids": GRIDS,
             "fit_corpus": {"dataset": "a", "max_sentences": 60, "seed": 0},
             "alignment": {"min_score": 5.0, "uniformity_sentences": 20, "seed": 0},
             "isotropy": {"n_pairs": 500}, "batch_size": 16, "max_length": 32}
TARGETS = [dag.baselines_file(encoder, name) for encoder in ("tiny", TRAINED)
           for name in ("scores.tsv", "summary.md", "layers.png")]


@pytest.fixture(scope="module")
def baselines_run(tmp_path_factory, tiny_run, tiny_bert, warm_python) -> Path:
    """The baselines stage added to a copy of the session's finished tiny DAG (its models, data and scores are
    reused; these tests change the copy's config and outputs)."""
    workdir = copy_run(tiny_run, tmp_path_factory.mktemp("baselines_workflow") / "run")
    write_tiny_config(workdir, tiny_bert, baselines=BASELINES)
    snakemake(workdir, *TARGETS, dag.score_file(TRAINED, "sts", "mean"), python=warm_python)
    return workdir


def scores(workdir: Path, encoder: str) -> pd.DataFrame:
    return pd.read_csv(workdir / dag.baselines_file(encoder, "scores.tsv"), sep="\t")


def test_every_combination_of_the_grid_is_scored_once(baselines_run):
    config = validated(yaml.safe_load((baselines_run / "config.yaml").read_text()))
    expected = combinations(config["baselines"]["grids"]["full"], 2, {}, "k")
    table = scores(baselines_run, "tiny")
    assert len(table) == len(expected)
    settings = ["source", "template", "layers", "aggregation", "postprocess", "fit"]
    assert not table.duplicated(settings).any()
    assert np.isfinite(table[[*STS_TASKS, "avg", "isoscore", "mean_cosine"]].to_numpy()).all()
    assert table["transductive"].equals((table["aggregation"] == "idf_task") | (table["fit"] == "eval"))
    inductive = table[table["aggregation"] != "idf_task"]
    assert np.isfinite(inductive[["alignment", "uniformity"]].to_numpy()).all()
    assert table.loc[table["aggregation"] == "idf_task", ["alignment", "dev"]].isna().all().all()
    assert np.isfinite(inductive["dev"]).all()
    assert set(table["layers"]) >= {"static", "L0", "L1", "L2", "static+L0", "-"}
    assert (table["fit_corpus"].str.startswith("60 sentences")).all()


def test_sources_and_post_processing_change_the_embeddings(baselines_run):
    table = scores(baselines_run, "tiny").set_index(["source", "template", "layers", "aggregation", "postprocess",
                                                     "fit"])
    encoder = table.loc[("encoder", "none", "L2", "mean", "none", "-"), "avg"]
    avg = table.loc[("avg", "none", "L2", "mean", "none", "-"), "avg"]
    both = table.loc[("encoder+avg", "none", "L2", "mean", "none", "-"), "avg"]
    assert len({encoder, avg, both}) == 3
    assert table.loc[("encoder", "none", "L2", "mean", "zscore+l2", "corpus"), "avg"] != encoder
    # cosine ignores the L2 step: zscore and zscore+l2 rank the pairs alike (up to rounding among tied cosines, e.g.
    # of identical sentences)
    assert table.loc[("encoder", "none", "L2", "mean", "zscore+l2", "corpus"), "avg"] == pytest.approx(
        table.loc[("encoder", "none", "L2", "mean", "zscore", "corpus"), "avg"], abs=0.05)
    static = table.loc[("encoder", "none", "static", "mean", "none", "-"), "avg"]
    assert static != encoder  # layer -1 is the input embedding rows, not the last layer


def test_a_trained_steps_model_gets_post_processing_on_the_same_evaluator(baselines_run):
    table = scores(baselines_run, TRAINED)
    assert list(table["postprocess"]) == ["none", "whiten", "center+l2"]
    whitened = table[table["postprocess"] == "whiten"]
    assert whitened["isoscore"].iloc[0] == pytest.approx(1.0, abs=1e-6)  # whitened fit corpus: isotropic
    regular = json.loads((baselines_run / dag.score_file(TRAINED, "sts", "mean")).read_text())["scores"]
    plain = table[table["postprocess"] == "none"].iloc[0]  # the last layer's mean: the regular evaluator's pooling
    for task in (*STS_TASKS, "avg"):  # batches differ, so float32 rounding may reorder near-tied cosines
        assert plain[task] == pytest.approx(regular[task], abs=0.1), task


def test_the_base_models_sts_vectors_are_read_from_its_baselines_pass(baselines_run):
    """With tiny in the baselines, its embed job for the STS set re-plans (its params name the cache) and reads the
    cache: the same vectors, bit for bit, as the forward pass of the session's tiny run."""
    target = dag.embedding_file("tiny", "sts", "mean")
    encoded = np.load(baselines_run / target)
    dry = snakemake(baselines_run, "--dry-run", target).stdout
    cache = dag.baseline_cache("tiny", "none")
    assert planned_inputs(dry, "embed") == [f"{dag.pinned_model('tiny')}, {dag.data_dir('senteval')}, {cache}"]
    snakemake(baselines_run, target)
    np.testing.assert_array_equal(np.load(baselines_run / target), encoded)
    record = json.loads((baselines_run / dag.embedding_file("tiny", "sts", "mean", "json")).read_text())
    assert record["source"] == f"{cache}/L2/encoder.mean.eval.npy"


def planned_inputs(output: str, rule: str) -> list[str]:
    lines, current = [], None
    for line in output.splitlines():
        if line.startswith(("rule ", "localrule ")):
            current = line.split()[1].rstrip(":")
        elif line.strip().startswith("input:") and current == rule:
            lines.append(line.split("input:", 1)[1].strip())
    return lines


def test_reports_and_cache(baselines_run):
    summary = (baselines_run / dag.baselines_file("tiny", "summary.md")).read_text()
    assert "## Selected on STS-B dev" in summary and "aggregation x post-processing" in summary
    assert "transductive" in summary
    assert (baselines_run / dag.baselines_file("tiny", "layers.png")).stat().st_size > 1000
    index = json.loads((baselines_run / dag.baseline_cache("tiny", "T2") / "index.json").read_text())
    assert index["main_layers"] == ["L2", "static+L0"] and index["n_layers"] == 2
    assert (baselines_run / dag.fit_corpus_file()).read_text().count("\n") == 60


@contextmanager
def edited(workdir: Path, change) -> Iterator[None]:
    """config.yaml with ``change`` applied to its baselines block, restored afterwards."""
    path = workdir / "config.yaml"
    original = path.read_text()
    config = yaml.safe_load(original)
    change(config["baselines"])
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    try:
        yield
    finally:
        path.write_text(original)


def test_a_new_post_processor_rescores_without_a_forward_pass(baselines_run):
    with edited(baselines_run, lambda b: b["grids"]["full"]["postprocess"].append("center")):
        jobs = planned_jobs(baselines_run, "--", *TARGETS)  # "--": the targets are not --quiet choices
    assert jobs == {"baseline_grid": 1}


def test_a_new_aggregation_reencodes_only_that_grids_templates(baselines_run):
    with edited(baselines_run, lambda b: b["grids"]["post"].setdefault("aggregations", ["mean"]).append("max")):
        jobs = planned_jobs(baselines_run, "--", *TARGETS)  # "--": the targets are not --quiet choices
    assert jobs == {"baseline_embed": 1, "baseline_grid": 1}  # tiny.step1's one template; the trained model stays


def test_random_vector_options_reencode_only_the_template_that_uses_them(baselines_run):
    with edited(baselines_run, lambda b: b.setdefault("random", {}).update(std=0.2)):
        jobs = planned_jobs(baselines_run, "--", *TARGETS)
    assert jobs == {"baseline_embed": 1, "baseline_grid": 1}  # tiny's template none; T0, T2 and tiny.step1 stay


def test_bad_baselines_config_names_the_key(baselines_run):  # last: its failed job removes tiny.step1's cache
    def bad_layer(b):
        b["grids"]["post"]["layers"] = [[3]]

    with edited(baselines_run, bad_layer):
        result = snakemake(baselines_run, *TARGETS, check=False)
    assert result.returncode != 0
    assert "config: baselines.grids.post.layers[0][0]" in result.stdout + result.stderr
    assert "unknown layer 3 for a model with 2 layers" in result.stdout + result.stderr

    def unknown_encoder(b):
        b["encoders"]["tiny.step4"] = "post"  # the tiny run has 3 steps

    with edited(baselines_run, unknown_encoder):
        result = snakemake(baselines_run, "-n", check=False)
    assert result.returncode != 0 and "config: baselines.encoders.tiny.step4" in result.stdout + result.stderr

