"""SentEval transfer tasks (MR, CR, SUBJ, MPQA, SST2, TREC, MRPC) with frozen embeddings and logistic regression.

SentEval's protocol as its code runs it (``kfold=10``, seed 1111; docs/evaluation.md, "SentEval transfer"): every
task's examples in SentEval's order (:func:`senteval_order`), which decides the seeded folds; MR, CR, SUBJ, MPQA by
nested 10-fold CV (``InnerKFoldClassifier``: the score is the mean of the outer folds' accuracies); SST2 with C chosen
on dev (``SplitClassifier``); TREC and MRPC with C chosen by 10-fold CV on train (``KFoldClassifier``), MRPC's
features ``[|u - v|; u * v]``. C is the first of the best mean accuracies rounded to two decimals in %, every accuracy
is rounded as SentEval's, and features are not standardised. The classifiers: :mod:`.senteval_classifiers`.

Deliberate difference: files are read as UTF-8 (SentEval reads MR/CR/SUBJ/MPQA as Latin-1); TREC is Latin-1 as in
SentEval. Empty lines in CR and MPQA are kept as (empty) sentences, as SentEval does.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed
from sklearn.model_selection import StratifiedKFold

from defsent_plus.errors import DefSentError
from defsent_plus.evaluation.intervals import percentile_interval
from defsent_plus.evaluation.senteval_classifiers import PROTOCOLS, VALIDATION_SPLIT, Protocol
from defsent_plus.evaluation.sts import Embed, embed_unique, normalise_space, read_tsv

log = logging.getLogger(__name__)

TRANSFER_TASKS = ("MR", "CR", "SUBJ", "MPQA", "SST2", "TREC", "MRPC")
"""The seven transfer tasks of the paper's Table 4, in its order."""

FOLD_SEED = 1111  # InnerKFoldClassifier's fold splits, outer and inner (fixed in SentEval's code)

DEFAULT_SEED = 1111  # SentEval's default
BINARY_FILES = {  # task -> (label-1 file, label-0 file)
    "MR": ("MR/rt-polarity.pos", "MR/rt-polarity.neg"),
    "CR": ("CR/custrev.pos", "CR/custrev.neg"),
    "SUBJ": ("SUBJ/subj.objective", "SUBJ/subj.subjective"),
    "MPQA": ("MPQA/mpqa.pos", "MPQA/mpqa.neg"),
}
TREC_FILES = {"train": ("train_5500.label", "latin-1"), "test": ("TREC_10.label", "latin-1")}
TREC_CLASSES = ("ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM")


@dataclass(frozen=True)
class Labelled:
    """Examples with integer class labels: ``texts`` holds one list of sentences, or two for sentence pairs (the
    first and second sentence of each pair)."""

    texts: tuple[list[str], ...]
    labels: np.ndarray

    def __len__(self) -> int:
        return len(self.labels)

    def take(self, index: Sequence[int] | np.ndarray) -> Labelled:
        """The examples at ``index``, in its order."""
        return Labelled(tuple([column[i] for i in index] for column in self.texts), self.labels[index])


# ---------------------------------------------------------------- loaders


def read_lines(path: Path, encoding: str = "utf-8") -> list[str]:
    """Lines of a text file without their line ends (``str.splitlines`` semantics, as SentEval)."""
    if not path.is_file():
        raise DefSentError(path, "file not found (expected SentEval's data/downstream layout)")
    try:
        return path.read_text(encoding=encoding).splitlines()
    except UnicodeDecodeError as err:
        line = path.read_bytes()[: err.start].count(b"\n") + 1
        raise DefSentError(path, f"not valid {encoding} text: {err.reason}", line=line) from None


def parse_label(text: str, path: Path, line: int, allowed: Sequence[str] = ("0", "1")) -> str:
    if text not in allowed:
        raise DefSentError(path, f"expected a label in {list(allowed)}, got {text!r}", line=line)
    return text


def load_binary(senteval_dir: str | Path, task: str) -> Labelled:
    """MR, CR, SUBJ or MPQA: one sentence a line, one file per class (first file = label 1)."""
    positive, negative = (read_lines(Path(senteval_dir) / name) for name in BINARY_FILES[task])
    sentences = [normalise_space(s) for s in positive + negative]
    return Labelled((sentences,), np.array([1] * len(positive) + [0] * len(negative)))


