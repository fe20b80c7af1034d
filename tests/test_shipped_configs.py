"""Every shipped config (configs/*.yaml and config.yaml) executes end to end at tiny size: one config of each class
(tests/config_classes.py: equal up to names, model sizes, learning rates and published numbers) runs its
whole tiny rehearsal DAG; the others of its class plan the same jobs rule by rule.

The DAGs run in the background from the session's start (tests/shipped_dags.py, conftest's ``shipped_dags``), their
script jobs from the warm interpreter (tests/warm_python.py). ``bash bin/test -m shipped_configs`` runs these tests
alone.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from config_classes import tiny_shape
from conftest import REPO
from shipped_dags import CLASSES, SHIPPED
from workflow_utils import planned_jobs, ran_and_modelled, snakemake

from defsent_plus import banner


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


@pytest.mark.workflow
@pytest.mark.shipped_configs
@pytest.mark.parametrize("members", CLASSES, ids=[members[0].stem for members in CLASSES])
def test_every_shipped_config_executes_at_tiny_size(members, senteval_dir, shipped_dags):
    first, *others = members
    workdir = shipped_dags.finished(first.stem)  # its Snakemake's error, if any
    assert planned_jobs(workdir) == {}, "a second run would still run jobs: the first left some undone"
    ran, modelled = ran_and_modelled(workdir)
    assert ran == modelled, f"ran, not in the job model: {ran - modelled}; in it, not ran: {modelled - ran}"
    config = read(workdir / "config.yaml")
    summary = (workdir / "results" / "compare" / "summary.md").read_text(encoding="utf-8")
    assert banner.banner_text(config["rehearsal"]) in summary
    assert {run for run in config["runs"] if (workdir / "results" / run).is_dir()} == set(config["runs"])
    if others:  # same class: the same jobs of every rule, under other names and learning rates
        jobs = planned_jobs(workdir, "--forceall")
        for other in others:
            assert planned_jobs(shipped_dags.workdirs[other.stem]) == jobs


# The rules that ran on the login node when the SLURM profile's grouping began (eae1778, issue 44's baseline); the dev
# score has run there since (its jobs are light: a Spearman correlation of stored vectors, no torch).
LOGIN_NODE_RULES_BEFORE = {"acquire_data", "pin_model", "select_best", "keep_best", "prune_candidates", "score_table",
                           "steps_report", "compare_sts", "compare_reverse_dictionary", "summary"}


def login_node_rules() -> set[str]:
    """The rules marked ``localrule: True`` in rules/*.smk (a ``use rule`` with its parent's mark)."""
    text = "".join(path.read_text() for path in sorted((REPO / "rules").glob("*.smk")))
    local, parent_of = set(), {}
    for block in re.split(r"^(?=rule |checkpoint |use rule )", text, flags=re.M):
        named = re.match(r"(?:rule|checkpoint) (\w+):|use rule (\w+) as (\w+)", block)
        if not named:
            continue
        name = named[1] or named[3]
        parent_of[name] = named[2]
        if re.search(r"^    localrule: True$", block, flags=re.M):
            local.add(name)
    return local | {name for name, parent in parent_of.items() if parent in local}


def submissions(dry_run: str, local: set[str]) -> int:
    """sbatch jobs of a dry run's output: each group one, each job outside a group of a rule not run locally one."""
    groups = len(re.findall(r"^\[.*\] Group job ", dry_run, flags=re.M))
    alone = re.findall(r"^(?:rule|checkpoint) (\w+):$", dry_run, flags=re.M)
    return groups + sum(rule not in local | {"all"} for rule in alone)


BERT_BASE = [members for members in CLASSES if members[0].stem == "bert-base"]


@pytest.mark.workflow
@pytest.mark.shipped_configs
@pytest.mark.parametrize("members", BERT_BASE, ids=["bert-base"])
def test_slurm_submits_at_most_a_third_of_the_jobs_of_bert_bases_tiny_rehearsal(members, shipped_dags):
    """profiles/slurm's job groups and the login node's rules: configs/bert-base.yaml's tiny rehearsal, every job
    planned (--forceall), as Snakemake's dry run submits it, against one sbatch job for each job of a rule that
    did not run on the login node before (issue 44: at most a third)."""
    workdir = shipped_dags.finished(members[0].stem)
    plain = snakemake(workdir, "--dry-run", "--forceall").stdout
    grouped = snakemake(workdir, "--dry-run", "--forceall", "--profile", str(REPO / "profiles" / "slurm")).stdout
    before, after = submissions(plain, LOGIN_NODE_RULES_BEFORE), submissions(grouped, login_node_rules())
    assert login_node_rules() == LOGIN_NODE_RULES_BEFORE | {"dev_score"}
    assert "Group job" not in plain and before > 40
    assert 3 * after <= before, (before, after)
