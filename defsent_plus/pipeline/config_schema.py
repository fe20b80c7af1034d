"""The workflow config checked against its JSON schema, with the schema's defaults filled in.

Snakemake's own ``validate`` is skipped inside cluster job steps (it assumes the config was checked by the main
process, but a job step re-reads the raw config files), so a default the main process filled in would be missing
there. This runs in both, and its errors name the config key.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path

import yaml
from jsonschema import Draft202012Validator, validators

from defsent_plus.errors import DefSentError
from defsent_plus.evaluation.evaluators import load_plugins as load_evaluators
from defsent_plus.methods import DEFAULT_METHOD, all_methods, load_plugins


def fill_then_check(validator, properties: dict, instance, schema: dict) -> Iterator:
    """JSON schema's ``properties`` check, after filling in every ``default`` of its subschemas."""
    if isinstance(instance, dict):
        for name, subschema in properties.items():
            if "default" in subschema:
                instance.setdefault(name, copy.deepcopy(subschema["default"]))  # never shared
    yield from Draft202012Validator.VALIDATORS["properties"](validator, properties, instance, schema)


DefaultingValidator = validators.extend(Draft202012Validator, {"properties": fill_then_check})


def load_schema(schema_path: str | Path, plugins: list[str] | tuple[str, ...] = ()) -> dict:
    """The workflow's JSON schema with every registered method's (built-in, and ``plugins``) config block
    (``methods.<name>``) and the methods a run can name, built from the methods' declarations: the registry is the
    only list of methods."""
    load_plugins(plugins)
    schema = yaml.safe_load(Path(schema_path).read_text(encoding="utf-8"))
    methods = all_methods()
    schema["properties"]["methods"]["properties"] = {name: m.options_schema() for name, m in methods.items()}
    run = schema["properties"]["runs"]["additionalProperties"]["properties"]
    run["method"] = {**run["method"], "enum": list(methods), "default": DEFAULT_METHOD}
    return schema


def validated_config(config: dict, schema_path: str | Path) -> dict:
    """``config`` with the schema's defaults filled in (in place); a violation raises naming its config key.
    Methods of ``method_plugins`` are registered first, so their blocks are checked too."""
    schema = load_schema(schema_path, config.get("method_plugins") or [])  # the registry checks the list
    load_evaluators(config.get("evaluator_plugins") or [])
    check_top_level_keys(config, schema)
    read_command_line_numbers(config)
    errors = sorted(DefaultingValidator(schema).iter_errors(config), key=lambda e: list(e.absolute_path))
    if errors:
        first = errors[0]
        key = ".".join(str(part) for part in first.absolute_path) or "(top level)"
        raise DefSentError(f"config: {key}", first.message)
    stop_runs_early(config)
    return config


def read_command_line_numbers(config: dict) -> None:
    """``runs.<run>.stop_after`` given as digits: Snakemake's ``--config runs='{r: {stop_after: 1}}'`` reads nested
    values as strings, so the one number meant to be set that way is read back as the integer it spells."""
    for run in config.get("runs", {}).values():
        if isinstance(run, dict) and isinstance(run.get("stop_after"), str) and run["stop_after"].isdigit():
            run["stop_after"] = int(run["stop_after"])


def stop_runs_early(config: dict) -> None:
    """Cut each run's ``steps`` to its ``stop_after`` first steps (in place); more than it has is an error."""
    for name, run in config.get("runs", {}).items():
        stop = run.get("stop_after")
        if stop is None:
            continue
        if stop > len(run["steps"]):
            raise DefSentError(f"config: runs.{name}.stop_after", f"the run has {len(run['steps'])} step(s), "
                                                                  f"cannot stop after step {stop}")
        run["steps"] = run["steps"][:stop]


def check_top_level_keys(config: dict, schema: dict) -> None:
    """A top-level key the schema does not know (a misspelt ``evalution:``) is an error naming it and the nearest
    known key: ignored, the user's setting would never take effect."""
    import difflib

    known = sorted(schema["properties"])
    for key in config:
        if key not in schema["properties"]:
            nearest = difflib.get_close_matches(str(key), known, n=1)
            hint = f"did you mean {nearest[0]!r}? " if nearest else ""
            raise DefSentError(f"config: {key}", f"unknown top-level key; {hint}known keys: {', '.join(known)}")