def load_trec(senteval_dir: str | Path, split: str) -> Labelled:
    """TREC ``COARSE:fine question`` lines; labels index :data:`TREC_CLASSES`."""
    name, encoding = TREC_FILES[split]
    path = Path(senteval_dir) / "TREC" / name
    sentences, labels = [], []
    for line, text in enumerate(read_lines(path, encoding), start=1):
        coarse, _, rest = text.partition(":")
        fine_and_question = rest.split(maxsplit=1)
        if len(fine_and_question) != 2:
            raise DefSentError(path, f"expected 'COARSE:fine question', got {text[:60]!r}", line=line)
        labels.append(TREC_CLASSES.index(parse_label(coarse, path, line, TREC_CLASSES)))
        sentences.append(normalise_space(fine_and_question[1]))
    return Labelled((sentences,), np.array(labels))


TAB_SPLITS = {  # task -> (file of a split, encoding, header lines, fields, label column, sentence columns, layout)
    "SST2": ("SST/binary/sentiment-{split}", "utf-8", 0, 2, 1, (0,), "'sentence<TAB>label'"),
    "MRPC": ("MRPC/msr_paraphrase_{split}.txt", "utf-8-sig", 1, 5, 0, (3, 4), "5 tab-separated fields"),
}


def load_tab_split(task: str, senteval_dir: str | Path, split: str) -> Labelled:
    """SST-2 ``sentiment-{train,dev,test}`` (sentence, tab, 0/1 label) or MRPC ``msr_paraphrase_{train,test}.txt``
    (header, then Quality, #1 ID, #2 ID, #1 String, #2 String), read by the task's :data:`TAB_SPLITS` row."""
    name, encoding, header, width, label, columns, layout = TAB_SPLITS[task]
    path = Path(senteval_dir) / name.format(split=split)
    texts, labels = tuple([] for _ in columns), []
    for line, fields in read_tsv(path, encoding=encoding):
        if line <= header:
            continue
        if len(fields) != width:
            raise DefSentError(path, f"expected {layout}, got {len(fields)} fields", line=line)
        labels.append(int(parse_label(fields[label].strip(), path, line)))
        for sentences, column in zip(texts, columns, strict=True):
            sentences.append(normalise_space(fields[column]))
    return Labelled(texts, np.array(labels))


SPLIT_LOADERS = {"SST2": (partial(load_tab_split, "SST2"), ("train", "dev", "test")),
                 "TREC": (load_trec, ("train", "test")),
                 "MRPC": (partial(load_tab_split, "MRPC"), ("train", "test"))}  # the tasks with splits: loader, splits


def load_transfer_task(senteval_dir: str | Path, task: str) -> dict[str, Labelled]:
    """The splits of one task: ``{"all"}`` for the CV tasks, else ``train`` / (``dev``) / ``test``."""
    if task in BINARY_FILES:
        return {"all": load_binary(senteval_dir, task)}
    if task not in SPLIT_LOADERS:
        raise DefSentError("tasks", f"unknown transfer task {task!r}; expected one of {list(TRANSFER_TASKS)}")
    load, splits = SPLIT_LOADERS[task]
    return {split: load(senteval_dir, split) for split in splits}


def words(text: str) -> int:
    return len(text.split())


def latin1_words(text: str) -> int:
    """Words as SentEval counts them in a file it reads as Latin-1 (MR, CR, SUBJ, MPQA): a UTF-8 character whose
    bytes decode to a no-break space (0xA0) splits a word there."""
    return len(text.encode("utf-8").decode("latin-1").split())


def senteval_order(data: Labelled, count=words) -> Labelled:
    """The examples in SentEval's order: sorted by word count (``count``; pairs: first sentence's, then second's),
    then label, stably, as each task's ``run`` sorts them "to reduce padding" before its seeded folds split them."""
    keys = [(*map(count, texts), int(y)) for *texts, y in zip(*data.texts, data.labels, strict=True)]
    return data.take(sorted(range(len(keys)), key=keys.__getitem__))


def subsample(data: Labelled, size: int | None, seed: int) -> Labelled:
    """At most ``size`` examples, drawn without replacement with a seeded generator (order kept)."""
    if size is None or len(data) <= size:
        return data
    return data.take(np.sort(np.random.default_rng(seed).choice(len(data), size, replace=False)))


# ---------------------------------------------------------------- features and classifiers


def sentences_of(data: Labelled) -> list[str]:
    return [sentence for column in data.texts for sentence in column]


