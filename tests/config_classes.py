"""Shipped configs that execute the same code at tiny size: two configs are of one class when they are equal up to
their model and run names, their models' sizes (a tiny rehearsal gives every model of a family the same tiny
dimensions), their learning rates and their published numbers. Executing one config of a class at tiny size executes
every job the others' tiny DAGs have, with other names and learning rates (tests/test_shipped_configs.py).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import yaml

from defsent_plus.model_specs import spec_kind
from defsent_plus.pipeline.dag import EncoderId
from defsent_plus.pipeline.model_architectures import model_architecture
from defsent_plus.rehearsal.caps import names_layers


def tiny_shape(config: dict) -> str:
    """``config`` (as read) with its models and runs renamed in order, each model as its tiny architecture,
    learning rates and ``published`` dropped, as canonical JSON."""
    config = copy.deepcopy(config)
    models = {name: f"model{i}" for i, name in enumerate(config.get("models", {}))}
    runs = {name: f"run{i}" for i, name in enumerate(config.get("runs", {}))}
    deep = names_layers(config)
    config["models"] = {models[name]: tiny_model(spec, name, deep) for name, spec in config.get("models", {}).items()}
    config["dictionary"]["tokenizer"] = models.get(config["dictionary"].get("tokenizer"))
    config["runs"] = {runs[name]: renamed_run(run, models, runs) for name, run in config.get("runs", {}).items()}
    encoders = config.get("baselines", {}).get("encoders")
    if encoders:
        config["baselines"]["encoders"] = {renamed_encoder(name, models, runs): grid for name, grid in encoders.items()}
    config.pop("published", None)
    return json.dumps(config, sort_keys=True)


def tiny_model(spec: str, name: str, real_depth: bool) -> dict:
    """A model as the architecture a tiny rehearsal builds for it (every model: hub, local or packaged)."""
    spec_kind(spec, f"config: models.{name}")  # a clear error for a malformed spec
    return model_architecture(spec).tiny(real_depth).config


def renamed_run(run: dict, models: dict[str, str], runs: dict[str, str]) -> dict:
    run = {**run, "steps": [{k: v for k, v in step.items() if k != "lr"} for step in run["steps"]]}
    if "model" in run:
        run["model"] = models[run["model"]]
    if "start_from" in run:
        run["start_from"] = runs[run["start_from"]]
    return run


def renamed_encoder(name: str, models: dict[str, str], runs: dict[str, str]) -> str:
    encoder = EncoderId.parse(name)
    if encoder.kind == "base":
        return models[encoder.model]
    return name.replace(encoder.run, runs[encoder.run], 1)


def shape_classes(paths: list[Path]) -> list[list[Path]]:
    """``paths`` grouped by tiny shape, each class and the classes in the order of ``paths``' first members."""
    classes: dict[str, list[Path]] = {}
    for path in paths:
        shape = tiny_shape(yaml.safe_load(Path(path).read_text(encoding="utf-8")))
        classes.setdefault(shape, []).append(Path(path))
    return list(classes.values())
