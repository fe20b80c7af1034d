"""The baselines grid's per-combination reference scorer, kept out of the package as the tests' oracle and the
benchmark's baseline (tests/test_baselines.py, bench/bench_baselines_grid.py): :func:`score_combination` scores one
combination from scratch (its own cache reads, post-processing fitted for it alone, every task's gold ranked again,
uniformity from every pairwise distance), where :func:`defsent_plus.baselines.grid.score_grid` scores a grid block by
block with shared work; both give the same table.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial.distance import pdist
from scipy.special import logsumexp

from defsent_plus.baselines.grid import FIT_CORPUS_KEY, SHAPE_KEY, CachedEmbeddings, alignment, unit_rows
from defsent_plus.baselines.postprocess import fit_chain
from defsent_plus.baselines.sentences import DEV, EvaluationSet
from defsent_plus.baselines.spec import TRANSDUCTIVE_AGGREGATIONS, Combination
from defsent_plus.evaluation.sts import aggregate_spearman, cosine_rows
from defsent_plus.spaces.entry_matrix import check_entry_space, second_moments
from defsent_plus.spaces.isotropy import descending_eigh, isoscore_from_variances, mean_pair_cosine


def isoscore(E: np.ndarray) -> float:
    """IsoScore of the entry space E [n, d] from its covariance's eigenvalues: 1 for isotropic, 0 when one direction
    holds all variance."""
    variances, _ = descending_eigh(second_moments(check_entry_space(E, "isoscore")).covariance)
    return isoscore_from_variances(variances)


def uniformity(x: np.ndarray, t: float = 2.0) -> float:
    """log E exp(-t ||f(x) - f(y)||^2) over all distinct pairs, on unit-normalised embeddings."""
    distances = pdist(unit_rows(x), "sqeuclidean")
    return float(logsumexp(-t * distances) - np.log(len(distances)))



def apply_chain(chain: str, fit: np.ndarray, evaluated: np.ndarray, abtt_components: int, where: str,
                fast: bool = False) -> np.ndarray:
    """``evaluated`` post-processed by ``chain`` fitted on ``fit`` (both float64 inside), through scikit-learn's own
    ``transform``."""
    if chain == "none":
        return evaluated
    pipeline = fit_chain(chain, np.asarray(fit, dtype=np.float64), abtt_components, where, fast)
    return pipeline.transform(np.asarray(evaluated, dtype=np.float64))


def task_rows(combination: Combination, embeddings: CachedEmbeddings, task: str, rows: np.ndarray,
              evaluated: np.ndarray | None) -> np.ndarray:
    """A task's distinct rows (in ``rows`` order): its own array for ``idf_task``, else rows of ``evaluated``."""
    if combination.aggregation in TRANSDUCTIVE_AGGREGATIONS:
        return embeddings.load(combination, f"eval-{task}")
    return evaluated[rows]


def task_vectors(combination: Combination, embeddings: CachedEmbeddings, evaluation: EvaluationSet, task: str,
                 evaluated: np.ndarray | None, processed) -> tuple[np.ndarray, np.ndarray]:
    """A task's post-processed vectors and, per evaluation row, its position among them."""
    rows = evaluation.task_rows(task)
    vectors = processed(task_rows(combination, embeddings, task, rows, evaluated), f"STS task {task}")
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
        vectors = processed(evaluated[rows], SHAPE_KEY)
        metrics["alignment"] = alignment(vectors[position[first]], vectors[position[second]])
        metrics["uniformity"] = uniformity(vectors[position[evaluation.uniformity]])
    metrics["isoscore"] = isoscore(space)
    metrics["mean_cosine"] = mean_pair_cosine(space, options["isotropy_seed"], options["isotropy_pairs"])
    return metrics