def features(data: Labelled, vectors: dict[str, np.ndarray]) -> np.ndarray:
    """Sentence embeddings; for pairs SentEval's MRPC features ``[|u - v|; u * v]``."""
    columns = [np.stack([vectors[s] for s in column]) for column in data.texts]
    if len(columns) == 2:
        u, v = columns
        return np.hstack([np.abs(u - v), u * v])
    return columns[0]


def fold_score(x: np.ndarray, y: np.ndarray, train: np.ndarray, test: np.ndarray, reg: float, seed: int,
               protocol: Protocol = PROTOCOLS["sklearn"]) -> float:
    """Accuracy (0-1) on ``test`` of the classifier fitted on ``train`` (the PyTorch protocol stops early on ``test``,
    as SentEval's does while it chooses the regularisation)."""
    return protocol.fit(x[train], y[train], reg, seed, (x[test], y[test])).score(x[test], y[test])


def percent(accuracy: float) -> float:
    """SentEval's ``round(100 * accuracy, 2)``: its scores, and what its C selection compares."""
    return round(100 * float(accuracy), 2)


def chosen_c(x: np.ndarray, y: np.ndarray, grid: Sequence[float], folds: StratifiedKFold, seed: int,
             n_jobs: int | None, protocol: Protocol = PROTOCOLS["sklearn"]) -> float:
    """The regularisation whose mean fold accuracy, rounded to two decimals in %, is highest (the first of equals:
    SentEval's ``regs[np.argmax(scores)]``)."""
    splits = list(folds.split(x, y))
    fitted = Parallel(n_jobs=n_jobs)(delayed(fold_score)(x, y, train, test, c, seed, protocol) for c in grid
                                     for train, test in splits)
    means = [percent(np.mean(fitted[i * len(splits):(i + 1) * len(splits)])) for i in range(len(grid))]
    return grid[int(np.argmax(means))]


@dataclass(frozen=True)
class TaskResult:
    """A transfer task's accuracy (%) and its spread: over the outer folds (k-fold tasks: their accuracies, whose
    mean is the score) or, for a task with a test split, a percentile-bootstrap interval over the test examples."""

    accuracy: float
    spread: dict


def fold_result(fold_accuracies: np.ndarray) -> TaskResult:
    folds = [float(a) for a in fold_accuracies]
    return TaskResult(round(float(np.mean(folds)), 2), {"kind": "folds", "std": float(np.std(folds)),
                                                        "folds": folds})


def split_result(correct: np.ndarray, bootstrap: dict) -> TaskResult:
    """Accuracy of the test predictions ``correct`` (bool per example) and its interval (``bootstrap``:
    ``resamples``, ``level``, ``seed``)."""
    correct = np.asarray(correct, dtype=np.float64)
    index = np.random.default_rng(bootstrap["seed"]).integers(0, len(correct), (bootstrap["resamples"], len(correct)))
    interval = percentile_interval(percent(correct.mean()), correct[index].mean(axis=1) * 100, bootstrap["level"])
    return TaskResult(interval.value, {"kind": "bootstrap", "low": interval.low, "high": interval.high,
                                       "level": bootstrap["level"], "examples": len(correct)})


def nested_cv_folds(x: np.ndarray, y: np.ndarray, seed: int, kfold: int = 10, n_jobs: int | None = None,
                    protocol: Protocol = PROTOCOLS["sklearn"]) -> np.ndarray:
    """Outer-fold test accuracies (%, rounded as SentEval's) with the regularisation chosen by an inner CV in every
    fold, then refitted on the fold's training part (InnerKFoldClassifier: both fold splits seeded 1111, whatever
    the task's seed)."""
    outer = StratifiedKFold(n_splits=kfold, shuffle=True, random_state=FOLD_SEED)
    inner = StratifiedKFold(n_splits=kfold, shuffle=True, random_state=FOLD_SEED)
    accuracies = []
    for train, test in outer.split(x, y):
        reg = chosen_c(x[train], y[train], protocol.grids["inner_kfold"], inner, seed, n_jobs, protocol)
        fitted = protocol.fit(x[train], y[train], reg, seed, VALIDATION_SPLIT)
        accuracies.append(percent(fitted.score(x[test], y[test])))
    return np.array(accuracies)


