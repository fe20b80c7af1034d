"""STS evaluation: loaders on the real SentEval files, scoring mechanics, and the MiniLM reference numbers."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import spearmanr

from defsent_plus.encoders.models import load_encoder
from defsent_plus.errors import DefSentError
from defsent_plus.sts import (
    aggregate_spearman,
    cosine_rows,
    encoder_embed,
    load_sickr,
    load_sts_subset,
    load_sts_task,
    load_stsb,
    sts_scores,
)

PAIR_COUNTS = {
    "STS12": 3108, "STS13": 1500, "STS14": 3750, "STS15": 3000, "STS16": 1186,
    "STSB": 1379, "STSB-dev": 1500, "SICKR": 4927,
}
# all-MiniLM-L6-v2, mean pooling: an independent measurement of the same protocol.
MINILM_REFERENCE = {
    "STS12": 72.37, "STS13": 80.60, "STS14": 75.59, "STS15": 85.39, "STS16": 78.99,
    "STSB": 82.03, "SICKR": 77.15, "avg": 78.87,
}


@pytest.mark.parametrize("task", list(PAIR_COUNTS))
def test_loader_pair_counts_on_real_files(senteval_dir, task):
    pairs = load_sts_task(senteval_dir, task)
    assert len(pairs) == len(pairs.sentences1) == len(pairs.sentences2) == PAIR_COUNTS[task]
    assert np.isfinite(pairs.gold).all()
    assert all(pairs.sentences1) and all(pairs.sentences2)


def test_sts15_and_sts16_skip_pairs_without_gold(senteval_dir):
    assert load_sts_task(senteval_dir, "STS15").skipped == 5500
    assert load_sts_task(senteval_dir, "STS16").skipped == 7997
    assert load_sts_task(senteval_dir, "STS12").skipped == 0


def test_stsb_and_sickr_columns(senteval_dir):
    stsb = load_stsb(senteval_dir, "test")
    assert (stsb.sentences1[0], stsb.sentences2[0], stsb.gold[0]) == (
        "a girl is styling her hair .", "a girl is brushing her hair .", 2.5,
    )
    sick = load_sickr(senteval_dir)
    assert sick.gold.min() >= 1 and sick.gold.max() <= 5
    assert not any("\r" in s for s in sick.sentences2)


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_empty_gold_lines_are_skipped_and_counted(tmp_path):
    inputs = write(tmp_path / "in.txt", "a b\tc d\ne  f\tg\nh\ti\n")
    gold = write(tmp_path / "gs.txt", "1.5\n\n4\n")
    pairs = load_sts_subset(inputs, gold)
    assert pairs.sentences1 == ["a b", "h"] and pairs.sentences2 == ["c d", "i"]
    assert pairs.gold.tolist() == [1.5, 4.0] and pairs.skipped == 1


def test_quotes_are_literal_in_tab_separated_files(tmp_path):
    inputs = write(tmp_path / "in.txt", 'he said " yes\tshe said " no "\n')
    pairs = load_sts_subset(inputs, write(tmp_path / "gs.txt", "3\n"))
    assert pairs.sentences1 == ['he said " yes'] and pairs.sentences2 == ['she said " no "']


def test_malformed_input_line_names_file_and_line(tmp_path):
    inputs = write(tmp_path / "STS.input.x.txt", "a\tb\nno tab here\n")
    with pytest.raises(DefSentError, match=r"STS\.input\.x\.txt:2: expected 2 tab-separated"):
        load_sts_subset(inputs, write(tmp_path / "gs.txt", "1\n2\n"))


def test_non_numeric_gold_names_file_and_line(tmp_path):
    inputs = write(tmp_path / "in.txt", "a\tb\nc\td\n")
    with pytest.raises(DefSentError, match=r"gs\.txt:2: expected a numeric"):
        load_sts_subset(inputs, write(tmp_path / "gs.txt", "1\nhigh\n"))


def test_gold_and_input_of_different_length_is_an_error(tmp_path):
    inputs = write(tmp_path / "in.txt", "a\tb\nc\td\n")
    with pytest.raises(DefSentError, match="has 1 lines but in.txt has 2"):
        load_sts_subset(inputs, write(tmp_path / "gs.txt", "1\n"))


def test_stsb_row_with_too_few_columns(tmp_path):
    folder = tmp_path / "STS" / "STSBenchmark"
    folder.mkdir(parents=True)
    write(folder / "sts-test.csv", "g\tf\ty\t1\t2.0\ta\tb\ng\tf\ty\t1\t2.0\tonly one\n")
    with pytest.raises(DefSentError, match=r"sts-test\.csv:2: expected at least 7"):
        load_stsb(tmp_path, "test")


def test_unknown_task_is_a_user_error(tmp_path):
    with pytest.raises(DefSentError, match="unknown STS task 'STS17'"):
        load_sts_task(tmp_path, "STS17")


def make_toy_senteval(root: Path) -> Path:
    """STS12 (two subsets) and STS-B test sharing sentences, with a gold line left empty."""
    year = root / "STS" / "STS12-en-test"
    year.mkdir(parents=True)
    subsets = ("MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews")
    for name in subsets:
        write(year / f"STS.input.{name}.txt", "cat\tdog\ncat\tcar\nsun\tmoon\n")
        write(year / f"STS.gs.{name}.txt", "4\n1\n\n")
    stsb = root / "STS" / "STSBenchmark"
    stsb.mkdir(parents=True)
    write(stsb / "sts-test.csv", "g\tf\ty\t1\t4.0\tcat\tdog\ng\tf\ty\t2\t0.5\tsun\tcar\ng\tf\ty\t3\t2\tdog\tcar\n")
    return root


TOY_VECTORS = {"cat": [1.0, 0.0], "dog": [0.9, 0.1], "car": [0.0, 1.0], "sun": [0.5, 0.5], "moon": [0.6, 0.4]}


def test_embed_called_once_with_unique_sentences(tmp_path):
    root = make_toy_senteval(tmp_path)
    calls = []

    def embed(sentences):
        calls.append(list(sentences))
        return np.array([TOY_VECTORS[s] for s in sentences])

    scores = sts_scores(embed, root, tasks=("STS12", "STSB"))
    assert len(calls) == 1
    # "moon" only occurs in a pair without gold score, so it is never embedded
    assert sorted(calls[0]) == sorted(set(calls[0])) == ["car", "cat", "dog", "sun"]
    assert set(scores) == {"STS12", "STSB", "avg"}
    assert scores["avg"] == pytest.approx((scores["STS12"] + scores["STSB"]) / 2)


def test_score_is_spearman_of_cosine_times_100(tmp_path):
    root = make_toy_senteval(tmp_path)
    embed = lambda sentences: np.array([TOY_VECTORS[s] for s in sentences])  # noqa: E731
    score = sts_scores(embed, root, tasks=("STSB",))["STSB"]
    v = {k: np.array(x) for k, x in TOY_VECTORS.items()}
    cos = [float(v[a] @ v[b] / np.linalg.norm(v[a]) / np.linalg.norm(v[b])) for a, b in
           [("cat", "dog"), ("sun", "car"), ("dog", "car")]]
    assert score == pytest.approx(spearmanr(cos, [4.0, 0.5, 2.0]).correlation * 100)


def test_cosine_rows_matches_definition_and_handles_zero_vectors():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(5, 3)), rng.normal(size=(5, 3))
    expected = [x @ y / np.linalg.norm(x) / np.linalg.norm(y) for x, y in zip(a, b, strict=True)]
    np.testing.assert_allclose(cosine_rows(a, b), expected)
    assert cosine_rows(np.zeros((1, 3)), np.ones((1, 3)))[0] == 0.0


def test_encoder_embed_with_tiny_bert(tiny_bert):
    encoder = load_encoder(tiny_bert)
    vectors = encoder_embed(encoder, "mean", batch_size=2, max_length=16)(["a dog", "the cat is big", "a dog"])
    assert vectors.shape == (3, 32) and vectors.dtype == np.float32
    np.testing.assert_allclose(vectors[0], vectors[2], rtol=1e-5, atol=1e-6)


# One task of each file layout and aggregation: a year of several subset files (SentEval's "all"), STS-B's test
# split, SICK-R's. A fifth of all seven tasks' sentences: the default run scores all seven with the same code.
REFERENCE_TASKS = ["STS16", "STSB", "SICKR"]


@pytest.mark.slow
def test_all_minilm_l6_v2_mean_pooling_reproduces_reference(senteval_dir, minilm_path):
    encoder = load_encoder(minilm_path)
    start = time.perf_counter()
    scores = sts_scores(encoder_embed(encoder, "mean", batch_size=128, max_length=128), senteval_dir,
                        REFERENCE_TASKS)
    print(f"MiniLM STS in {time.perf_counter() - start:.0f} s:", {k: round(v, 2) for k, v in scores.items()})
    for task in REFERENCE_TASKS:
        assert scores[task] == pytest.approx(MINILM_REFERENCE[task], abs=0.05), task
    assert scores["avg"] == pytest.approx(np.mean([MINILM_REFERENCE[t] for t in REFERENCE_TASKS]), abs=0.05)


# ------------------------------------------------------------------------- SentEval's STS aggregations


def pearson(x, y) -> float:
    x, y = np.asarray(x, dtype=float) - np.mean(x), np.asarray(y, dtype=float) - np.mean(y)
    return float(x @ y / np.sqrt((x @ x) * (y @ y)))


def test_sts_aggregations_on_a_toy_year_with_two_subsets_of_different_sizes():
    predicted = [np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.0, 3.0, 4.0, 5.0])]
    gold = [np.array([1.0, 2.0, 3.0]), np.array([5.0, 4.0, 3.0, 2.0, 1.0])]  # Spearman +100 (3 pairs), -100 (5)
    assert aggregate_spearman(predicted, gold, "mean") == pytest.approx(0.0)
    assert aggregate_spearman(predicted, gold, "wmean") == pytest.approx((3 * 100 - 5 * 100) / 8)
    # "all": one Spearman over the 8 concatenated pairs = Pearson of their (tie-averaged) ranks, ranked by hand
    predicted_ranks = [1.5, 3.5, 5.5, 1.5, 3.5, 5.5, 7, 8]
    gold_ranks = [1.5, 3.5, 5.5, 8, 7, 5.5, 3.5, 1.5]
    assert aggregate_spearman(predicted, gold, "all") == pytest.approx(100 * pearson(predicted_ranks, gold_ranks))
    with pytest.raises(DefSentError, match="evaluation.sts_aggregation"):
        aggregate_spearman(predicted, gold, "median")
