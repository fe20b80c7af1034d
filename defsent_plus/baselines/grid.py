"""Every combination of a baseline grid scored from the cache: post-processing, the workflow's STS evaluator,
alignment and uniformity (Wang & Isola 2020), and the isotropy of the fit corpus' sentence space.

Post-processing fitted on the ``corpus`` is fitted once on the fit corpus' embeddings (003's "W" variant) and applied
to every evaluated sentence; fitted on ``eval`` it is fitted per STS task on that task's own sentences (and for
alignment/uniformity on their STS-B train sentences) — transductive, and marked so. ``idf_task`` rows are
transductive too; they have no alignment/uniformity (their idf exists only per STS task).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from scipy.spatial.distance import pdist
from scipy.special import logsumexp

from defsent_plus.baselines.extract import INDEX, cache_file
from defsent_plus.baselines.postprocess import apply_chain, fit_chain
from defsent_plus.baselines.sentences import DEV, EvaluationSet, sentences_digest
from defsent_plus.baselines.spec import ENCODER, ENCODER_AVG, TRANSDUCTIVE_AGGREGATIONS, Combination
from defsent_plus.errors import DefSentError
from defsent_plus.evaluation.sts import aggregate_spearman, cosine_rows
from defsent_plus.io import read_json
from defsent_plus.spaces.isotropy import isoscore, mean_pair_cosine

log = logging.getLogger(__name__)
FIT_CORPUS_KEY = "config: baselines.fit_corpus.max_sentences"


def unit_rows(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def alignment(x: np.ndarray, y: np.ndarray) -> float:
    """E ||f(x) - f(y)||^2 over positive pairs, on unit-normalised embeddings (Wang & Isola's alpha = 2)."""
    return float(np.mean(np.sum((unit_rows(x) - unit_rows(y)) ** 2, axis=1)))


def uniformity(x: np.ndarray, t: float = 2.0) -> float:
    """log E exp(-t ||f(x) - f(y)||^2) over all distinct pairs, on unit-normalised embeddings."""
    distances = pdist(unit_rows(x), "sqeuclidean")
    return float(logsumexp(-t * distances) - np.log(len(distances)))


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

    def load(self, combination: Combination, split: str) -> np.ndarray:
        """float64 rows of one split; encoder + Avg. is the mean of the two."""
        sources = (ENCODER, "avg") if combination.source == ENCODER_AVG else (combination.source,)
        arrays = [np.load(cache_file(self.roots[combination.template], combination.layers, source,
                                     combination.aggregation, split), mmap_mode="r") for source in sources]
        return np.mean([np.asarray(a, dtype=np.float64) for a in arrays], axis=0)

    def task(self, combination: Combination, task: str, rows: np.ndarray, evaluated: np.ndarray | None) -> np.ndarray:
        """A task's distinct rows (in ``rows`` order): its own array for ``idf_task``, else rows of ``evaluated``."""
        if combination.aggregation in TRANSDUCTIVE_AGGREGATIONS:
            return self.load(combination, f"eval-{task}")
        return evaluated[rows]


def task_vectors(combination: Combination, embeddings: CachedEmbeddings, evaluation: EvaluationSet, task: str,
                 evaluated: np.ndarray | None, processed) -> tuple[np.ndarray, np.ndarray]:
    """A task's post-processed vectors and, per evaluation row, its position among them."""
    rows = evaluation.task_rows(task)
    vectors = processed(embeddings.task(combination, task, rows, evaluated), f"STS task {task}")
    position = np.full(len(evaluation.sentences), -1)
    position[rows] = np.arange(len(rows))
    return vectors, position


def post_processor(combination: Combination, corpus: np.ndarray, abtt_components: int):
    """``(x, where) -> x post-processed``: fitted once on the corpus, or (fit ``eval``) on each ``x`` itself."""
    chain = combination.postprocess
    if combination.fit == "eval":
        return lambda x, where: apply_chain(chain, x, x, abtt_components, where)
    fitted = fit_chain(chain, corpus, abtt_components, FIT_CORPUS_KEY)
    return lambda x, where: fitted.transform(x)


def score_combination(combination: Combination, embeddings: CachedEmbeddings, evaluation: EvaluationSet,
                      options: dict) -> dict:
    """One row of the grid's table."""
    transductive = combination.aggregation in TRANSDUCTIVE_AGGREGATIONS
    corpus = embeddings.load(combination, "corpus")
    evaluated = None if transductive else embeddings.load(combination, "eval")
    processed = post_processor(combination, corpus, options["abtt_components"])
    if evaluated is not None and combination.fit != "eval":  # fitted on the corpus: transform every sentence once
        evaluated = processed(evaluated, FIT_CORPUS_KEY)
        per_task = unchanged
    else:
        per_task = processed

    scores = {}
    for task, parts in evaluation.tasks.items():
        vectors, position = task_vectors(combination, embeddings, evaluation, task, evaluated, per_task)
        similarities = [cosine_rows(vectors[position[p.rows1]], vectors[position[p.rows2]]) for p in parts]
        scores[task] = aggregate_spearman(similarities, [p.gold for p in parts], options["sts_aggregation"])
    row = {**vars(combination), "transductive": transductive or combination.fit == "eval", **scores,
           "avg": float(np.mean(list(scores.values()))), "dev": np.nan}
    if not transductive:  # STS-B dev, the selection score (idf_task has no dev idf)
        vectors, position = task_vectors(combination, embeddings, evaluation, DEV, evaluated, per_task)
        similarities = [cosine_rows(vectors[position[p.rows1]], vectors[position[p.rows2]]) for p in evaluation.dev]
        row["dev"] = aggregate_spearman(similarities, [p.gold for p in evaluation.dev], "all")
    row.update(shape_metrics(evaluated, per_task, processed(corpus, FIT_CORPUS_KEY), evaluation, options))
    return row


def unchanged(x: np.ndarray, where: str) -> np.ndarray:
    return x


def shape_metrics(evaluated: np.ndarray | None, processed, space: np.ndarray, evaluation: EvaluationSet,
                  options: dict) -> dict:
    """Alignment and uniformity (STS-B train, ``processed`` unless already) and the isotropy of the post-processed
    fit corpus ``space``."""
    metrics = {"alignment": np.nan, "uniformity": np.nan}
    if evaluated is not None:
        first, second = evaluation.alignment
        rows = np.unique(np.concatenate([first, second, evaluation.uniformity]))
        position = np.full(len(evaluation.sentences), -1)
        position[rows] = np.arange(len(rows))
        vectors = processed(evaluated[rows], "STS-B train (alignment and uniformity)")
        metrics["alignment"] = alignment(vectors[position[first]], vectors[position[second]])
        metrics["uniformity"] = uniformity(vectors[position[evaluation.uniformity]])
    metrics["isoscore"] = isoscore(space)
    metrics["mean_cosine"] = mean_pair_cosine(space, options["isotropy_seed"], options["isotropy_pairs"])
    return metrics


def score_grid(combinations: Sequence[Combination], embeddings: CachedEmbeddings, evaluation: EvaluationSet,
               options: dict, n_jobs: int = 1) -> pd.DataFrame:
    """The grid's table, one row per combination, in grid order; ``n_jobs`` processes score combinations side by
    side (each combination is independent and deterministic)."""
    scored = Parallel(n_jobs=n_jobs, return_as="generator")(
        delayed(score_combination)(combination, embeddings, evaluation, options) for combination in combinations)
    rows = []
    for row in scored:
        rows.append(row)
        if len(rows) % 100 == 0:
            log.info("scored %d of %d combinations", len(rows), len(combinations))
    return pd.DataFrame(rows)