def cv_selected_correct(
    x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, y_test: np.ndarray,
    seed: int, kfold: int = 10, n_jobs: int | None = None, protocol: Protocol = PROTOCOLS["sklearn"],
) -> np.ndarray:
    """Whether each test example is classified correctly, with the regularisation chosen by k-fold CV on train
    (seeded with ``seed``) and the classifier refit on all of train (KFoldClassifier)."""
    folds = StratifiedKFold(n_splits=kfold, shuffle=True, random_state=seed)
    reg = chosen_c(x_train, y_train, protocol.grids["kfold"], folds, seed, n_jobs, protocol)
    return protocol.fit(x_train, y_train, reg, seed, VALIDATION_SPLIT).predict(x_test) == y_test


def dev_selected_correct(
    x_train: np.ndarray, y_train: np.ndarray, x_dev: np.ndarray, y_dev: np.ndarray,
    x_test: np.ndarray, y_test: np.ndarray, seed: int, protocol: Protocol = PROTOCOLS["sklearn"],
) -> np.ndarray:
    """Whether each test example is classified correctly with the regularisation chosen on dev (its accuracy rounded
    as SentEval's; the first of equals), the classifier trained on train only (SplitClassifier; the PyTorch protocol
    stops early on dev)."""
    grid = protocol.grids["split"]
    dev_scores = [percent(protocol.fit(x_train, y_train, reg, seed, (x_dev, y_dev)).score(x_dev, y_dev))
                  for reg in grid]
    best = grid[int(np.argmax(dev_scores))]
    return protocol.fit(x_train, y_train, best, seed, (x_dev, y_dev)).predict(x_test) == y_test


DEFAULT_BOOTSTRAP = {"resamples": 1000, "level": 0.95, "seed": 0}  # the schema's evaluation.bootstrap defaults


def task_result(
    embed: Embed, senteval_dir: str | Path, task: str, seed: int = DEFAULT_SEED, kfold: int = 10,
    max_examples: int | None = None, n_jobs: int | None = None, bootstrap: dict | None = None,
    protocol: str = "sklearn",
) -> TaskResult:
    """Accuracy (%) of one transfer task under a classifier ``protocol`` (:data:`PROTOCOLS`) and its spread; every
    distinct sentence of the task is embedded once; ``max_examples`` subsamples every split (for quick tests)."""
    if protocol not in PROTOCOLS:
        raise DefSentError("config: evaluation.senteval_protocol", f"unknown protocol {protocol!r}; expected one of "
                                                                   f"{list(PROTOCOLS)}")
    chosen = PROTOCOLS[protocol]
    count = latin1_words if task in BINARY_FILES else words
    splits = {name: subsample(senteval_order(data, count), max_examples, seed)
              for name, data in load_transfer_task(senteval_dir, task).items()}
    vectors = embed_unique(embed, [s for data in splits.values() for s in sentences_of(data)])
    xy = {name: (features(data, vectors), data.labels) for name, data in splits.items()}
    if "all" in xy:
        return fold_result(nested_cv_folds(*xy["all"], seed=seed, kfold=kfold, n_jobs=n_jobs, protocol=chosen))
    if "dev" in xy:
        correct = dev_selected_correct(*xy["train"], *xy["dev"], *xy["test"], seed=seed, protocol=chosen)
    else:
        correct = cv_selected_correct(*xy["train"], *xy["test"], seed=seed, kfold=kfold, n_jobs=n_jobs,
                                      protocol=chosen)
    return split_result(correct, bootstrap or DEFAULT_BOOTSTRAP)


def senteval_results(
    embed: Embed, senteval_dir: str | Path, tasks: Sequence[str] = TRANSFER_TASKS, seed: int = DEFAULT_SEED,
    kfold: int = 10, max_examples: int | None = None, n_jobs: int | None = None, bootstrap: dict | None = None,
    protocol: str = "sklearn",
) -> dict[str, TaskResult]:
    """Every task's :class:`TaskResult`; deterministic for a fixed ``seed``."""
    unknown = [task for task in tasks if task not in TRANSFER_TASKS]
    if unknown:
        raise DefSentError("tasks", f"unknown transfer task(s) {unknown}; expected some of {list(TRANSFER_TASKS)}")
    results = {}
    for task in tasks:
        start = time.perf_counter()
        results[task] = task_result(embed, senteval_dir, task, seed, kfold, max_examples, n_jobs, bootstrap, protocol)
        log.info("SentEval %s (%s): %.2f%% (%.0f s)", task, protocol, results[task].accuracy,
                 time.perf_counter() - start)
    return results


def scores_of(results: dict[str, TaskResult]) -> dict[str, float]:
    """Accuracy per task plus ``avg``."""
    scores = {task: result.accuracy for task, result in results.items()}
    return {**scores, "avg": float(np.mean(list(scores.values())))}
