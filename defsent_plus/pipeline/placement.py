"""Where a SLURM run sends each rule's jobs, said at planning time: the partition, account and GPU type each rule
gets from the profile (``set-resources``, ``default-resources``), and a warning when the rules that ask for a GPU do
not all get the same ones (a GPU partition set for one rule only sends the others to the default partition); and the
profile's job groups (the jobs of one group share one start, which ``estimate`` counts once).

Light on purpose: rules/common.smk calls it for every invocation.
"""

from __future__ import annotations

from pathlib import Path

import yaml

NODE_KEYS = ("slurm_partition", "slurm_account", "gpu_model")
DEFAULT_NODE = "the cluster's default partition and account"
GPU_MARK = "*"


def unquoted(text: str) -> str:
    """A profile's string value without the quotes Snakemake's expressions need (``"'gpu'"`` -> ``gpu``)."""
    text = str(text).strip()
    return text[1:-1] if len(text) > 1 and text[0] == text[-1] and text[0] in "'\"" else text


def node_of(rule: str, overrides: dict[str, dict[str, str]], defaults: dict[str, str]) -> tuple[tuple[str, str], ...]:
    """The partition, account and GPU type a rule's jobs get (its set-resources, else default-resources)."""
    asked = {**defaults, **overrides.get(rule, {})}
    return tuple((key, unquoted(asked[key])) for key in NODE_KEYS if key in asked)


def describe(node: tuple[tuple[str, str], ...]) -> str:
    return ", ".join(f"{key}={value}" for key, value in node) or DEFAULT_NODE


def placement(rules: list[str], gpu_rules: set[str], overrides: dict[str, dict[str, str]],
              defaults: dict[str, str]) -> tuple[list[str], list[str]]:
    """Planning-time lines (none when the profile sets no partition, account or GPU type) and warnings: per node,
    the rules sent there (``*``: asks for a GPU); a warning when the GPU rules do not all go to the same node.
    ``overrides``: rule -> its set-resources as written; ``defaults``: default-resources as written."""
    nodes = {rule: node_of(rule, overrides, defaults) for rule in rules}
    if not any(nodes.values()):
        return [], []
    by_node: dict[tuple, list[str]] = {}
    for rule in sorted(rules):
        by_node.setdefault(nodes[rule], []).append(rule + (GPU_MARK if rule in gpu_rules else ""))
    lines = sorted(f"SLURM: {describe(node)}: {', '.join(names)}" for node, names in by_node.items())
    lines.append(f"SLURM: ({GPU_MARK} asks for a GPU; from the profile's set-resources, else default-resources; a "
                 "localrule runs on the login node)")
    gpu_nodes = {nodes[rule] for rule in gpu_rules if rule in nodes}
    warnings = []
    if len(gpu_nodes) > 1:
        where = "; ".join(f"{', '.join(sorted(r for r in gpu_rules if nodes.get(r) == node))} -> {describe(node)}"
                          for node in sorted(gpu_nodes))
        warnings.append(f"SLURM: the jobs that ask for a GPU do not all go to the same partition/account/GPU type: "
                        f"{where}. Set them once for every GPU job (profiles/slurm/config.yaml: the block gpu_job)")
    return lines, warnings


def written_resources(overwrite_resources: dict, default_args: list[str]) -> tuple[dict[str, dict[str, str]],
                                                                                   dict[str, str]]:
    """Snakemake's parsed ``set-resources`` (rule -> name -> ParsedResource) and ``default-resources`` args
    (``name=value``) as the strings the profile wrote."""
    overrides = {rule: {name: str(getattr(value, "orig_arg", value)) for name, value in asked.items()}
                 for rule, asked in overwrite_resources.items()}
    defaults = dict(arg.split("=", 1) for arg in default_args if "=" in arg)
    return overrides, defaults


SLURM_PROFILE = Path(__file__).resolve().parents[2] / "profiles" / "slurm" / "config.yaml"


def slurm_groups(profile: Path = SLURM_PROFILE) -> dict[str, str]:
    """The SLURM profile's job groups, rule -> group name pattern (``embed=eval_{encoder}``); none without it."""
    if not profile.is_file():
        return {}
    entries = yaml.safe_load(profile.read_text(encoding="utf-8")).get("groups") or []
    return dict(entry.split("=", 1) for entry in entries)


def group_of(groups: dict[str, str], rule: str, job: dict[str, str]) -> str | None:
    """The job group a job of ``rule`` runs in on SLURM (one start for all its jobs), or None."""
    return groups[rule].format(**job) if rule in groups else None
