"""Each config key re-plans exactly its rules: on a copy of the finished tiny DAG, every numeric or boolean leaf of the
validated config is changed in turn and planned in-process (tests/config_walk.py); the rules whose jobs re-run for
their own params, inputs or outputs (not only because a job before them does) must be the table's."""

from __future__ import annotations

import copy

import pytest
import yaml
from config_walk import replanned
from workflow_utils import copy_run, validated

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

# Key prefix -> the rules a change of it re-plans (longest prefix wins); keys of methods, baselines and data the tiny
# DAG does not use, costs, resources, resume, downloads and training.compile re-plan nothing.
EXPECTED = {
    "dictionary.lowercase": {"dictionary"},
    "entry_space.batch_size": {"entry_space"}, "entry_space.max_length": {"entry_space"},
    "entry_space.ica": {"transform_space"}, "entry_space.isotropy": {"isotropy"},
    "methods.defsent_plus": {"train"}, "runs.tiny.batch_size": {"train"}, "runs.tiny.steps": {"train"},
    "selection.batch_size": {"embed"}, "selection.max_length": {"embed"},
    "evaluation.batch_size": {"embed"}, "evaluation.max_length": {"embed"},
    "evaluation.mteb.enabled": {"mteb"}, "evaluation.bootstrap": {"score_table"},
}
# Values the schema bounds: a change that stays valid.
CHANGED = {"methods.slt_fai.frequency_rate": 0.25, "evaluation.bootstrap.level": 0.9}


def leaves(value, path=()):
    if isinstance(value, dict) and value:
        for key, item in value.items():
            yield from leaves(item, (*path, key))
    elif isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
        for index, item in enumerate(value):
            yield from leaves(item, (*path, index))
    else:
        yield path, value


def changed(key: str, value):
    if key in CHANGED:
        return CHANGED[key]
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    return value * 2 if isinstance(value, float) and value else (0.5 if isinstance(value, float) else None)


def expected(key: str) -> set[str]:
    matches = [prefix for prefix in EXPECTED if key == prefix or key.startswith(prefix + ".")]
    return EXPECTED[max(matches, key=len)] if matches else set()


def with_leaf(config: dict, path: tuple, value) -> dict:
    config = copy.deepcopy(config)
    node = config
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return config


def test_each_key_replans_its_rules(tiny_run, tmp_path):
    workdir = copy_run(tiny_run, tmp_path / "run")
    config = validated(yaml.safe_load((workdir / "config.yaml").read_text()))
    assert replanned(workdir) == {}
    found = {}
    for path, value in leaves(config):
        key = ".".join(map(str, path))
        new = changed(key, value)
        if new is None or path[0] == "rehearsal":
            continue
        (workdir / "config.yaml").write_text(yaml.safe_dump(with_leaf(config, path, new), sort_keys=False))
        found[key] = set(replanned(workdir))
    assert {key: rules for key, rules in found.items() if rules != expected(key)} == {}
