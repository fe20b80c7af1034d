"""Each config key re-plans exactly its rules: on a copy of the finished tiny DAG, every leaf of the config schema
(workflow/schemas/config.schema.yaml with the methods' blocks; names of runs, models, ... as ``*``, list items as
``[]``) is changed to another valid value in turn, or added where the tiny config lacks it, and planned in-process
(tests/config_walk.py); the rules whose jobs re-run for their own params, inputs or outputs (not only because a job
before them does) must be the table's. A schema key without a row fails the test. The keys expected to re-plan
nothing are planned together in one plan (one at a time only if that plan re-plans something)."""

from __future__ import annotations

import copy
import functools
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from config_walk import ABSENT, config_leaves, replanned, schema_leaves
from conftest import FIXTURES, REPO
from workflow_utils import copy_run, validated

from defsent_plus.pipeline import config_schema

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

NOTHING: frozenset[str] = frozenset()
TRAIN = {"train"}
SPACES_OF_ENCODER = {"entry_space", "transform_space", "isotropy"}  # an encoder's new spaces
FINAL_STEP = {"embed", "score", "score_table", "steps_report"}  # another final step: its models evaluated
# Schema leaf (or key) -> the rules a change of it re-plans for their own params, inputs or outputs; a rule after one
# of them re-runs too, but only for that (compare_sts after score_table). Leaves under UNUSED re-plan nothing.
EXPECTED: dict[str, set[str]] = {
    "models.*": NOTHING,  # a copy of the model elsewhere: pinned by its content's checksum
    "dictionary.sources": {"dictionary"}, "dictionary.sources[].name": {"dictionary"},
    "dictionary.sources[].path": {"dictionary"}, "dictionary.primary": {"dictionary"},
    "dictionary.lowercase": {"dictionary"}, "dictionary.on_malformed": {"dictionary"},
    "dictionary.tokenizer": {"dictionary", "pin_model"},
    "subsets": NOTHING,  # a subset no run uses is not built
    "entry_space.batch_size": {"entry_space"}, "entry_space.max_length": {"entry_space"},
    "entry_space.analyse": {"isotropy"},
    **{f"entry_space.ica.{key}": {"transform_space"}
       for key in ("max_iter", "tol", "random_state", "scale", "backend", "precision", "threads")},
    **{f"entry_space.isotropy.{key}": {"isotropy"} for key in ("seed", "n_pairs", "plot_points")},
    **{f"methods.defsent_plus.{key}": TRAIN for key in (
        "max_length", "weight_decay", "adam_eps", "optimizer", "max_grad_norm", "bucket_by_length", "schedule",
        "warmup_ratio", "warmup_rounding", "select_every")},
    "selection.pooling": {"embed", "dev_score"},
    "selection.batch_size": {"embed"}, "selection.max_length": {"embed"},
    # the next step's entry space reads the selected weights from best/ instead of the candidate's folder
    "selection.keep_weights": {"prune_candidates", "entry_space"},
    "training.compile": NOTHING, "logging.report_to": NOTHING, "logging.dir": NOTHING,
    "resume.area": NOTHING, "resume.every_steps": NOTHING, "resume.every_minutes": NOTHING,
    "evaluation.poolings": {"embed", "score"},
    "evaluation.steps": {"embed", "score", "score_table"},
    "evaluation.final": {"embed", "score", "score_table"},
    "evaluation.sts_aggregation": {"score"},
    "evaluation.batch_size": {"embed"}, "evaluation.max_length": {"embed"},
    "evaluation.senteval_protocol": NOTHING, "evaluation.tables": {"embed", "score_unpaired", "score_table", "summary"},
    "evaluation.mteb.enabled": {"mteb"}, "evaluation.mteb.tasks": NOTHING,
    **{f"evaluation.bootstrap.{key}": {"score_table"} for key in ("resamples", "level", "seed")},
    "baselines.encoders": {"baseline_fit_corpus", "baseline_embed", "baseline_grid"},
    "baselines.templates": NOTHING,
    "resources.gpu": NOTHING, "resources.threads": NOTHING,
    "runs.*.method": {"train", "select_best", "embed", "dev_score", "score"},  # DefSent's own candidates
    "runs.*.model": {"pin_model", *SPACES_OF_ENCODER, "train", "embed", "dev_score", "score"},  # a new encoder
    "runs.*.dataset": {*SPACES_OF_ENCODER, "train"}, "runs.*.training_pooling": TRAIN,
    "runs.*.seeds": {"select_best"}, "runs.*.batch_size": TRAIN,
    "runs.*.steps": FINAL_STEP, "runs.*.steps[].lr": TRAIN, "runs.*.steps[].spaces": {"train", "select_best"},
    "runs.*.stop_after": FINAL_STEP, "runs.tiny.options": TRAIN,
    "runs.walk": {*SPACES_OF_ENCODER, "train", "select_best", "keep_best", "embed", "dev_score", "score",
                  "score_table", "steps_report", "summary"},
    "published": {"compare_sts"},
    # another results folder: every result made anew there, the shared data and pinned models (acquire_data,
    # pin_model) not
    "results_dir": {"dictionary", *SPACES_OF_ENCODER, "train", "select_best", "keep_best", "embed", "dev_score",
                    "score", "score_table", "steps_report", "summary", "compare_sts"},
    "rehearsal": {"dictionary"},  # its banner: every rule with one runs after the dictionary
}
# Blocks no job of the tiny config reads (datasets it does not acquire, methods no run uses, downloads, baselines
# with no encoder, costs: resources only): each leaf is still changed, and must re-plan nothing.
UNUSED = ("data.", "methods.defsent.", "methods.simcse.", "methods.slt_fai.", "baselines.", "costs.")
# Leaves no valid change of reaches in the tiny setup, and why.
NOT_WALKABLE = {
    "dictionary.sources[].type": "each fixture source is in the one format its type reads",
    "method_plugins": "registering a plugin's method lasts for the rest of the process (test_toy_method_workflow)",
    "evaluator_plugins": "registering a plugin's evaluator lasts for the process (test_toy_evaluator_workflow)",
}
# Schema leaves the tiny config lacks: added with their block (block key -> the leaves it covers).
ADDED = {"subsets": "subsets.*.", "baselines.encoders": "baselines.", "baselines.templates": "baselines.templates.",
         "runs.walk": "runs.*.start_from", "runs.tiny.options": "runs.*.options", "published": "published.",
         "rehearsal": "rehearsal.", "data.senteval.archives": "data."}


