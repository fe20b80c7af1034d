"""AC/AMP entry spaces: exact against the one-entry-at-a-time recipe, order/padding invariant, bad input."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from helpers import toy_frame, write_toy_dataset

from defsent_plus.encoders.models import load_encoder
from defsent_plus.errors import DefSentError
from defsent_plus.io import read_json, write_npy
from defsent_plus.spaces.entry_matrix import load_space
from defsent_plus.spaces.entry_space import entry_embeddings, segment_mean, write_entry_space


def naive_entry_embeddings(encoder, frame):
    """The reference recipe: one entry at a time, one unpadded definition at a time."""
    ac, amp = [], []
    with torch.no_grad():
        for definitions in frame["definitions"]:
            cls_vectors, mean_vectors = [], []
            for text in definitions:
                hidden = encoder.model(**encoder.tokenizer(text, return_tensors="pt")).last_hidden_state[0]
                cls_vectors.append(hidden[0])
                mean_vectors.append(hidden.mean(0))
            ac.append(torch.stack(cls_vectors).mean(0))
            amp.append(torch.stack(mean_vectors).mean(0))
    return torch.stack(ac).numpy(), torch.stack(amp).numpy()


@pytest.fixture(params=["tiny_bert", "tiny_roberta"])
def encoder(request):
    enc = load_encoder(request.getfixturevalue(request.param))
    enc.model.eval()
    return enc


def test_batched_spaces_equal_the_one_entry_at_a_time_recipe(encoder):
    frame = toy_frame()
    spaces = entry_embeddings(encoder, frame, batch_size=4)
    ac, amp = naive_entry_embeddings(encoder, frame)
    assert spaces["ac"].shape == (len(frame), encoder.hidden_size)
    np.testing.assert_allclose(spaces["ac"], ac, atol=1e-5)
    np.testing.assert_allclose(spaces["amp"], amp, atol=1e-5)


def test_padding_and_batch_order_do_not_change_the_spaces(encoder):
    frame = toy_frame()
    one = entry_embeddings(encoder, frame, batch_size=1)
    many = entry_embeddings(encoder, frame, batch_size=64)
    shuffled = frame.iloc[::-1].reset_index(drop=True)
    reversed_spaces = entry_embeddings(encoder, shuffled, batch_size=3)
    for name in ("ac", "amp"):
        np.testing.assert_allclose(one[name], many[name], atol=1e-5)
        np.testing.assert_allclose(one[name], reversed_spaces[name][::-1], atol=1e-5)


def test_stage_writes_spaces_and_provenance(tmp_path, tiny_bert):
    dataset = write_toy_dataset(tmp_path / "toy.parquet")
    outputs = {"ac": tmp_path / "ac.npy", "amp": tmp_path / "amp.npy"}
    meta = write_entry_space(tiny_bert, dataset, outputs, tmp_path / "entry_space.json", encoder_name="tiny")
    assert load_space(outputs["amp"], 6).dtype == np.float32
    saved = read_json(tmp_path / "entry_space.json")
    assert saved["encoder"] == "tiny" and saved["entries"] == 6 and saved["definitions"] == 9
    assert len(saved["dataset_sha256"]) == 64 and meta == saved


@pytest.mark.parametrize("kind", ["missing", "not_an_encoder"])
def test_bad_encoder_directory_fails_and_writes_nothing(tmp_path, kind):
    dataset = write_toy_dataset(tmp_path / "toy.parquet")
    encoder_dir = tmp_path / "enc"
    if kind == "not_an_encoder":
        encoder_dir.mkdir()
        (encoder_dir / "README.md").write_text("hello")
    outputs = {"ac": tmp_path / "ac.npy", "amp": tmp_path / "amp.npy"}
    with pytest.raises(DefSentError, match="encoder directory not found|not an encoder directory"):
        write_entry_space(encoder_dir, dataset, outputs, tmp_path / "meta.json")
    assert not any(p.exists() for p in [*outputs.values(), tmp_path / "meta.json"])


def test_row_count_mismatch_and_nan_are_errors(tmp_path):
    write_npy(tmp_path / "space.npy", np.ones((5, 4), dtype=np.float32))
    with pytest.raises(DefSentError, match="5 rows but the dataset has 6 entries"):
        load_space(tmp_path / "space.npy", 6)
    broken = np.ones((6, 4), dtype=np.float32)
    broken[3, 1] = np.nan
    write_npy(tmp_path / "nan.npy", broken)
    with pytest.raises(DefSentError, match=r"nan.npy: entry space contains NaN at row 3 \(column 1\)"):
        load_space(tmp_path / "nan.npy", 6)


def test_segment_mean_averages_per_entry_and_refuses_gaps_or_unsorted_ids():
    vectors = np.arange(10, dtype=np.float32).reshape(5, 2)
    means = segment_mean(vectors, np.array([0, 0, 1, 2, 2]), 3)
    np.testing.assert_allclose(means, [[1, 2], [4, 5], [7, 8]])
    with pytest.raises(ValueError, match="entry 1 has no definition"):
        segment_mean(vectors, np.array([0, 0, 2, 2, 2]), 3)
    with pytest.raises(ValueError, match="ascending"):
        segment_mean(vectors, np.array([0, 1, 0, 2, 2]), 3)
