"""The encoder loop (issue 44 item 3): every text tokenised once and each batch padded from those ids exactly as the
tokenizer pads; without a budget on CPU bit for bit the loop before it (tests/encoding_oracle.py); with a token
budget batches respect both limits and agree within float32 round-off; the callers batch through ``batching_for``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from encoding_oracle import oracle_encode
from helpers import one_thread  # noqa: F401 (an autouse fixture)
from test_embeddings import FIXTURE
from tiny_models import WORDS

from defsent_plus.encoders import encoding
from defsent_plus.encoders.encoding import (
    batch_bounds,
    batching_for,
    pad_rows,
    pad_values,
    padded_tokens,
    tokenise,
)
from defsent_plus.encoders.models import load_encoder, load_tokenizer
from defsent_plus.evaluation.embeddings import write_sentence_embeddings
from defsent_plus.evaluation.reverse_dictionary import cosine_ranks
from defsent_plus.spaces.entry_space import entry_embeddings

BUDGET_ATOL = 1e-5  # max |difference| between budgeted and fixed batches (other padding: float32 round-off)
CASES = [(["cls", "mean", "max"], 24), (["prompt"], 128)]  # (poolings, max_length): truncating; keeping the mask


def sentences(n: int = 90, seed: int = 0) -> list[str]:
    """Random sentences of 1-40 words (some truncated at max_length 24), an empty one and a repeated one."""
    rng = np.random.default_rng(seed)
    texts = [" ".join(rng.choice(WORDS, rng.integers(1, 41))) for _ in range(n)]
    return texts + ["", texts[3], "giraffe"]


@pytest.fixture(params=["tiny_bert", "tiny_roberta", "minilm_path"])
def tokenizer_dir(request):
    return request.getfixturevalue(request.param)


@pytest.mark.parametrize("side", ["right", "left"])
def test_padding_from_ids_equals_the_tokenizers(tokenizer_dir, side):
    tokenizer = load_tokenizer(tokenizer_dir)
    tokenizer.padding_side = side
    texts = sentences(40) + [encoding.get_pooling("prompt").prepare(s, tokenizer) for s in sentences(5, seed=1)]
    tokens = tokenise(tokenizer, texts, max_length=32)
    order = np.argsort(-tokens.lengths, kind="stable")
    for rows in (order[:7], order[7:30], np.array([5, 0, 41, 3]), order):
        padded = pad_rows(tokens, rows, pad_values(tokenizer), side)
        expected = tokenizer([texts[i] for i in rows], padding=True, truncation=True, max_length=32,
                             return_tensors="np")
        assert padded.keys() == expected.keys()
        for key, value in expected.items():
            assert padded[key].dtype == np.int64
            np.testing.assert_array_equal(padded[key], value, err_msg=key)
        unpadded = tokenizer([texts[i] for i in rows], truncation=True, max_length=32)
        pad = tokenizer.pad(unpadded, padding=True, return_tensors="np")
        for key, value in pad.items():
            np.testing.assert_array_equal(padded[key], value, err_msg=key)


def test_tokenising_in_chunks_changes_nothing(tiny_bert, monkeypatch):
    tokenizer, texts = load_tokenizer(tiny_bert), sentences()
    whole = tokenise(tokenizer, texts, 32)
    monkeypatch.setattr(encoding, "TOKENISE_CHUNK", 7)
    chunked = tokenise(tokenizer, texts, 32)
    for key in ("starts", "lengths"):
        np.testing.assert_array_equal(getattr(whole, key), getattr(chunked, key))
    assert whole.fields.keys() == chunked.fields.keys()
    for key, flat in whole.fields.items():
        np.testing.assert_array_equal(flat, chunked.fields[key])
    assert tokenise(tokenizer, [], 32).lengths.shape == (0,)


@pytest.mark.parametrize("batch_size, chunk_rows", [(3, 5), (8, 16_384), (13, 20), (500, 16_384)])
def test_cpu_without_a_budget_equals_the_frozen_loop_bit_for_bit(model_dir, batch_size, chunk_rows, monkeypatch):
    monkeypatch.setattr(encoding, "HOST_CHUNK_ROWS", chunk_rows)  # many copies to the host, or one
    encoder, texts = load_encoder(model_dir), sentences()
    for poolings, max_length in CASES:
        found = encoder.encode(texts, poolings, batch_size=batch_size, max_length=max_length)
        expected = oracle_encode(encoder.model, encoder.tokenizer, texts, poolings, batch_size, max_length)
        for name in poolings:
            np.testing.assert_array_equal(found[name], expected[name], err_msg=name)
    assert encoder.encode([], "mean").shape == (0, encoder.hidden_size)


def forward_shapes(encoder, monkeypatch) -> list[tuple[int, int]]:
    """The ``[rows, width]`` of every batch the model is run on, recorded from now on."""
    shapes, forward = [], encoder.model.forward

    def recording(*args, **kwargs):
        shapes.append(tuple(kwargs["input_ids"].shape))
        return forward(*args, **kwargs)

    monkeypatch.setattr(encoder.model, "forward", recording)
    return shapes


@pytest.mark.parametrize("batch_size, max_tokens", [(64, 200), (8, 64), (1000, 30), (4, 10_000)])
def test_a_token_budget_keeps_both_limits_and_the_results(model_dir, batch_size, max_tokens, monkeypatch):
    encoder, texts = load_encoder(model_dir), sentences()
    for poolings, max_length in CASES:
        reference = encoder.encode(texts, poolings, batch_size=8, max_length=max_length)
        shapes = forward_shapes(encoder, monkeypatch)
        budgeted = encoder.encode(texts, poolings, batch_size=batch_size, max_length=max_length,
                                  max_tokens=max_tokens)
        assert sum(rows for rows, _ in shapes) == len(texts)
        for rows, width in shapes:
            assert rows <= batch_size and (rows * width <= max_tokens or rows == 1)
        for name in poolings:
            assert np.abs(budgeted[name] - reference[name]).max() <= BUDGET_ATOL, name
        monkeypatch.undo()


def test_short_sentences_share_larger_batches():
    lengths = np.array([40, 40, 30, 10, 10, 10, 10, 10, 5, 5, 3])
    assert batch_bounds(lengths, 4) == [(0, 4), (4, 8), (8, 11)]
    assert batch_bounds(lengths, 100, 80) == [(0, 2), (2, 4), (4, 11)]
    assert batch_bounds(lengths, 3, 80) == [(0, 2), (2, 4), (4, 7), (7, 10), (10, 11)]
    assert batch_bounds(lengths, 4, 20) == [(0, 1), (1, 2), (2, 3), (3, 5), (5, 7), (7, 9), (9, 11)]
    assert batch_bounds(np.array([], dtype=np.int64), 4, 20) == []
    with pytest.raises(ValueError, match="positive"):
        batch_bounds(lengths, 0)


@pytest.mark.parametrize("batch_size, max_tokens", [(128, None), (8, None), (64, 200)])
def test_padded_tokens_are_what_the_encoder_computes(tiny_bert, batch_size, max_tokens, monkeypatch):
    """The cost sheet's unit of encoding work (:func:`padded_tokens`) is the rows x width of the batches the model
    is really run on; a few texts pad more per text than many (the longest sets the width)."""
    encoder, texts = load_encoder(tiny_bert), sentences()
    shapes = forward_shapes(encoder, monkeypatch)
    encoder.encode(texts, "mean", batch_size=batch_size, max_length=24, max_tokens=max_tokens)
    lengths = tokenise(encoder.tokenizer, texts, 24).lengths
    assert padded_tokens(lengths, batch_size, max_tokens) == sum(rows * width for rows, width in shapes)
    assert padded_tokens(lengths[:10], batch_size) / 10 > padded_tokens(lengths, batch_size, 200) / len(texts)


def test_prompt_pooling_still_refuses_a_lost_mask(tiny_bert):
    encoder = load_encoder(tiny_bert)
    with pytest.raises(ValueError, match="lost its mask token"):
        encoder.encode([" ".join(["animal"] * 60)], "prompt", max_length=16, max_tokens=100)


def test_the_budget_is_cuda_only_and_set_in_one_place(monkeypatch):
    assert batching_for(torch.device("cpu"), 128) == (128, None)
    assert batching_for("cpu", 7) == (7, None)
    assert batching_for("cuda", 128) == (1024, 65_536)
    assert batching_for("cuda", 4096) == (4096, 65_536)
    monkeypatch.setitem(encoding.DEVICE_BATCHING, "cuda", (256, 8192))
    assert batching_for("cuda:0", 128) == (256, 8192)


def calls_to_encode(monkeypatch) -> list[dict]:
    """The batch_size and max_tokens of every encoding from now on."""
    calls, encode = [], encoding.encode

    def recording(*args, **kwargs):
        calls.append({"batch_size": args[4], "max_tokens": kwargs.get("max_tokens")})
        return encode(*args, **kwargs)

    monkeypatch.setattr("defsent_plus.encoders.models.encode", recording)
    return calls


def test_the_callers_batch_as_batching_for_says(tiny_bert, tmp_path, monkeypatch):
    monkeypatch.setitem(encoding.DEVICE_BATCHING, "cpu", (16, 300))
    calls = calls_to_encode(monkeypatch)
    encoder = load_encoder(tiny_bert)
    frame = pd.DataFrame({"entry": ["a", "b"], "definitions": [["a big cat", "a dog"], ["the night"]]})
    entry_embeddings(encoder, frame, batch_size=4, max_length=32)
    queries = pd.DataFrame({"definition": ["a cat", "the dark night"], "entry_id": [0, 1]})
    cosine_ranks(encoder, np.eye(2, encoder.hidden_size, dtype=np.float32), queries, batch_size=4, max_length=32)
    record = write_sentence_embeddings(model_dir=tiny_bert, senteval_dir=FIXTURE, sentence_set="sts", pooling="mean",
                                       batch_size=8, max_length=32, out_npy=tmp_path / "v.npy",
                                       out_json=tmp_path / "v.json", label="tiny")
    assert calls == [{"batch_size": 16, "max_tokens": 300}] * 3
    assert record["batching"] == {"batch_size": 16, "max_tokens": 300} and record["batch_size"] == 8
