"""SentEval transfer tasks: loaders on the real files, the classifier protocols, determinism, a toy end-to-end run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from sklearn.feature_extraction.text import HashingVectorizer
from sklearn.model_selection import StratifiedKFold

from defsent_plus.errors import DefSentError
from defsent_plus.evaluation.senteval import (
    TRANSFER_TASKS,
    Labelled,
    features,
    latin1_words,
    load_tab_split,
    load_transfer_task,
    load_trec,
    senteval_order,
    senteval_results,
    subsample,
    task_result,
    words,
)
from defsent_plus.evaluation.senteval_classifiers import C_GRIDS, Protocol

# SentEval's sizes (its paper's Table 1); per split, with per-class counts where informative.
SPLIT_SIZES = {
    "MR": {"all": 10662},
    "CR": {"all": 3775},
    "SUBJ": {"all": 10000},
    "MPQA": {"all": 10606},
    "SST2": {"train": 67349, "dev": 872, "test": 1821},
    "TREC": {"train": 5452, "test": 500},
    "MRPC": {"train": 4076, "test": 1725},
}
CLASS_COUNTS = {  # [label 0, label 1]; label 1 is the first file (pos, objective)
    "MR": [5331, 5331], "CR": [1368, 2407], "SUBJ": [5000, 5000], "MPQA": [7294, 3312],
}


def bag_of_words(sentences: list[str]) -> np.ndarray:
    """A cheap deterministic toy embedding: hashed, L2-normalised word counts."""
    vectorizer = HashingVectorizer(n_features=2**10, alternate_sign=False, norm="l2")
    return vectorizer.transform(sentences).toarray().astype(np.float32)


@pytest.mark.parametrize("task", TRANSFER_TASKS)
def test_loader_sizes_on_real_files(senteval_dir, task):
    splits = load_transfer_task(senteval_dir, task)
    assert {name: len(data) for name, data in splits.items()} == SPLIT_SIZES[task]
    if task in CLASS_COUNTS:
        assert np.bincount(splits["all"].labels).tolist() == CLASS_COUNTS[task]


def test_trec_labels_and_latin1_training_file(senteval_dir):
    train, test = load_trec(senteval_dir, "train"), load_trec(senteval_dir, "test")
    assert train.texts[0][0] == "How did serfdom develop in and then leave Russia ?"
    assert train.labels[0] == 1  # DESC
    assert sorted(set(train.labels)) == sorted(set(test.labels)) == list(range(6))
    assert any(not s.isascii() for s in train.texts[0])  # Latin-1 characters decoded, not dropped


def test_mrpc_skips_bom_header_and_reads_columns(senteval_dir):
    train = load_tab_split("MRPC", senteval_dir, "train")
    assert train.labels[:2].tolist() == [1, 0]
    assert train.texts[0][0].startswith("Amrozi accused his brother")
    assert train.texts[1][0].startswith("Referring to him as only")


def test_sst2_keeps_literal_quotes(senteval_dir):
    dev = load_tab_split("SST2", senteval_dir, "dev")
    assert set(dev.labels.tolist()) == {0, 1}
    assert all(s == s.strip() for s in dev.texts[0])


def make_dirs(root: Path, *parts: str) -> Path:
    folder = root.joinpath(*parts)
    folder.mkdir(parents=True)
    return folder


def test_sst2_bad_label_names_file_and_line(tmp_path):
    folder = make_dirs(tmp_path, "SST", "binary")
    (folder / "sentiment-dev").write_text("good film\t1\nbad film\tneg\n", encoding="utf-8")
    with pytest.raises(DefSentError, match=r"sentiment-dev:2: expected a label"):
        load_tab_split("SST2", tmp_path, "dev")


def test_trec_malformed_line_names_file_and_line(tmp_path):
    folder = make_dirs(tmp_path, "TREC")
    (folder / "TREC_10.label").write_text("NUM:dist How far ?\nno colon here\n", encoding="latin-1")
    with pytest.raises(DefSentError, match=r"TREC_10\.label:2: expected .COARSE:fine question"):
        load_trec(tmp_path, "test")


def test_mrpc_wrong_field_count_names_file_and_line(tmp_path):
    folder = make_dirs(tmp_path, "MRPC")
    (folder / "msr_paraphrase_test.txt").write_text(
        "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n1\t1\t2\ta\tb\n0\t3\t4\tonly one\n", encoding="utf-8"
    )
    with pytest.raises(DefSentError, match=r"msr_paraphrase_test\.txt:3: expected 5"):
        load_tab_split("MRPC", tmp_path, "test")


def test_missing_file_and_unknown_task_are_user_errors(tmp_path):
    with pytest.raises(DefSentError, match="file not found"):
        load_transfer_task(tmp_path, "MR")
    with pytest.raises(DefSentError, match="unknown transfer task"):
        senteval_results(bag_of_words, tmp_path, tasks=("SICK-E",))


def test_pair_features_are_abs_difference_and_product():
    pairs = Labelled((["a", "b"], ["b", "b"]), np.array([0, 1]))
    vectors = {"a": np.array([1.0, -2.0]), "b": np.array([3.0, 1.0])}
    np.testing.assert_array_equal(features(pairs, vectors), [[2.0, 3.0, 3.0, -2.0], [0.0, 0.0, 9.0, 1.0]])


def test_subsample_is_seeded_and_keeps_order():
    data = Labelled(([str(i) for i in range(100)],), np.arange(100) % 2)
    first, again = subsample(data, 10, seed=3), subsample(data, 10, seed=3)
    assert first.texts[0] == again.texts[0] and len(first) == 10
    assert [int(s) for s in first.texts[0]] == sorted(int(s) for s in first.texts[0])
    assert subsample(data, None, seed=3) is data


def test_c_grids_are_senteval_sklearn_grids():
    """senteval/tools/validation.py: InnerKFold and Split 2^-2 .. 2^3, KFold (TREC, MRPC) 2^-1 .. 2^5."""
    assert C_GRIDS == {"inner_kfold": (0.25, 0.5, 1.0, 2.0, 4.0, 8.0), "kfold": (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0),
                       "split": (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)}


def test_examples_are_in_senteval_order():
    """Sorted stably by word count, then label; pairs by both counts, then label; MR/CR/SUBJ/MPQA counted as SentEval
    reads them, Latin-1 (a UTF-8 'à' ends in byte 0xA0, a no-break space there)."""
    data = Labelled((["a b c", "x", "p q", "y", "m n"],), np.array([0, 1, 1, 0, 0]))
    ordered = senteval_order(data)
    assert ordered.texts[0] == ["y", "x", "m n", "p q", "a b c"] and ordered.labels.tolist() == [0, 1, 0, 1, 0]
    pairs = Labelled((["a b", "c", "d"], ["e", "f g", "h"]), np.array([1, 0, 0]))
    assert senteval_order(pairs).texts[0] == ["d", "c", "a b"]
    assert (words("voilàtout"), latin1_words("voilàtout")) == (1, 2)
    two = Labelled((["voilàtout", "un"],), np.array([0, 0]))
    assert senteval_order(two).texts[0] == ["voilàtout", "un"]  # one word each: the file's order stays
    assert senteval_order(two, latin1_words).texts[0] == ["un", "voilàtout"]


class Recorded:
    """A fitted stand-in whose score is fixed and which records the rows it was scored on (x[:, 0] = row number)."""

    def __init__(self, rows: list, accuracy: float):
        self.rows, self.accuracy = rows, accuracy

    def score(self, x, y):
        self.rows.append(tuple(int(v) for v in x[:, 0]))
        return self.accuracy


def stand_in(accuracy_of) -> tuple[Protocol, list]:
    """A protocol whose fit returns :class:`Recorded` with ``accuracy_of(reg)``, and the rows it scored."""
    rows: list = []
    grids = {"inner_kfold": (0.5, 1.0, 2.0), "kfold": (0.5, 1.0, 2.0), "split": (0.5, 1.0, 2.0)}
    return Protocol("stand-in", grids, lambda x, y, reg, seed, validation: Recorded(rows, accuracy_of(reg))), rows


def test_c_is_the_first_of_the_best_rounded_mean_accuracies():
    """SentEval rounds each C's mean accuracy to two decimals in % before its argmax, so 80.004% and 80.001% tie and
    the smaller C wins; unrounded, the larger would."""
    from defsent_plus.evaluation.senteval import chosen_c

    accuracy = {0.5: 0.8000010, 1.0: 0.8000040, 2.0: 0.70}
    protocol, _ = stand_in(accuracy.get)
    x, y = np.arange(20)[:, None].astype(float), np.arange(20) % 2
    folds = StratifiedKFold(n_splits=2, shuffle=True, random_state=1111)
    assert chosen_c(x, y, (0.5, 1.0, 2.0), folds, 0, None, protocol) == 0.5
    accuracy[1.0] = 0.80006  # 80.01 after rounding: strictly better
    assert chosen_c(x, y, (0.5, 1.0, 2.0), folds, 0, None, protocol) == 1.0


def test_inner_kfold_splits_with_1111_whatever_the_seed():
    """InnerKFoldClassifier's outer folds are StratifiedKFold(shuffle, random_state=1111) of the ordered examples;
    the score is the mean of the fold accuracies, each rounded to two decimals."""
    from defsent_plus.evaluation.senteval import fold_result, nested_cv_folds

    protocol, rows = stand_in(lambda reg: 2 / 3)
    x, y = np.arange(30)[:, None].astype(float), np.arange(30) % 2
    assert nested_cv_folds(x, y, seed=7, kfold=3, protocol=protocol).tolist() == [66.67] * 3
    expected = [tuple(test) for _, test in StratifiedKFold(3, shuffle=True, random_state=1111).split(x, y)]
    assert [r for r in rows if len(r) == 10] == expected  # the inner folds of 20 examples hold 6 or 7
    assert fold_result(nested_cv_folds(x, y, seed=7, kfold=3, protocol=protocol)).accuracy == 66.67


def test_the_pytorch_protocol_is_senteval_default_configuration():
    """SentEval's README default: logistic regression (one linear layer) trained with Adam, batch 64, tenacity 5,
    epoch_size 4, weight decay from 1e-5 .. 1e-2; deterministic for a seed, and it learns a separable task."""
    from defsent_plus.evaluation.senteval_classifiers import PROTOCOLS, TorchLogistic, TorchSettings

    assert PROTOCOLS["pytorch"].grids["inner_kfold"] == (1e-5, 1e-4, 1e-3, 1e-2)
    assert TorchSettings() == TorchSettings(batch_size=64, tenacity=5, epoch_size=4, max_epoch=200, lr=1e-3)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1500, 8)).astype(np.float32)
    y = (x[:, 0] + 0.5 * x[:, 1] > 0).astype(np.int64)
    short = TorchSettings(max_epoch=40)  # a bound on the test's time; the loop is SentEval's

    def fitted(seed):
        return TorchLogistic(8, 2, 1e-4, seed, short).fit(x, y, 0.05)

    first, again = fitted(1111), fitted(1111)
    assert all(torch.equal(a, b) for a, b in zip(first.model.state_dict().values(),
                                                 again.model.state_dict().values(), strict=True))
    assert first.score(x, y) > 0.9 and first.model.out_features == 2
    assert not torch.equal(TorchLogistic(8, 2, 1e-4, 7).model.weight, TorchLogistic(8, 2, 1e-4, 1111).model.weight)
    assert TorchLogistic(8, 2, 1e-3, 0).optimizer.param_groups[0]["weight_decay"] == 1e-3  # the L2 value
    with pytest.raises(DefSentError, match="unknown protocol 'keras'"):
        task_result(bag_of_words, "unused", "TREC", protocol="keras")


# ------------------------------------------------------------------------------------------ spread

SPREAD_BOOTSTRAP = {"resamples": 1000, "level": 0.95, "seed": 3}


def test_a_split_tasks_interval_is_a_seeded_bootstrap_around_its_accuracy():
    from defsent_plus.evaluation.senteval import split_result

    correct = np.r_[np.ones(80, dtype=bool), np.zeros(20, dtype=bool)]
    result = split_result(correct, SPREAD_BOOTSTRAP)
    spread = result.spread
    assert result.accuracy == 80.0
    assert spread["kind"] == "bootstrap" and spread["examples"] == 100 and spread["level"] == 0.95
    assert 70 < spread["low"] < 80 < spread["high"] < 90  # binomial sd 4 points: about 72-88
    assert split_result(correct, SPREAD_BOOTSTRAP) == result
    assert split_result(correct, {**SPREAD_BOOTSTRAP, "seed": 4}).spread != spread


def test_a_k_fold_tasks_spread_is_the_std_of_its_folds():
    from defsent_plus.evaluation.senteval import fold_result

    folds = np.array([81.0, 79.5, 83.25, 80.0, 78.75])
    result = fold_result(folds)
    assert result.accuracy == round(float(np.mean(folds)), 2)
    assert result.spread == {"kind": "folds", "std": pytest.approx(float(np.std(folds))), "folds": folds.tolist()}


def test_the_spread_section_shows_folds_and_intervals(tmp_path):
    from defsent_plus.evaluation.report import spread_section
    from defsent_plus.evaluation.senteval import fold_result, split_result
    from defsent_plus.io import write_json

    folds = fold_result(np.array([81.0, 79.5, 83.25, 80.0, 78.75]))
    split = split_result(np.r_[np.ones(80, dtype=bool), np.zeros(20, dtype=bool)], SPREAD_BOOTSTRAP)
    write_json(tmp_path / "a.json", {"scores": {}, "spread": {"MR": folds.spread, "TREC": split.spread}})
    write_json(tmp_path / "b.json", {"scores": {}})  # e.g. STS: no spread
    text = spread_section(["model a"], [tmp_path / "a.json"])
    row = next(line for line in text.splitlines() if line.startswith("| model a"))
    assert f"± {np.std([81.0, 79.5, 83.25, 80.0, 78.75]):.2f} (5 folds)" in row
    assert f"{split.spread['low']:.2f}–{split.spread['high']:.2f}" in row
    assert "std of the outer folds" in text
    assert spread_section(["model a", "model b"], [tmp_path / "a.json", tmp_path / "b.json"]) == ""