def copied(source: Path, name: str) -> Callable[[Path], str]:
    """A copy of ``source`` in another folder of the scratch area, as a path value."""
    def copy_to(scratch: Path) -> str:
        target = scratch / "elsewhere" / name / source.name
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            (shutil.copytree if source.is_dir() else shutil.copy2)(source, target)
        return str(target)
    return copy_to


SPACES = ["amp", "amp.whiten"]
ARCHIVE = {"url": "https://example.org/walk.zip", "kind": "zip", "root": "walk", "sha256": "0" * 64}
# Leaf (its concrete key, else its schema leaf) -> the changed value, where the leaf's type gives none (see changed).
VALUES: dict[str, object] = {
    "data.senteval.mirror": copied(FIXTURES / "senteval", "mirror"),
    "data.senteval.checksums": copied(FIXTURES / "senteval.sha256", "checksums"),
    "data.*.mirror": str(FIXTURES / "oxford"), "data.*.checksums": None, "data.*.archives": [ARCHIVE],
    "models.tiny": lambda scratch, config: copied(Path(config["models"]["tiny"]), "model")(scratch),
    "dictionary.sources": lambda scratch, config: config["dictionary"]["sources"][:-1],
    "dictionary.sources.0.path": copied(FIXTURES / "oxford", "oxford"),
    "dictionary.sources.1.path": copied(FIXTURES / "tiny" / "dictionary.tsv", "tsv"),
    "dictionary.sources.2.path": copied(FIXTURES / "gcide", "gcide"),
    "dictionary.sources.0.name": "ox", "dictionary.sources.2.name": "gc", "dictionary.primary": "oxford",
    "entry_space.analyse": ["amp", "amp.ica"],
    "logging.report_to": [], "logging.dir": "logs/walk", "resume.area": "results/.walk",
    "evaluation.poolings": ["mean", "cls"], "evaluation.tables": ["sts", "senteval"],
    "evaluation.mteb.tasks": ["STS22"],
    "methods.*.no_decay": ["walk"], "methods.*.corpus_file": str(FIXTURES / "tiny" / "dictionary.tsv"),
    "methods.*.frequency_corpus": str(FIXTURES / "tiny" / "dictionary.tsv"), "methods.*.mlp": True,
    "baselines.fit_corpus.file": str(FIXTURES / "tiny" / "dictionary.tsv"), "baselines.fit_corpus.dataset": "b",
    "costs.gpu.name": "walk GPU", "results_dir": "results-walk", "runs.*.dataset": "b",
    "runs.tiny.seeds": [0], "runs.tiny.steps": lambda scratch, config: config["runs"]["tiny"]["steps"][:-1],
    "runs.*.steps[].spaces": SPACES, "runs.tiny.steps.2.spaces": ["amp"], "runs.*.stop_after": 2,
}


