"""Every shipped config (configs/*.yaml and config.yaml) executes end to end at tiny size: one config of each class
(defsent_plus.rehearsal.classes: equal up to names, model sizes, learning rates and published numbers) runs its
whole tiny rehearsal DAG; the others of its class plan the same jobs rule by rule.

The DAGs' script jobs start from the warm interpreter (tests/warm_python.py); defsent-roberta-base's DAG is
conftest's ``tiny_rehearsal``, whose train and entry space jobs start fresh ones for its cost sheet.
``bash bin/test -m shipped_configs`` runs these tests alone.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml
from conftest import REPO
from workflow_utils import planned_jobs, snakemake

from defsent_plus import banner
from defsent_plus.rehearsal.classes import shape_classes, tiny_shape

SHIPPED = [*sorted((REPO / "configs").glob("*.yaml")), REPO / "config.yaml"]
CLASSES = shape_classes(SHIPPED)


def read(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def test_the_base_and_large_paper_configs_share_a_class_and_each_other_config_is_its_own():
    named = sorted(sorted(p.stem for p in members) for members in CLASSES if len(members) > 1)
    assert named == [["bert-base", "bert-large"], ["defsent-bert-base", "defsent-bert-large"],
                     ["defsent-roberta-base", "defsent-roberta-large"], ["roberta-base", "roberta-large"]]
    assert sum(map(len, CLASSES)) == len(SHIPPED)


def test_names_learning_rates_and_published_numbers_do_not_change_a_shape_anything_else_does():
    config = read(REPO / "configs" / "bert-base.yaml")
    renamed = yaml.safe_load(yaml.safe_dump(config).replace("bert_base", "other_name"))
    renamed["runs"]["other_name"]["steps"][0]["lr"] = 1.0
    renamed.pop("published")
    assert tiny_shape(renamed) == tiny_shape(config)
    for change in (lambda c: c["runs"]["bert_base"]["steps"].pop(),
                   lambda c: c["runs"]["bert_base"].update(training_pooling="mean"),
                   lambda c: c["evaluation"].update(poolings=["mean"]),
                   lambda c: c["models"].update(bert_base="hub:FacebookAI/roberta-base")):
        changed = read(REPO / "configs" / "bert-base.yaml")
        change(changed)
        assert tiny_shape(changed) != tiny_shape(config)


@pytest.fixture(scope="module")
def tiny_runs(request, rehearsal_root, senteval_dir):
    """Every shipped config prepared for its tiny rehearsal (one after another: they share models and stand-ins),
    then the first config of each class run, two classes at a time (a class's serial jobs, its dictionary first,
    leave a core idle): config name -> working directory, and name -> future of the run."""
    from defsent_plus.rehearsal.runner import prepare

    workdirs = {path.stem: prepare(path, "tiny", root=rehearsal_root, senteval=senteval_dir)
                for members in CLASSES for path in members if path.stem != "defsent-roberta-base"}
    python = request.getfixturevalue("warm_python")
    request.getfixturevalue("tiny_rehearsal")  # before the pool: its cost sheet reads its jobs' benchmarks
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = {first.stem: pool.submit(snakemake, workdirs[first.stem], python=python)
                for first, *_ in CLASSES if first.stem in workdirs}
        yield workdirs, runs
        for run in runs.values():
            run.cancel()


@pytest.mark.workflow
@pytest.mark.shipped_configs
@pytest.mark.parametrize("members", CLASSES, ids=[members[0].stem for members in CLASSES])
def test_every_shipped_config_executes_at_tiny_size(members, request, tiny_runs):
    first, *others = members
    workdirs, runs = tiny_runs
    if first.stem == "defsent-roberta-base":
        workdir = request.getfixturevalue("tiny_rehearsal")
    else:
        workdir = workdirs[first.stem]
        runs[first.stem].result()  # its Snakemake's error, if any
    assert planned_jobs(workdir) == {}, "a second run would still run jobs: the first left some undone"
    config = read(workdir / "config.yaml")
    summary = (workdir / "results" / "compare" / "summary.md").read_text(encoding="utf-8")
    assert banner.banner_text(config["rehearsal"]) in summary
    assert {run for run in config["runs"] if (workdir / "results" / run).is_dir()} == set(config["runs"])
    if others:  # same class: the same jobs of every rule, under other names and learning rates
        jobs = planned_jobs(workdir, "--forceall")
        for other in others:
            assert planned_jobs(workdirs[other.stem]) == jobs

