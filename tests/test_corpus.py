"""The contrastive methods' training corpus: definitions or a text file, duplicates dropped, seeded samples."""

from __future__ import annotations

import pytest

from defsent_plus.errors import DefSentError
from defsent_plus.training.corpus import training_corpus


def test_definitions_are_deduplicated_in_order_and_sampled_by_seed():
    definitions = ["a dog", "a cat", "a dog", "  ", "a bird", "a fish"]
    assert training_corpus(definitions, None, None, 0, "toy") == ["a dog", "a cat", "a bird", "a fish"]
    sample = training_corpus(definitions, None, 2, 0, "toy")
    assert len(sample) == 2 and sample == training_corpus(definitions, None, 2, 0, "toy")
    assert set(sample) <= {"a dog", "a cat", "a bird", "a fish"}
    assert {tuple(training_corpus(definitions, None, 2, seed, "toy")) for seed in range(10)} != {tuple(sample)}


def test_a_corpus_file_replaces_the_definitions(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_bytes("\ufefffirst sentence\r\nsecond sentence\r\n\r\n".encode())
    assert training_corpus(["ignored"], str(path), None, 0, "toy") == ["first sentence", "second sentence"]


def test_an_empty_corpus_names_its_source(tmp_path):
    with pytest.raises(DefSentError, match="toy.parquet: the training corpus is empty"):
        training_corpus([" ", ""], None, None, 0, "toy.parquet")
    (tmp_path / "empty.txt").write_text("\n\n")
    with pytest.raises(DefSentError, match="empty.txt: the training corpus is empty"):
        training_corpus([], str(tmp_path / "empty.txt"), None, 0, "toy")
    with pytest.raises(DefSentError, match="corpus file not found"):
        training_corpus([], str(tmp_path / "missing.txt"), None, 0, "toy")
