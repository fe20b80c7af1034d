"""Names defined once (defsent_plus.names): the config schema and the package's registries agree with them."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
import yaml
from conftest import REPO

from defsent_plus import names
from defsent_plus.encoders import encoding
from defsent_plus.spaces import entry_space, transforms

SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"


@pytest.fixture(scope="module")
def schema() -> dict:
    return yaml.safe_load(SCHEMA.read_text(encoding="utf-8"))


def properties_named(node, wanted: set[str], path: str = "") -> Iterator[tuple[str, dict]]:
    """(schema path, definition) of every property whose name is in ``wanted``, anywhere in the schema."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in wanted and isinstance(value, dict):
                yield f"{path}.{key}", value
            yield from properties_named(value, wanted, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from properties_named(value, wanted, f"{path}[{i}]")


def enum_of(definition: dict) -> list:
    """The allowed values of a property or of an array property's items."""
    return definition["enum"] if "enum" in definition else definition["items"]["enum"]


def test_every_pooling_enum_of_the_schema_is_names_poolings(schema):
    found = dict(properties_named(schema, {"pooling", "poolings"}))
    assert {".properties.selection.properties.pooling", ".properties.evaluation.properties.poolings"} <= set(found)
    for path, definition in found.items():
        assert tuple(enum_of(definition)) == names.POOLINGS, path


def test_training_pooling_enum_is_names_training_poolings(schema):
    found = dict(properties_named(schema, {"training_pooling"}))
    assert found, "the schema has no training_pooling"
    for path, definition in found.items():
        assert tuple(enum_of(definition)) == names.TRAINING_POOLINGS, path
    assert set(names.TRAINING_POOLINGS) <= set(names.POOLINGS)


def test_the_training_poolings_are_written_out_once():
    """``("cls", "mean", "max")`` was defined three times (names, DefSent's objective, the baselines' spec): a tuple of
    exactly those names appears in names.py alone; the others refer to it."""
    import ast

    wanted = names.TRAINING_POOLINGS
    found = []
    for path in sorted((REPO / "defsent_plus").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Tuple) and tuple(getattr(e, "value", None) for e in node.elts) == wanted:
                found.append(path.relative_to(REPO).as_posix())
    assert found == ["defsent_plus/names.py"], found


def test_every_objective_names_the_runs_pooling_key_the_schema_has(schema):
    """A run chooses its pooling at ``runs.<run>.training_pooling``; the objectives' errors named keys that do not
    exist (``methods.slt_fai.pooling``, ``methods.simcse.pooling``, ``pooling``)."""
    from defsent_plus.errors import DefSentError
    from defsent_plus.methods.defsent.objective import check_pooling

    assert names.TRAINING_POOLING_KEY == "config: runs.<run>.training_pooling"
    assert "training_pooling" in schema["properties"]["runs"]["additionalProperties"]["properties"]
    with pytest.raises(DefSentError, match=re.escape(names.TRAINING_POOLING_KEY)):
        check_pooling("prompt")


def test_the_space_pattern_is_names_space_pattern(schema):
    assert schema["definitions"]["space"]["pattern"] == f"^{names.SPACE_PATTERN}$"
    spaces = [*names.BASE_SPACES, *(f"{b}.{t}" for b in names.BASE_SPACES for t in names.TRANSFORMS)]
    assert all(re.fullmatch(names.SPACE_PATTERN, space) for space in spaces)
    assert not any(re.fullmatch(names.SPACE_PATTERN, s) for s in ("amp.none", "ac.", "amp.ica.whiten", "mean"))


def test_registries_have_exactly_the_names(schema):
    assert set(encoding.POOLINGS) == set(names.POOLINGS)
    assert set(transforms.CANDIDATE_TRANSFORMS) == set(names.TRANSFORMS)
    assert set(transforms.TRANSFORMS) == {"none", *names.TRANSFORMS}  # "none": a base space, untransformed
    assert set(entry_space.ENTRY_POOLINGS) == set(names.BASE_SPACES)
    assert set(entry_space.ENTRY_POOLINGS.values()) <= set(names.POOLINGS)


def test_a_registry_that_drifts_fails_at_import():
    with pytest.raises(RuntimeError, match=r"transforms.X has \['center', 'pca'\], but .* defines"):
        names.require_same_names({"center": 0, "pca": 0}, ("center", "whiten"), "transforms.X")
