"""Adding a method is one module plus one registry line: a toy method from outside the package (tests/plugins/
toy_mirror.py, registered through config ``method_plugins``) runs through the tiny DAG's train -> dev_score ->
select_best -> score -> STS tables -> comparison, with no other change to the package. Its run
(``workflow_utils.MIRROR_RUN``) is part of the session's ``methods_run`` DAG, whose every job had the plugin's folder
on its PYTHONPATH (as a user's own package would be installed)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from workflow_utils import PLUGINS, copy_run, planned_jobs, snakemake

from defsent_plus.names import TRAINING_CARD
from defsent_plus.pipeline import dag

pytestmark = pytest.mark.workflow


@pytest.fixture
def methods_copy(methods_run, tmp_path) -> Path:
    """A copy of the methods DAG for a test that edits its config."""
    return copy_run(methods_run, tmp_path / "run")


def test_the_toy_method_trains_its_candidates_with_its_own_objective_and_options(methods_run):
    for seed in (0, 1):
        summary = json.loads((methods_run / dag.candidate_file("mirror", 1, "mirror", seed, "train.json")).read_text())
        assert summary["method"] == "mirror" and summary["classes"] == 8
        assert summary["deviations"] and summary["config"]["max_length"] == 32  # the declared default
        card = json.loads((methods_run / dag.candidate_file("mirror", 1, "mirror", seed, "model") / TRAINING_CARD)
                          .read_text())
        assert card["paper"].startswith("toy: Mirror-BERT")
    log = (methods_run / dag.log_file("mirror", "step1", "mirror", "seed0", "train")).read_text()
    assert "'mirror_nce'" in log


def test_its_models_are_selected_scored_and_compared_like_every_methods(methods_run):
    best = json.loads((methods_run / dag.best_json("mirror", 1)).read_text())
    assert [c["seed"] for c in best["candidates"]] == [0, 1] and best["best"]["space"] == "mirror"
    sts = pd.read_csv(methods_run / dag.run_file("mirror", "sts.tsv"), sep="\t")
    assert len(sts) == 3  # the starting model and both seeds
    compare = pd.read_csv(methods_run / dag.compare_file("sts.tsv"), sep="\t")
    assert "mirror, dev-selected" in set(compare["model"]) and "tiny → mirror" in set(compare["chain"].dropna())
    assert not (methods_run / dag.run_file("mirror", "reverse_dictionary.json")).exists()  # it declares none


def test_its_options_are_checked_against_its_declaration(methods_copy):
    config = methods_copy / "config.yaml"
    config.write_text(config.read_text().replace("temperature: 0.05", "temperature: -1"))
    result = snakemake(methods_copy, "--dry-run", check=False, pythonpath=[PLUGINS])
    assert result.returncode != 0 and "config: methods.mirror.temperature" in result.stdout + result.stderr


def test_a_changed_option_of_the_toy_method_retrains_only_it(methods_copy):
    config = methods_copy / "config.yaml"
    config.write_text(config.read_text().replace("temperature: 0.05", "temperature: 0.1"))
    jobs = planned_jobs(methods_copy, pythonpath=[PLUGINS])
    assert jobs["train"] == 2 and "dictionary" not in jobs
