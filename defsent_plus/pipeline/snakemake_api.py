"""How this workflow meets Snakemake beyond a Snakefile's syntax.

As a module of another workflow (``module defsent: … prefix: "defsent/"``; docs/execution.md), Snakemake puts the
``prefix`` before the relative paths of its rules' files, but not before the paths inside params (a table's rows, a
run's earlier steps). So a prefixed module's job works inside its prefix: :func:`declare_prefix` (at parse time) hands
the prefix to the jobs through their environment, leaving every job's params as they are without a prefix, and
:func:`enter_prefix` (every script's first step) makes the prefix folder the working directory and the job's own file
paths relative to it.

A Snakefile has no documented way to ask for the ``prefix`` of the ``module`` statement that uses it, for the
``--set-resources`` and ``--default-resources`` it was started with (a profile's too), or for its ``--cores`` during
a dry run or lint (``workflow.cores`` raises there). :func:`module_prefix`, :func:`set_resources`,
:func:`default_resources` and :func:`cores` read Snakemake's ``Workflow`` attributes, which hold for the versions in
:data:`TESTED_VERSIONS`; tests/test_snakemake_api.py fails on any other version, naming this module.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from defsent_plus.errors import DefSentError

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


PREFIX_VARIABLE = "DEFSENT_MODULE_PREFIX"


def declare_prefix(prefix: str | None) -> None:
    """The module's prefix (:func:`module_prefix`; None: used as a workflow) for the
    jobs this process starts; two different prefixes in one process (the module used twice) are refused."""
    declared = os.environ.get(PREFIX_VARIABLE)
    if prefix and declared and declared != prefix:
        raise DefSentError("Snakefile: module prefix", f"this workflow is a module with prefix {declared!r} already; a "
                                                        f"second prefix ({prefix!r}) in one workflow is not supported")
    if prefix:
        os.environ[PREFIX_VARIABLE] = prefix
    else:
        os.environ.pop(PREFIX_VARIABLE, None)


def enter_prefix(snakemake: Any) -> None:
    """In a prefixed module's job: work in the prefix folder, the job's input, output and log paths relative to it."""
    prefix = os.environ.get(PREFIX_VARIABLE)
    if not prefix:
        return
    for files in (snakemake.input, snakemake.output, snakemake.log):
        relative_to_prefix(files, prefix)
    Path(prefix).mkdir(parents=True, exist_ok=True)
    os.chdir(prefix)


def relative_to_prefix(files: Any, prefix: str) -> None:
    """Snakemake's named list of paths (``snakemake.input``, …), each relative path made relative to the ``prefix``
    folder (one Snakemake did not prefix, e.g. ``../data``, as seen from there), in place; names point at the new
    paths."""
    moved = {}
    for index, path in enumerate(files):
        if isinstance(path, str) and not os.path.isabs(path):
            inside = path[len(prefix):] if path.startswith(prefix) else os.path.relpath(path, prefix)
            files[index] = moved[path] = inside
    for name, value in list(files.items()):
        if isinstance(value, list):  # a name for several paths: its own list
            value[:] = [moved.get(path, path) for path in value]
        else:
            setattr(files, name, moved.get(value, value))
