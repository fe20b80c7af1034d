"""Adding a method is one module plus one registry line: a toy method from outside the package (tests/plugins/
toy_mirror.py, registered through config ``method_plugins``) runs through the tiny DAG's train -> dev_score ->
select_best -> score -> STS tables -> comparison, with no other change to the package."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from workflow_utils import planned_jobs, snakemake, write_tiny_config

from defsent_plus.pipeline import dag
from defsent_plus.training.task import TRAINING_CARD

pytestmark = pytest.mark.workflow
PLUGINS = Path(__file__).parent / "plugins"
RUN = {"method": "mirror", "model": "tiny", "dataset": "a", "training_pooling": "mean", "seeds": [0, 1],
       "batch_size": 8, "steps": [{"lr": 1.0e-3}]}


@pytest.fixture(scope="module")
def mirror_run(tmp_path_factory, tiny_bert) -> Iterator[Path]:
    """The finished tiny DAG of a run of the toy method; the plugin's folder is on the PYTHONPATH of every
    Snakemake started meanwhile (as a user's own package would be installed)."""
    workdir = tmp_path_factory.mktemp("toy_method")
    write_tiny_config(workdir, tiny_bert, method_plugins=["toy_mirror"], runs={"mirror": RUN},
                      methods={"mirror": {"temperature": 0.05}})
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PLUGINS), before]))
    try:
        snakemake(workdir)
        yield workdir
    finally:
        if before is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = before


def test_the_toy_method_trains_its_candidates_with_its_own_objective_and_options(mirror_run):
    for seed in (0, 1):
        summary = json.loads((mirror_run / dag.candidate_file("mirror", 1, "mirror", seed, "train.json")).read_text())
        assert summary["method"] == "mirror" and summary["classes"] == 8
        assert summary["deviations"] and summary["config"]["max_length"] == 32  # the declared default
        card = json.loads((mirror_run / dag.candidate_file("mirror", 1, "mirror", seed, "model") / TRAINING_CARD)
                          .read_text())
        assert card["paper"].startswith("toy: Mirror-BERT")
    log = (mirror_run / dag.log_file("mirror", "step1", "mirror", "seed0", "train")).read_text()
    assert "'mirror_nce'" in log


def test_its_models_are_selected_scored_and_compared_like_every_methods(mirror_run):
    best = json.loads((mirror_run / dag.best_json("mirror", 1)).read_text())
    assert [c["seed"] for c in best["candidates"]] == [0, 1] and best["best"]["space"] == "mirror"
    sts = pd.read_csv(mirror_run / dag.run_file("mirror", "sts.tsv"), sep="\t")
    assert len(sts) == 3  # the starting model and both seeds
    compare = pd.read_csv(mirror_run / dag.compare_file("sts.tsv"), sep="\t")
    assert "mirror, dev-selected" in set(compare["model"]) and "tiny → mirror" in set(compare["chain"].dropna())
    assert not (mirror_run / dag.run_file("mirror", "reverse_dictionary.json")).exists()  # it declares none


def test_its_options_are_checked_against_its_declaration(mirror_run):
    config = mirror_run / "config.yaml"
    original = config.read_text()
    config.write_text(original.replace("temperature: 0.05", "temperature: -1"))
    try:
        result = snakemake(mirror_run, "--dry-run", check=False)
    finally:
        config.write_text(original)
    assert result.returncode != 0 and "config: methods.mirror.temperature" in result.stdout + result.stderr


def test_a_changed_option_of_the_toy_method_retrains_only_it(mirror_run):
    config = mirror_run / "config.yaml"
    original = config.read_text()
    config.write_text(original.replace("temperature: 0.05", "temperature: 0.1"))
    try:
        jobs = planned_jobs(mirror_run)
    finally:
        config.write_text(original)
    assert jobs["train"] == 2 and "dictionary" not in jobs