def another_model(scratch: Path, config: dict) -> tuple[str, dict]:
    """Model ``walk``, a copy of model tiny, added for the key to name."""
    return "walk", {"models.walk": copied(Path(config["models"]["tiny"]), "model")(scratch)}


# Keys whose change needs another key changed with it: key -> (scratch, config) -> (its value, {other key: value}).
WITH_OTHERS: dict[str, Callable[[Path, dict], tuple[object, dict]]] = {
    "dictionary.tokenizer": another_model, "runs.tiny.model": another_model,
    "dictionary.sources.1.name": lambda scratch, config: ("walk", {"dictionary.primary": "walk"}),  # the primary
    "runs.tiny.method": lambda scratch, config: (  # DefSent: one step, on no entry space
        "defsent", {"runs.tiny.steps": [{"lr": config["runs"]["tiny"]["steps"][0]["lr"]}]}),
}
# Blocks added where the tiny config has none: key -> its value.
ADDITIONS: dict[str, object] = {
    "subsets": {"walk": {"dataset": "a", "max_entries": 5, "seed": 1, "heldout": {"dev": 0.2, "test": 0.2}}},
    "baselines.encoders": {"tiny": "walk"},  # with grids.walk below
    "baselines.templates": {"walk": "This sentence : \"{sentence}\" means in one word:\"{mask}\"."},
    "runs.walk": {"start_from": "tiny", "dataset": "a", "seeds": [0], "batch_size": 8,
                  "steps": [{"lr": 1.0e-3, "spaces": ["amp"]}]},
    "runs.tiny.options": {"max_length": 16},
    "published": {"tiny": {"source": "walk", "pooling": "mean", "compare_with": "selected", "space": "amp",
                           "scores": {"avg": 50.0}}},
    "rehearsal": {"config": "walk.yaml", "size": "tiny", "caps": {"training_examples": 5}, "models": {"tiny": "walk"}},
}
GRID = {"templates": ["none", "T0"], "layers": [[-1], ["last"]], "layer_sweep": ["mean"],
        "aggregations": ["mean", "max"], "sources": ["encoder", "avg"], "postprocess": ["none", "whiten"],
        "fit": ["corpus"]}


@dataclass
class Change:
    key: str  # concrete, e.g. runs.tiny.steps.0.lr
    leaf: str  # the schema's, e.g. runs.*.steps[].lr
    apply: Callable[[dict], None]
    expected: set[str]


def expected(leaf: str) -> set[str]:
    if leaf in EXPECTED:
        return set(EXPECTED[leaf])
    if leaf.startswith(UNUSED):
        return set()
    raise AssertionError(f"config key {leaf}: no row in the walk's table (EXPECTED, UNUSED or NOT_WALKABLE)")


def value_of(table: dict, key: str, leaf: str, generic: str):
    for name in (key, leaf, generic):
        if name in table:
            return True, table[name]
    return False, None


def changed(key: str, leaf: str, value, schema: dict, scratch: Path, config: dict):
    """A valid value of the leaf other than ``value``: the table's, else the next of an enum, a negated boolean, a
    number moved within its bounds."""
    generic = ".".join(  # data.*.mirror for data.oxford.mirror, methods.*.mlp for methods.simcse.mlp
"*" if i == 1 and leaf.split(".")[0] in ("data", "methods") else part
                       for i, part in enumerate(leaf.split(".")))
    found, new = value_of(VALUES, key, leaf, generic)
    if found:
        if callable(new):
            return new(scratch, config) if new.__code__.co_argcount == 2 else new(scratch)
        return copy.deepcopy(new)
    types = schema.get("type", [])
    types = [types] if isinstance(types, str) else types
    if "enum" in schema:
        return next(option for option in schema["enum"] if option != value)
    if "boolean" in types or isinstance(value, bool):
        return not value if isinstance(value, bool) else True
    if "integer" in types or isinstance(value, int):
        return value + 1 if isinstance(value, int) else schema.get("minimum", 1)
    if "number" in types:
        return value / 2 if isinstance(value, float | int) and value else 0.5
    raise AssertionError(f"config key {key}: no changed value in the walk's table (VALUES)")


