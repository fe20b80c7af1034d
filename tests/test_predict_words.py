"""The ``predict-words`` CLI command: top-k words of a DefSent-trained model for definitions."""

from __future__ import annotations

from pathlib import Path

import pytest

from defsent_plus.cli import main as cli
from defsent_plus.encoders.models import load_encoder
from defsent_plus.io import write_json
from defsent_plus.methods.defsent.objective import (
    HEAD_FILE,
    defsent_objective,
    load_defsent_model,
    save_head,
    word_logits,
)
from defsent_plus.names import TRAINING_CARD

DEFINITIONS = ["something you eat", "a group of young person that play a game with a ball", "to take food"]


@pytest.fixture(scope="module")
def defsent_model(tiny_bert, tmp_path_factory) -> Path:
    """A DefSent model directory: the encoder, its (seeded-initialised) head and a card with mean pooling."""
    encoder = load_encoder(tiny_bert)
    objective = defsent_objective(encoder, "mean", seed=5)
    out = tmp_path_factory.mktemp("defsent") / "model"
    encoder.save(out)
    save_head(objective.head, out, objective.head_info)
    write_json(out / TRAINING_CARD, {"method": "defsent", "pooling": "mean"})
    return out


def parse_blocks(text: str) -> list[tuple[str, list[tuple[str, float]]]]:
    """The printed blocks: each definition with its ``(word, probability)`` lines."""
    blocks: list[tuple[str, list[tuple[str, float]]]] = []
    for line in text.splitlines():
        if not line.startswith("  "):
            blocks.append((line, []))
            continue
        ranked, probability = line.strip().rsplit("\t", 1)
        rank, word = ranked.split(". ", 1)
        assert int(rank) == len(blocks[-1][1]) + 1
        blocks[-1][1].append((word, float(probability)))
    return blocks


def argmax_words(model: Path, pooling: str) -> list[str]:
    encoder, head = load_defsent_model(model)
    ids = word_logits(encoder, head, DEFINITIONS, pooling).argmax(-1).tolist()
    return [encoder.tokenizer.decode([i]).strip() for i in ids]


@pytest.mark.parametrize("pooling", [None, "cls"])
def test_predict_words_prints_top_k_sorted_probabilities(defsent_model, capsys, pooling):
    args = ["predict-words", "--model", str(defsent_model), "--top-k", "4", *DEFINITIONS]
    assert cli(args + (["--pooling", pooling] if pooling else [])) == 0
    blocks = parse_blocks(capsys.readouterr().out)
    assert [definition for definition, _ in blocks] == DEFINITIONS
    for _, ranked in blocks:
        probabilities = [p for _, p in ranked]
        assert len(ranked) == 4
        assert all(0 < p <= 1 for p in probabilities)
        assert probabilities == sorted(probabilities, reverse=True)
    assert [ranked[0][0] for _, ranked in blocks] == argmax_words(defsent_model, pooling or "mean")


@pytest.mark.parametrize(("method", "supported"), [("defsent_plus", "reverse-dictionary"), ("simcse", "similarity")])
def test_a_model_of_a_method_without_predict_words_names_its_commands(tiny_bert, tmp_path, capsys, method, supported):
    model = tmp_path / method
    load_encoder(tiny_bert).save(model)
    write_json(model / TRAINING_CARD, {"method": method, "pooling": "mean"})
    assert cli(["predict-words", "--model", str(model), "a dog"]) == 2
    error = capsys.readouterr().err
    assert f"a {method} model" in error and "does not support `predict-words`" in error and supported in error


def test_a_model_without_a_head_fails_clearly(tiny_bert, capsys):
    assert cli(["predict-words", "--model", str(tiny_bert), "--pooling", "cls", "a dog"]) == 2
    assert HEAD_FILE in capsys.readouterr().err


@pytest.mark.parametrize(("extra", "message"), [([], "no definitions given"),
                                                (["--top-k", "0", "a dog"], "expected at least 1")])
def test_bad_input_fails_clearly(defsent_model, capsys, extra, message):
    assert cli(["predict-words", "--model", str(defsent_model), *extra]) == 2
    captured = capsys.readouterr()
    assert message in captured.err and not captured.out


def test_an_initialised_head_warns_on_stderr_and_still_predicts(defsent_model, tmp_path, capsys):
    """The card's head record decides: initialised -> a ``warning:`` line on stderr, the words still on stdout;
    pretrained (or no record) -> no warning."""
    import shutil

    from defsent_plus.io import read_json

    model = Path(shutil.copytree(defsent_model, tmp_path / "model"))
    card = read_json(model / TRAINING_CARD)
    write_json(model / TRAINING_CARD, {**card, "head": {"head": "initialised", "seed": 5}})
    assert cli(["predict-words", "--model", str(model), "--top-k", "2", DEFINITIONS[0]]) == 0
    captured = capsys.readouterr()
    warnings = [line for line in captured.err.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 1 and "initialised (seed 5)" in warnings[0] and "meaningless" in warnings[0]
    assert [definition for definition, _ in parse_blocks(captured.out)] == [DEFINITIONS[0]]
    write_json(model / TRAINING_CARD, {**card, "head": {"head": "pretrained"}})
    assert cli(["predict-words", "--model", str(model), "--top-k", "2", DEFINITIONS[0]]) == 0
    assert "warning:" not in capsys.readouterr().err


def test_reverse_dictionary_notes_on_stderr_when_it_falls_back_to_cosine(tiny_bert, tmp_path, capsys):
    """A model whose training did not fit: a ``note:`` line on stderr says it ranks by cosine; --scoring dot does
    not note anything."""
    import numpy as np
    from helpers import write_toy_dataset

    from defsent_plus.dictionary.table import read_dataset
    from defsent_plus.io import write_npy

    model = tmp_path / "model"
    load_encoder(tiny_bert).save(model)
    dataset = write_toy_dataset(tmp_path / "toy.parquet")
    entries = len(read_dataset(dataset))
    hidden = load_encoder(model).hidden_size
    for name, seed in (("amp.ica.npy", 0), ("amp.npy", 1)):
        write_npy(tmp_path / name, np.random.default_rng(seed).normal(size=(entries, hidden)).astype(np.float32))
    write_json(model / TRAINING_CARD, {"dataset": str(dataset), "entry_space": str(tmp_path / "amp.ica.npy"),
                                       "pooling": "cls", "fit": {"fitted": False, "note": "final loss at chance"}})
    assert cli(["reverse-dictionary", "--model", str(model), "--top-k", "3", "a small animal"]) == 0
    captured = capsys.readouterr()
    notes = [line for line in captured.err.splitlines() if line.startswith("note: ")]
    assert len(notes) == 1 and "did not fit its objective (final loss at chance)" in notes[0] and "cosine" in notes[0]
    assert captured.out.splitlines()[0] == "a small animal" and len(captured.out.splitlines()) == 4
    assert cli(["reverse-dictionary", "--model", str(model), "--scoring", "dot", "a small animal"]) == 0
    captured = capsys.readouterr()
    assert "note:" not in captured.err
    assert f"candidates: {entries:,} entries of {dataset}, the model's training dataset" in captured.err  # always
    first = read_dataset(dataset)["entry"].iloc[0]
    assert cli(["reverse-dictionary", "--model", str(model), "--expect", first, "a small animal"]) == 0
    assert f"  expected {first!r}: rank " in capsys.readouterr().out
    assert cli(["reverse-dictionary", "--model", str(model), "--expect", "elephant", "a small animal"]) == 0
    assert "  expected 'elephant': not among the candidates" in capsys.readouterr().out
