"""What the workflow reads of Snakemake beyond its documented interface, in one place.

A Snakefile has no documented way to ask for the ``prefix`` of the ``module`` statement that uses it, for the
``--set-resources`` and ``--default-resources`` it was started with (a profile's too), or for its ``--cores`` during
a dry run or lint (``workflow.cores`` raises there). These read Snakemake's ``Workflow`` attributes, which hold for the
versions in :data:`TESTED_VERSIONS`; tests/test_snakemake_api.py fails on any other version, naming this module.
"""

from __future__ import annotations

from typing import Any

TESTED_VERSIONS = ("9.9",)  # major.minor of the Snakemake versions these attributes were checked on


def module_prefix(workflow: Any) -> str | None:
    """The ``prefix`` of the ``module`` statement that uses this workflow (None: run as a workflow itself)."""
    return workflow.modifier.path_modifier.prefix


def set_resources(workflow: Any) -> dict[str, dict[str, Any]]:
    """Rule -> its ``--set-resources`` (a profile's ``set-resources`` too), as Snakemake parsed them."""
    return workflow.resource_settings.overwrite_resources


def resource_overrides(workflow: Any) -> dict[str, dict[str, Any]]:
    """:func:`set_resources` as values."""
    return {name: {key: getattr(value, "value", value) for key, value in asked.items()}
            for name, asked in set_resources(workflow).items()}


def default_resources(workflow: Any) -> list[str]:
    """The ``--default-resources`` (a profile's ``default-resources`` too) as written, ``key=value``."""
    return list(getattr(workflow.resource_settings.default_resources, "args", None) or [])


def cores(workflow: Any) -> int | None:
    """``--cores`` (None where not given: a dry run, lint)."""
    return workflow.resource_settings.cores
