"""profiles/slurm: one block for every GPU job's partition, account and GPU type, read as Snakemake reads the profile,
and the planning-time lines that say where each rule goes (no SLURM needed)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from conftest import REPO
from snakemake.cli import parse_set_resources
from snakemake.profiles import ProfileConfigFileParser

from defsent_plus.pipeline.job_model import gpu_capable_rules
from defsent_plus.pipeline.placement import placement

PROFILE = REPO / "profiles" / "slurm" / "config.yaml"
ADAPTED = {"slurm_partition": "gpu", "slurm_account": "my_gpu_project", "gpu_model": "a100"}  # the profile's examples


def adapted_profile(folder: Path) -> Path:
    """A copy of the SLURM profile with each commented GPU line of the ADAPT kind set, as a user would: each line is
    uncommented where it is written, once."""
    text = PROFILE.read_text(encoding="utf-8")
    for key, value in ADAPTED.items():
        pattern = rf"^(\s*)# ({key}: {value})(\s+# ADAPT.*)$"
        assert len(re.findall(pattern, text, flags=re.MULTILINE)) == 1, f"{key}: one line to edit, not several"
        text = re.sub(pattern, r"\1\2\3", text, flags=re.MULTILINE)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.yaml").write_text(text, encoding="utf-8")
    return folder


def set_resources(profile: Path) -> dict[str, dict[str, object]]:
    """The profile's set-resources as Snakemake parses them: rule -> resource -> value as written."""
    with open(profile / "config.yaml", encoding="utf-8") as stream:
        parsed = ProfileConfigFileParser().parse(stream)
    return {rule: {name: value.orig_arg for name, value in asked.items()}
            for rule, asked in parse_set_resources(parsed["set-resources"]).items()}


def test_every_gpu_capable_rule_and_its_group_gets_the_one_gpu_block(tmp_path):
    resources = set_resources(adapted_profile(tmp_path / "slurm"))
    for rule in gpu_capable_rules():
        asked = resources.get(rule, {})
        assert asked.get("gpu") == "1", (rule, asked)
        assert {key: asked.get(key) for key in ADAPTED} == ADAPTED, (rule, asked)
    groups = yaml.safe_load(PROFILE.read_text(encoding="utf-8"))["groups"]
    members: dict[str, set[str]] = {}
    for entry in groups:
        rule, group = entry.split("=", 1)
        members.setdefault(group, set()).add(rule)
    for group, rules in members.items():  # one submission has one partition: its CPU members share the GPU block
        if rules & set(gpu_capable_rules()):
            for rule in rules:
                assert {key: resources.get(rule, {}).get(key) for key in ADAPTED} == ADAPTED, (group, rule)


def test_the_plain_profile_sets_no_partition_and_planning_says_nothing():
    resources = set_resources(PROFILE.parent)
    assert not any(key in asked for asked in resources.values() for key in ADAPTED)
    assert placement(["train", "score"], {"train"}, resources, {}) == ([], [])


def test_planning_lists_where_each_rule_goes_and_warns_when_gpu_jobs_differ():
    gpu = {"entry_space", "train", "embed"}
    one_block = {rule: {"gpu": "1", "slurm_partition": "gpu"} for rule in gpu}
    lines, warnings = placement(["entry_space", "train", "embed", "score", "summary"], gpu, one_block,
                                {"slurm_partition": "cpu"})
    assert lines[:2] == ["SLURM: slurm_partition=cpu: score, summary",
                         "SLURM: slurm_partition=gpu: embed*, entry_space*, train*"] and not warnings
    only_one = {"entry_space": {"gpu": "1", "slurm_partition": "'gpu'"}}  # the old profile's single line, set
    lines, warnings = placement(["entry_space", "train", "embed"], gpu, only_one, {})
    assert "SLURM: the cluster's default partition and account: embed*, train*" in lines
    assert warnings == ["SLURM: the jobs that ask for a GPU do not all go to the same partition/account/GPU type: "
                        "embed, train -> the cluster's default partition and account; entry_space -> "
                        "slurm_partition=gpu. Set them once for every GPU job (profiles/slurm/config.yaml: the "
                        "block gpu_job)"]
