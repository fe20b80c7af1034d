"""The ``predict-words`` CLI command: top-k words of a DefSent-trained model for definitions."""

from __future__ import annotations

from pathlib import Path

import pytest

from defsent_plus.cli import main as cli
from defsent_plus.encoders.models import load_encoder
from defsent_plus.io import write_json
from defsent_plus.methods.masked_lm import HEAD_FILE, defsent_objective, load_defsent_model, save_head, word_logits
from defsent_plus.training.task import TRAINING_CARD

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
