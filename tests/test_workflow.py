"""The whole DAG on the tiny config: it runs, it is complete, and a rerun is a no-op."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from workflow_utils import planned_jobs, snakemake, write_tiny_config

pytestmark = pytest.mark.workflow


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory, tiny_bert) -> Path:
    workdir = tmp_path_factory.mktemp("tiny_workflow")
    write_tiny_config(workdir, tiny_bert)
    snakemake(workdir)
    return workdir


def test_dictionary_stage_outputs(tiny_run):
    a = pd.read_parquet(tiny_run / "results/dictionary/a.parquet")
    b = pd.read_parquet(tiny_run / "results/dictionary/b.parquet")
    assert set(b["entry"]) <= set(a["entry"]) and len(a) > len(b) > 32
    stats = pd.read_csv(tiny_run / "results/dictionary/stats.tsv", sep="\t")
    assert {"dataset:a", "dataset:b", "dataset:c", "source:oxford"} <= set(stats["scope"])


def test_every_step_has_a_dev_selected_best_model(tiny_run):
    for step in (1, 2, 3):
        best = json.loads((tiny_run / f"results/tiny/step{step}/best.json").read_text())
        scores = [c["dev_score"] for c in best["candidates"]]
        assert best["best"]["dev_score"] == max(scores)
        assert (tiny_run / f"results/tiny/step{step}/best/model.safetensors").is_file()
    spaces = {c["space"] for c in json.loads((tiny_run / "results/tiny/step3/best.json").read_text())["candidates"]}
    assert spaces == {"amp", "amp.ica"}


def test_every_step_trains_from_the_base_weights_on_the_previous_steps_space(tiny_run, tiny_bert):
    for step, encoder in ((1, "tiny"), (2, "tiny.step1"), (3, "tiny.step2")):
        summary = json.loads((tiny_run / f"results/tiny/step{step}/amp/seed0/train.json").read_text())
        assert summary["base_model"] == str(tiny_bert)
        assert summary["entry_space"] == f"results/entry_spaces/{encoder}/a/amp.npy"
    meta = json.loads((tiny_run / "results/entry_spaces/tiny.step1/a/entry_space.json").read_text())
    # the dev-selected candidate's own directory (not the best/ copy), so re-selecting it re-runs nothing
    assert meta["encoder_path"] == json.loads((tiny_run / "results/tiny/step1/best.json").read_text())["best"]["model"]
    step1 = np.load(tiny_run / "results/entry_spaces/tiny/a/amp.npy")
    step2 = np.load(tiny_run / "results/entry_spaces/tiny.step1/a/amp.npy")
    assert step1.shape == step2.shape and not np.allclose(step1, step2)


def test_isotropy_and_plots_of_every_step(tiny_run):
    for encoder in ("tiny", "tiny.step1", "tiny.step2"):
        metrics = json.loads((tiny_run / f"results/entry_spaces/{encoder}/a/isotropy.json").read_text())
        assert set(metrics) == {"amp", "amp.whiten", "amp.ica"}
        assert (tiny_run / f"results/entry_spaces/{encoder}/a/plots/amp.ica.png").stat().st_size > 1000


def test_rerun_is_a_no_op(tiny_run):
    assert planned_jobs(tiny_run) == {}