def set_key(config: dict, key: str, value) -> None:
    node = config
    parts = [int(part) if part.isdigit() else part for part in key.split(".")]
    for part in parts[:-1]:
        node = node[part]
    node[parts[-1]] = value


def changes(config: dict, schema: dict, scratch: Path) -> Iterator[Change]:
    """One change per leaf of ``config`` (in the schema's terms), then one per block the tiny config lacks."""
    for key, leaf, value, subschema in config_leaves(schema, config):
        if leaf in NOT_WALKABLE or key in ADDITIONS or (value is ABSENT and leaf.startswith(tuple(ADDED.values()))):
            continue
        if key in WITH_OTHERS:
            new, others = WITH_OTHERS[key](scratch, config)
        else:
            new, others = changed(key, leaf, value, subschema, scratch, config), {}
        yield Change(key, leaf, lambda target, values={**others, key: new}: set_keys(target, values),
                     expected(key if key in EXPECTED else leaf))
    for key, value in ADDITIONS.items():
        extra = {"baselines.grids": {"walk": GRID}} if key == "baselines.encoders" else {}

        yield Change(key, key, lambda target, values={key: value, **extra}: set_keys(target, values), expected(key))


def set_keys(config: dict, values: dict) -> None:
    for key, value in values.items():
        set_key(config, key, copy.deepcopy(value))


def without_row(leaves: set[str], walked: set[str]) -> set[str]:
    """The schema leaves neither walked, added nor listed as not walkable."""
    added = tuple(ADDED.values())
    return {leaf for leaf in leaves - walked - set(NOT_WALKABLE) if not leaf.startswith(added)}


PLANS = []  # the plans' durations


def plan(workdir: Path, config: dict) -> dict[str, set[str]]:
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    started = time.monotonic()
    planned = replanned(workdir)
    PLANS.append(time.monotonic() - started)
    return planned


def test_each_key_replans_its_rules(tiny_run, tmp_path, monkeypatch):
    for variable in ("DEFSENT_SENTEVAL", "DEFSENT_OXFORD"):  # the tiny config names its own mirrors
        monkeypatch.delenv(variable, raising=False)
    load = config_schema.load_schema
    schema_file = functools.cache(lambda path, plugins: load(path, list(plugins)))
    monkeypatch.setattr(config_schema, "load_schema",  # read once, not once a plan (~0.2 s each)
                        lambda path, plugins=(): copy.deepcopy(schema_file(str(path), tuple(plugins))))
    workdir = copy_run(tiny_run, tmp_path / "run")
    config = validated(yaml.safe_load((workdir / "config.yaml").read_text()))
    schema = config_schema.load_schema(REPO / "workflow" / "schemas" / "config.schema.yaml")
    started = time.monotonic()
    PLANS.clear()
    assert plan(workdir, config) == {}
    walk = list(changes(config, schema, tmp_path))
    missing = without_row(set(schema_leaves(schema)), {change.leaf for change in walk})
    assert not missing, f"config keys without a row in the walk: {sorted(missing)}"
    quiet = [change for change in walk if not change.expected]
    together = copy.deepcopy(config)
    for change in quiet:
        change.apply(together)
    found = {}
    if plan(workdir, together):  # something re-planned: find which keys
        found.update({change.key: set(plan(workdir, changed_config(config, change))) for change in quiet})
    for change in walk:
        if change.expected:
            found[change.key] = set(plan(workdir, changed_config(config, change)))
    wrong = {change.key: {"expected": sorted(change.expected), "got": sorted(found[change.key])}
             for change in walk if change.key in found and found[change.key] != change.expected}
    print(f"config walk: {len(walk)} changes, {len(PLANS)} plans ({sum(PLANS):.1f} s), "
          f"{time.monotonic() - started:.1f} s in all")
    assert not wrong, "keys that re-plan other rules than their row's:\n" + yaml.safe_dump(wrong, sort_keys=False)


def changed_config(config: dict, change: Change) -> dict:
    target = copy.deepcopy(config)
    change.apply(target)
    return target
