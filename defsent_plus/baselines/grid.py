"""Every combination of a baseline grid scored from the cache: post-processing, the workflow's STS evaluator,
alignment and uniformity (Wang & Isola 2020), and the isotropy of the fit corpus' sentence space.

Post-processing fitted on the ``corpus`` is fitted once on the fit corpus' embeddings (003's "W" variant) and applied
to every evaluated sentence; fitted on ``eval`` it is fitted per STS task on that task's own sentences (and for
alignment/uniformity on their STS-B train sentences) — transductive, and marked so. ``idf_task`` rows are
transductive too; they have no alignment/uniformity (their idf exists only per STS task).

:func:`score_grid` scores a grid block by block, sharing every read, fit and ranking its combinations have in common
(docs/baselines.md "Grid speed"; tests/grid_reference.py scores one combination at a time, the same table).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from joblib import Parallel, delayed, parallel_config
from scipy import sparse
from scipy.stats import rankdata
from threadpoolctl import threadpool_limits

from defsent_plus.baselines.postprocess import fit_chain, fit_transform_chain, transform_rows
from defsent_plus.baselines.sentences import DEV, EvaluationSet, ScoredPart
from defsent_plus.baselines.spec import (
    ENCODER,
    ENCODER_AVG,
    INDEX,
    TRANSDUCTIVE_AGGREGATIONS,
    Combination,
    cache_file,
)
from defsent_plus.errors import DefSentError
from defsent_plus.evaluation.sts import STS_AGGREGATIONS
from defsent_plus.io import read_json, sentences_digest
from defsent_plus.spaces.entry_matrix import check_entry_space, covariance

log = logging.getLogger(__name__)
FIT_CORPUS_KEY = "config: baselines.fit_corpus.max_sentences"
SHAPE_KEY = "STS-B train (alignment and uniformity)"
NO_SHAPE = {"alignment": np.nan, "uniformity": np.nan}
CHUNK_ROWS = 512  # rows gathered at a time: the temporaries stay in cache


def unit_rows(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def alignment(x: np.ndarray, y: np.ndarray) -> float:
    """E ||f(x) - f(y)||^2 over positive pairs, on unit-normalised embeddings (Wang & Isola's alpha = 2)."""
    return float(np.mean(np.sum((unit_rows(x) - unit_rows(y)) ** 2, axis=1)))


class CachedEmbeddings:
    """The sentence embeddings of one encoder's caches (one directory per template)."""

    def __init__(self, caches: dict[str, str | Path], evaluation: EvaluationSet, corpus: Sequence[str]):
        self.roots = {template: Path(root) for template, root in caches.items()}
        for template, root in self.roots.items():
            index = read_json(root / INDEX)
            if index["eval_digest"] != sentences_digest(evaluation.sentences) or \
                    index["corpus_digest"] != sentences_digest(corpus):
                raise DefSentError(root, f"cache of template {template!r} was built from other sentences; delete it "
                                         "and re-run (the evaluation data or the fit corpus changed)")

    def files(self, combination: Combination, split: str) -> list[Path]:
        """The cache files of one split of a combination (two for encoder + Avg.)."""
        sources = (ENCODER, "avg") if combination.source == ENCODER_AVG else (combination.source,)
        return [cache_file(self.roots[combination.template], combination.layers, source, combination.aggregation,
                           split) for source in sources]

    def load(self, combination: Combination, split: str, kept: dict[Path, np.ndarray] | None = None) -> np.ndarray:
        """float64 rows of one split; encoder + Avg. is the mean of the two. ``kept``: the files read so far (a
        block's, each read once), added to as read."""
        kept = {} if kept is None else kept
        paths = self.files(combination, split)
        for path in paths:
            if path not in kept:
                kept[path] = np.load(path)
        arrays = [kept[path].astype(np.float64) for path in paths]
        return arrays[0] if len(arrays) == 1 else np.mean(arrays, axis=0)


# ---------------------------------------------------------------------------------------- the grid, block by block


def gram_uniformity(x: np.ndarray, t: float = 2.0) -> float:
    """The reference's uniformity (tests/grid_reference.py: every pairwise distance) from the Gram matrix of the unit
    rows (|a - b|^2 = |a|^2 + |b|^2 - 2 a.b): the same value to round-off at the cost of one matrix product, each
    pair counted from both sides (the sum over the whole matrix, its diagonal left out, is twice the sum over the
    pairs)."""
    n = len(x)
    if n < 2:
        return float("nan")
    unit = unit_rows(x)
    squared = np.einsum("ij,ij->i", unit, unit)
    exponents = unit @ unit.T
    exponents *= -2.0
    exponents += squared[:, None]
    exponents += squared[None, :]
    np.maximum(exponents, 0.0, out=exponents)
    exponents *= -t
    np.fill_diagonal(exponents, -np.inf)
    top = exponents.max()
    exponents -= top
    np.exp(exponents, out=exponents)
    return float(np.log(exponents.sum() / 2) + top - np.log(n * (n - 1) / 2))


def pair_cosines(vectors: np.ndarray, first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Cosine of each pair (vectors[first[k]], vectors[second[k]]) (0 for a zero vector), a chunk of pairs at a time,
    each row's norm computed once: ``cosine_rows``'s values bit for bit (pairs of one sentence with itself, cosine 1
    up to round-off, are ranked by that round-off)."""
    norms = np.concatenate([np.zeros(0)] + [np.linalg.norm(vectors[start:start + CHUNK_ROWS], axis=1)
                                            for start in range(0, len(vectors), CHUNK_ROWS)])
    out = np.empty(len(first))
    for start in range(0, len(first), CHUNK_ROWS):
        a, b = first[start:start + CHUNK_ROWS], second[start:start + CHUNK_ROWS]
        dots = np.einsum("ij,ij->i", vectors[a], vectors[b])
        out[start:start + CHUNK_ROWS] = dots / np.maximum(norms[a] * norms[b], 1e-12)
    return out


def centred_ranks(values: np.ndarray) -> np.ndarray:
    ranks = rankdata(values)
    return ranks - ranks.mean()


class RankedGold:
    """Spearman x 100 against fixed gold scores, ranked once (spearmanr ranks both sides and correlates the ranks;
    NaN where a side is constant or holds a NaN)."""

    def __init__(self, gold: np.ndarray):
        self.ranks = centred_ranks(gold)
        self.norm = np.sqrt(self.ranks @ self.ranks)

    def spearman_percent(self, predicted: np.ndarray) -> float:
        ranks = centred_ranks(predicted)
        denominator = np.sqrt(ranks @ ranks) * self.norm
        if len(ranks) <= 1 or not denominator > 0:
            return float("nan")
        return float(np.clip((ranks @ self.ranks) / denominator, -1.0, 1.0) * 100)


@dataclass(frozen=True)
class TaskPairs:
    """One STS task (or STS-B dev) ready to score: its distinct rows (sorted), its pairs (parts concatenated) as
    positions among them, and its gold ranked once per scored set."""

    rows: np.ndarray
    positions: tuple[np.ndarray, np.ndarray]
    ends: list[int]  # where each part ends in the concatenation
    gold: list[RankedGold]  # one over the concatenation ("all"), else one per part
    aggregation: str

    def cosines(self, vectors: np.ndarray) -> np.ndarray:
        """The pairs' cosines (parts concatenated) of vectors given for the task's own rows (in ``rows`` order)."""
        return pair_cosines(vectors, *self.positions)

    def spearman(self, similarities: np.ndarray) -> float:
        """:func:`~defsent_plus.evaluation.sts.aggregate_spearman` of the concatenated similarities."""
        if self.aggregation == "all":
            return self.gold[0].spearman_percent(similarities)
        per_part = [gold.spearman_percent(part) for gold, part in
                    zip(self.gold, np.split(similarities, self.ends[:-1]), strict=True)]
        if self.aggregation == "mean":
            return float(np.mean(per_part))
        return float(np.average(per_part, weights=np.diff([0, *self.ends])))


def task_pairs(parts: Sequence[ScoredPart], rows: np.ndarray, aggregation: str) -> TaskPairs:
    if aggregation not in STS_AGGREGATIONS:
        raise DefSentError("config: evaluation.sts_aggregation", f"unknown aggregation {aggregation!r}; expected one "
                                                                 f"of {list(STS_AGGREGATIONS)}")
    positions = tuple(np.searchsorted(rows, np.concatenate([getattr(p, side) for p in parts]))
                      for side in ("rows1", "rows2"))
    golds = [np.concatenate([p.gold for p in parts])] if aggregation == "all" else [p.gold for p in parts]
    return TaskPairs(rows, positions,
                     np.cumsum([len(p.gold) for p in parts]).tolist(), [RankedGold(g) for g in golds], aggregation)


@dataclass(frozen=True)
class ShapeSample:
    """The STS-B train sentences of alignment and uniformity: their distinct rows (sorted) and, as positions among
    them, the positive pairs and the uniformity sample."""

    rows: np.ndarray
    first: np.ndarray
    second: np.ndarray
    uniformity: np.ndarray

    def metrics(self, vectors: np.ndarray) -> dict:
        """Alignment and uniformity of vectors given for ``rows``."""
        return {"alignment": alignment(vectors[self.first], vectors[self.second]),
                "uniformity": gram_uniformity(vectors[self.uniformity])}


def shape_sample(evaluation: EvaluationSet) -> ShapeSample:
    first, second = evaluation.alignment
    rows = np.unique(np.concatenate([first, second, evaluation.uniformity]))
    return ShapeSample(rows, *(np.searchsorted(rows, r) for r in (first, second, evaluation.uniformity)))


def covariance_isoscore(covariance_matrix: np.ndarray) -> float:
    """:func:`~defsent_plus.spaces.isotropy.isoscore_from_variances` of the covariance's eigenvalues, without them:
    the IsoScore sees the variances only through their sum (the trace) and the sum of their squares (the squared
    Frobenius norm). With v normalised to length sqrt(d), |v - 1|^2 = 2d - 2 sqrt(d) sum(v) / |v|."""
    d = len(covariance_matrix)
    total = float(np.trace(covariance_matrix))
    if d < 2 or not total > 0:
        return float("nan")
    length = float(np.sqrt(np.einsum("ij,ij->", covariance_matrix, covariance_matrix)))
    squared_defect = max(2 * d - 2 * np.sqrt(d) * total / length, 0.0) / (2 * (d - np.sqrt(d)))
    dims_used = (d - squared_defect * (d - np.sqrt(d))) ** 2 / d
    return float((dims_used - 1) / (d - 1))


class SpaceIsotropy:
    """IsoScore and mean cosine of a post-processed fit corpus, the values of ``spaces.isotropy`` to round-off:
    the IsoScore from the covariance's trace and Frobenius norm, ``mean_pair_cosine``'s seeded pairs as one sparse
    count matrix."""

    def __init__(self, seed: int, n_pairs: int):
        self.seed, self.n_pairs = seed, n_pairs
        self.counts: dict[int, sparse.csr_matrix] = {}

    def __call__(self, space: np.ndarray) -> dict:
        space = check_entry_space(space, "isoscore")
        return {"isoscore": covariance_isoscore(covariance(space)), "mean_cosine": self.mean_cosine(space)}

    def mean_cosine(self, space: np.ndarray) -> float:
        n = len(space)
        if n < 2:
            return float("nan")
        norms = np.linalg.norm(space, axis=1)
        unit = np.divide(space, norms[:, None], out=np.zeros_like(space), where=norms[:, None] > 0)
        return float(np.sum(unit * (self.pair_counts(n) @ unit)) / self.n_pairs)

    def pair_counts(self, n: int) -> sparse.csr_matrix:
        """[n, n] how often each ordered pair is drawn (mean_pair_cosine's draws)."""
        if n not in self.counts:
            rng = np.random.default_rng(self.seed)
            first = rng.integers(0, n, size=self.n_pairs)
            second = rng.integers(0, n - 1, size=self.n_pairs)
            second += second >= first
            self.counts[n] = sparse.csr_matrix((np.ones(self.n_pairs), (first, second)), shape=(n, n))
        return self.counts[n]


@dataclass(frozen=True)
class GridTargets:
    """What every combination is scored against, prepared once per grid."""

    tasks: dict[str, TaskPairs]
    dev: TaskPairs
    shape: ShapeSample
    isotropy: SpaceIsotropy
    abtt_components: int


def grid_targets(evaluation: EvaluationSet, options: dict) -> GridTargets:
    tasks = {task: task_pairs(parts, evaluation.task_rows(task), options["sts_aggregation"])
             for task, parts in evaluation.tasks.items()}
    return GridTargets(tasks, task_pairs(evaluation.dev, evaluation.task_rows(DEV), "all"), shape_sample(evaluation),
                       SpaceIsotropy(options["isotropy_seed"], options["isotropy_pairs"]), options["abtt_components"])


class EmbeddingRows:
    """The rows of one cached embedding (source, template, layer set, aggregation): its splits loaded once, each
    chain fitted once on the fit corpus, the isotropy of each chain's space measured once."""

    def __init__(self, combination: Combination, embeddings: CachedEmbeddings, kept: dict, targets: GridTargets):
        self.targets = targets
        self.transductive = combination.aggregation in TRANSDUCTIVE_AGGREGATIONS
        self.corpus = embeddings.load(combination, "corpus", kept)
        self.evaluated = None if self.transductive else embeddings.load(combination, "eval", kept)
        self.own = {task: embeddings.load(combination, f"eval-{task}", kept) for task in targets.tasks} \
            if self.transductive else {}
        self.fitted: dict[str, object] = {}
        self.isotropy: dict[str, dict] = {}
        self.subsets: dict[str, np.ndarray] = {}

    def row(self, combination: Combination) -> tuple[dict, dict[str, np.ndarray]]:
        """The combination's row of the grid's table (the reference's, tests/grid_reference.py) and every STS task's
        per-pair cosines (its parts concatenated, in file order)."""
        chain = combination.postprocess
        processed = self.processor(chain, combination.fit)
        tasks, dev, shape = self.targets.tasks, self.targets.dev, self.targets.shape
        cosines = {task: pairs.cosines(processed(task, pairs.rows)) for task, pairs in tasks.items()}
        scores = {task: tasks[task].spearman(values) for task, values in cosines.items()}
        if self.transductive:  # idf_task: no dev idf, no alignment/uniformity
            dev_score, shape_metrics = np.nan, NO_SHAPE
        else:
            dev_score = dev.spearman(dev.cosines(processed(DEV, dev.rows)))
            shape_metrics = shape.metrics(processed(SHAPE_KEY, shape.rows))
        if chain not in self.isotropy:  # of the fit corpus post-processed by the chain, fitted on it whatever the fit
            self.isotropy[chain] = self.targets.isotropy(self.transform(chain, self.corpus))
        return {**vars(combination), "transductive": self.transductive or combination.fit == "eval", **scores,
                "avg": float(np.mean(list(scores.values()))), "dev": dev_score, **shape_metrics,
                **self.isotropy[chain]}, cosines

    def processor(self, chain: str, fit: str) -> Callable[[str, np.ndarray], np.ndarray]:
        """(evaluated set, its evaluation rows) -> the set's vectors post-processed by ``chain``: fitted on the fit
        corpus (every evaluated row transformed once), or with fit ``eval`` on the set itself (transductive); an
        ``idf_task`` task's vectors are its own cached rows."""
        if fit == "eval":
            return lambda name, rows: fit_transform_chain(
                chain, self.own[name] if self.transductive else self.subset(name, rows),
                self.targets.abtt_components, SHAPE_KEY if name == SHAPE_KEY else f"STS task {name}")
        if self.transductive:
            return lambda name, rows: self.transform(chain, self.own[name])
        evaluated = self.transform(chain, self.evaluated)
        return lambda name, rows: evaluated[rows]

    def subset(self, name: str, rows: np.ndarray) -> np.ndarray:
        """The evaluated rows of one set, gathered once for every chain fitted on it."""
        if name not in self.subsets:
            self.subsets[name] = self.evaluated[rows]
        return self.subsets[name]

    def transform(self, chain: str, x: np.ndarray) -> np.ndarray:
        """``x`` post-processed by ``chain`` fitted on the fit corpus (fitted once)."""
        if chain == "none":
            return x
        if chain not in self.fitted:
            self.fitted[chain] = fit_chain(chain, self.corpus, self.targets.abtt_components, FIT_CORPUS_KEY, fast=True)
        return transform_rows(self.fitted[chain], x)


def score_block(block: dict[tuple, list[tuple[int, Combination]]], embeddings: CachedEmbeddings,
                targets: GridTargets, seconds: dict[str, float] | None = None,
                keep_pairs: bool = False) -> list[tuple[int, dict, dict | None]]:
    """(grid index, row, per-pair cosines per STS task when ``keep_pairs`` else None) of every combination of one
    block, one cached embedding after the other; ``seconds``, when given, adds up the time of reading the cache
    (``load``) and of each post-processing (``<chain> <fit>``, what a chain's rows share counted where first
    computed)."""
    kept: dict[Path, np.ndarray] = {}  # the block's cache files, each read once
    scored = []
    for rows in block.values():
        with timed(seconds, "load"):
            embedding = EmbeddingRows(rows[0][1], embeddings, kept, targets)
        for index, combination in rows:
            with timed(seconds, f"{combination.postprocess} {combination.fit}"):
                row, cosines = embedding.row(combination)
            scored.append((index, row, cosines if keep_pairs else None))
    return scored


@contextmanager
def timed(totals: dict[str, float] | None, name: str) -> Iterator[None]:
    """Wall seconds of a ``with`` block added to ``totals[name]`` (nothing is timed when ``totals`` is None)."""
    start = time.perf_counter()
    yield
    if totals is not None:
        totals[name] = totals.get(name, 0.0) + time.perf_counter() - start


def grid_blocks(combinations: Sequence[Combination]) -> list[dict[tuple, list[tuple[int, Combination]]]]:
    """Combinations by block (template, layer set, aggregation: the files encoder, Avg. and encoder + Avg. share),
    then by cached embedding, in grid order."""
    blocks: dict[tuple, dict[tuple, list]] = {}
    for index, c in enumerate(combinations):
        block = blocks.setdefault((c.template, c.layers, c.aggregation), {})
        block.setdefault((c.source, c.template, c.layers, c.aggregation), []).append((index, c))
    return list(blocks.values())


def score_grid(combinations: Sequence[Combination], embeddings: CachedEmbeddings, evaluation: EvaluationSet,
               options: dict, n_jobs: int = 1, pairs: dict[int, dict[str, np.ndarray]] | None = None) -> pd.DataFrame:
    """The grid's table, one row per combination, in grid order (the reference's rows, tests/grid_reference.py);
    ``n_jobs`` processes score blocks side by side, each on one BLAS thread: whitening all directions divides by the
    square roots of near-zero variances, so its numbers depend on BLAS's summation order, and one thread keeps them
    the same whatever the job's threads. ``pairs``, when given, receives every combination's per-pair cosines per
    STS task (by grid index), for the intervals of :mod:`defsent_plus.baselines.report`."""
    start = time.perf_counter()
    targets = grid_targets(evaluation, options)
    rows: list[dict | None] = [None] * len(combinations)
    done = 0
    with parallel_config(backend="loky", inner_max_num_threads=1), threadpool_limits(limits=1):
        scored = Parallel(n_jobs=n_jobs, return_as="generator")(
            delayed(score_block)(block, embeddings, targets, keep_pairs=pairs is not None)
            for block in grid_blocks(combinations))
        for block in scored:
            for index, row, cosines in block:
                rows[index] = row
                if pairs is not None:
                    pairs[index] = cosines
            if (done + len(block)) // 100 > done // 100:
                log.info("scored %d of %d combinations in %.0f s", done + len(block), len(combinations),
                         time.perf_counter() - start)
            done += len(block)
    return pd.DataFrame(rows)
