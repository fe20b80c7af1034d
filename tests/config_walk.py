"""Planning in-process with Snakemake's API: which jobs a finished working directory would run for its config.yaml, and
why; and the config schema's leaves (tests/test_config_walk.py)."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from pathlib import Path

from conftest import REPO

COMPILED: dict[tuple, tuple[str, int, dict]] = {}  # replanned's Snakefiles translated to Python, by file and version


def replanned(workdir: Path) -> dict[str, set[str]]:
    """Rule -> the reasons (Snakemake's names) of its jobs that would run in ``workdir``, planned as a dry run does,
    except the jobs that run only because a job before them does ("input files updated by another job"). Each
    Snakefile is translated to Python once (``COMPILED``), not once a plan; the rules are read anew each time.

    The one use of Snakemake's private API (``_workflow``, ``_prepare_dag``, ``_build_dag``, ``dag.reason``, the
    parser ``snakemake.workflow.parse``): tested with Snakemake 9.9 (pyproject pins >=9.1,<9.10)."""
    from unittest import mock

    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import DAGSettings, OutputSettings, Quietness, ResourceSettings

    host = importlib.import_module("snakemake.workflow")  # after snakemake.api, which it imports in turn
    translate = host.parse

    def translated_once(snakefile, workflow, linemap, rulecount=0, **options):
        path = Path(snakefile.get_path_or_uri())
        key = (str(path), path.stat().st_mtime_ns, rulecount, tuple(sorted(options.items())))
        if key not in COMPILED:
            lines: dict[int, int] = {}
            COMPILED[key] = (*translate(snakefile, workflow, lines, rulecount=rulecount, **options), lines)
        code, count, lines = COMPILED[key]
        linemap.update(lines)
        return code, count

    with mock.patch.object(host, "parse", translated_once), \
            SnakemakeApi(OutputSettings(quiet={Quietness.ALL})) as api:
        workflow_api = api.workflow(resource_settings=ResourceSettings(cores=2), snakefile=REPO / "Snakefile",
                                    workdir=workdir)
        workflow_api.dag(DAGSettings())
        workflow = workflow_api._workflow  # the parsed workflow; its DAG as a dry run builds it
        workflow._prepare_dag(forceall=False, ignore_incomplete=False, lock_warn_only=True, nolock=True)
        workflow._build_dag()
        planned: dict[str, set[str]] = {}
        for job in workflow.dag.needrun_jobs():
            reasons = set(workflow.dag.reason(job).get_names()) - {"input files updated by another job"}
            if reasons and job.rule.name != "all":
                planned.setdefault(job.rule.name, set()).update(reasons)
        return planned


def resolved(schema: dict, root: dict) -> dict:
    """``schema`` with its ``$ref`` to the root's definitions followed."""
    while "$ref" in schema:
        schema = {**root["definitions"][schema["$ref"].split("/")[-1]],
                  **{key: value for key, value in schema.items() if key != "$ref"}}
    return schema


ABSENT = object()  # config_leaves' value of a leaf the config lacks (no default)


def is_leaf(schema: dict) -> bool:
    return not schema.get("properties") and not isinstance(schema.get("additionalProperties"), dict)


def object_items(schema: dict) -> dict | None:
    """The item schema of a list of objects with properties (dictionary.sources, runs.<run>.steps), else None."""
    items = schema.get("items")
    return items if isinstance(items, dict) and "properties" in items else None


def schema_leaves(schema: dict, root: dict | None = None, leaf: str = "") -> Iterator[str]:
    """Every leaf of the config ``schema``: a name chosen by the user (a run, a model) as ``*``, a list of objects'
    item as ``[]`` (the list itself is a leaf too), e.g. ``runs.*.steps[].lr``."""
    root = root or schema
    schema = resolved(schema, root)
    extra = schema.get("additionalProperties")
    if schema.get("properties"):
        for name, sub in schema["properties"].items():
            yield from schema_leaves(sub, root, f"{leaf}.{name}" if leaf else name)
    elif isinstance(extra, dict):
        yield from schema_leaves(extra, root, f"{leaf}.*")
    else:
        yield leaf
        if object_items(schema):
            yield from schema_leaves(resolved(object_items(schema), root), root, f"{leaf}[]")


def config_leaves(schema: dict, config, root: dict | None = None, key: str = "", leaf: str = ""
                  ) -> Iterator[tuple[str, str, object, dict]]:
    """(key, schema leaf, value, its schema) of every leaf of ``config`` (keys joined by dots, list items by index:
    ``runs.tiny.steps.0.lr``, leaf ``runs.*.steps[].lr``), and of every leaf a block of it lacks (value ``ABSENT``)."""
    root = root or schema
    schema = resolved(schema, root)
    extra = schema.get("additionalProperties")

    def join(name) -> str:
        return f"{key}.{name}" if key else str(name)

    if schema.get("properties") and isinstance(config, dict):
        for name, sub in schema["properties"].items():
            value = config.get(name, ABSENT if is_leaf(resolved(sub, root)) else None)
            if name in config or value is ABSENT:
                yield from config_leaves(sub, value, root, join(name), f"{leaf}.{name}" if leaf else name)
    elif isinstance(extra, dict) and isinstance(config, dict):
        for name, value in config.items():
            yield from config_leaves(extra, value, root, join(name), f"{leaf}.*")
    else:
        yield key, leaf, config, schema
        if object_items(schema) and isinstance(config, list):
            for index, item in enumerate(config):
                yield from config_leaves(object_items(schema), item, root, join(index), f"{leaf}[]")
