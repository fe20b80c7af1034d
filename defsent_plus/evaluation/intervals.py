"""Confidence intervals and paired significance tests for STS scores, from stored per-pair similarities
(docs/evaluation.md, "Intervals and paired tests", says how they are computed and read).

Percentile bootstrap of test-set noise: each task's pairs are resampled with replacement within each subset; the
7-set average over distinct sentence pairs (``key``), each with one Poisson(1) count per resample shared by every
task holding it. Two models are compared on the same resamples (the paired bootstrap), with a two-sided,
+1-corrected p-value. A resample is ranked without sorting it: each pair's draw count gives its average rank
(:func:`doubled_ranks`), and the Spearman is the count-weighted Pearson of those ranks (:class:`CountedGold`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from defsent_plus.errors import DefSentError


@dataclass(frozen=True)
class Interval:
    """A score and its percentile-bootstrap interval."""

    value: float
    low: float
    high: float


@dataclass(frozen=True)
class PairedTest:
    """A difference of scores (A - B) on the same test pairs, its paired-bootstrap interval and two-sided p-value."""

    difference: Interval
    p_value: float

    @property
    def distinguishable(self) -> bool:
        """Whether the interval of the difference excludes 0."""
        return not self.difference.low <= 0.0 <= self.difference.high


def row_spearman(predicted: np.ndarray, gold: np.ndarray) -> np.ndarray:
    """Spearman x 100 of every row of ``predicted`` [B, n] with the same row of ``gold`` [B, n], each row ranked by
    scipy's average ranks (the reference :class:`CountedGold` is checked and timed against)."""
    from scipy.stats import rankdata

    rp, rg = (ranks - ranks.mean(axis=1, keepdims=True) for ranks in (rankdata(predicted, axis=1),
                                                                      rankdata(gold, axis=1)))
    denominator = np.sqrt((rp * rp).sum(axis=1)) * np.sqrt((rg * rg).sum(axis=1))
    return 100 * (rp * rg).sum(axis=1) / np.where(denominator > 0, denominator, np.nan)


WIDE_ROWS = 32


def draw_counts(columns: np.ndarray, m: int) -> np.ndarray:
    """[m, B] int32: how often each of ``m`` items was drawn in each resample (``columns`` [B, k]: item numbers);
    items are rows, so that every rank sum below runs over contiguous rows."""
    rows = np.arange(len(columns))[:, None] * m
    counts = np.bincount((columns + rows).ravel(), minlength=len(columns) * m).reshape(len(columns), m)
    return np.ascontiguousarray(counts.T, dtype=np.int32)


def running_sum(rows: np.ndarray) -> np.ndarray:
    """Cumulative sum down the rows of ``rows`` [m, B], a row added at a time when rows are wide (numpy's cumsum
    along the first axis of a C-ordered array is 8x slower at 1,000 resamples, 25x faster for one)."""
    if rows.shape[1] < WIDE_ROWS:
        return np.cumsum(rows, axis=0)
    out = rows.copy()
    for i in range(1, len(out)):
        np.add(out[i], out[i - 1], out=out[i])
    return out


def doubled_ranks(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """[m, B] int: twice the average rank each item's copies take in each resample, the resample being
    ``counts[i, b]`` copies of item i (equal values tie, so every copy of an item, and every item of equal value,
    shares one average rank, as scipy's rankdata gives it; doubled, an average rank is an integer). One sort of the
    ``m`` values for all resamples, instead of one per resample: in value order, with ``below`` the copies before an
    item and ``through`` those up to its last copy, a run of equal values from item s to item e ranks
    ``below[s] + through[e] + 1`` (doubled), a lone item ``below + through + 1``."""
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    sorted_counts = counts[order]
    through = running_sum(sorted_counts)
    below = through - sorted_counts
    doubled = below + through
    doubled += 1
    new_value = np.r_[True, ordered[1:] != ordered[:-1]]
    if not new_value.all():  # runs of equal values (a few percent of the pairs at most, in practice)
        starts = np.flatnonzero(new_value)
        ends = np.r_[starts[1:], len(values)] - 1
        run = np.cumsum(new_value) - 1
        tied = np.flatnonzero((ends - starts)[run] > 0)
        doubled[tied] = below[starts[run[tied]]] + through[ends[run[tied]]] + 1
    ranks = np.empty_like(counts)
    ranks[order] = doubled
    return ranks


@dataclass(frozen=True)
class CountedGold:
    """The gold side of every resample's Spearman, computed once for all the models scored on the same resamples:
    the count-weighted deviations of the gold's doubled ranks from their mean (N + 1, doubled) and their norms."""

    counts: np.ndarray
    middle: np.ndarray
    weighted: np.ndarray
    norms: np.ndarray

    @classmethod
    def of(cls, gold: np.ndarray, counts: np.ndarray) -> CountedGold:
        middle = counts.sum(axis=0, dtype=np.float64) + 1
        deviations = doubled_ranks(gold, counts) - middle
        weighted = counts * deviations
        return cls(counts, middle, weighted, np.sqrt(np.einsum("mb,mb->b", weighted, deviations)))

    def spearman(self, predicted: np.ndarray) -> np.ndarray:
        """[B] Spearman x 100 of ``predicted`` (the m items' values) with the gold in each resample (each item
        weighted by its count); NaN where a side is constant."""
        deviations = doubled_ranks(predicted, self.counts) - self.middle
        covariance = np.einsum("mb,mb->b", self.weighted, deviations)
        norms = np.sqrt(np.einsum("mb,mb,mb->b", self.counts, deviations, deviations))
        denominator = norms * self.norms
        return 100 * covariance / np.where(denominator > 0, denominator, np.nan)


def subset_bounds(subsets: Sequence[str]) -> list[tuple[int, int]]:
    """(start, end) of each run of equal subset names in file order (a task's pairs are stored subset by subset)."""
    values = np.asarray(subsets)
    if len(values) == 0:
        return []
    starts = np.flatnonzero(np.r_[True, values[1:] != values[:-1]])
    ends = np.r_[starts[1:], len(values)]
    if len(set(values[starts])) != len(starts):
        raise DefSentError("per-pair similarities", "a task's subsets are not stored contiguously")
    return list(zip(starts.tolist(), ends.tolist(), strict=True))


def resample(bounds: list[tuple[int, int]], n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """[B, n] pair indices: every subset resampled with replacement within itself, keeping its size."""
    return np.concatenate([rng.integers(start, end, size=(n_resamples, end - start)) for start, end in bounds],
                          axis=1)


@dataclass(frozen=True)
class TaskPairs:
    """One task's stored pairs: gold scores, subset runs, the similarities of one or more models (same pairs) and
    the pairs' identities across tasks (None: files written before they had them)."""

    gold: np.ndarray
    bounds: list[tuple[int, int]]
    similarities: list[np.ndarray]
    keys: np.ndarray | None = None

    def scores_of_counts(self, aggregation: str, counts: np.ndarray) -> list[np.ndarray]:
        """Every model's score on resamples given as each pair's count [n, B] (the gold ranks of a resample
        computed once for all models)."""
        ranges = [(0, len(counts))] if aggregation == "all" else self.bounds  # whose Spearman is taken
        weights = [end - start for start, end in self.bounds] if aggregation == "wmean" else None
        per_model = [[] for _ in self.similarities]
        for start, end in ranges:
            gold = CountedGold.of(self.gold[start:end], np.ascontiguousarray(counts[start:end]))
            for scores, similarity in zip(per_model, self.similarities, strict=True):
                scores.append(gold.spearman(similarity[start:end]))
        return [np.average(np.stack(scores, axis=1), axis=1, weights=weights) for scores in per_model]


def task_pairs(frames: Sequence[pd.DataFrame], task: str) -> TaskPairs:
    """A task's rows of several models' per-pair files, checked to be the same pairs with the same gold scores."""
    rows = [frame[frame["task"] == task] for frame in frames]
    first = rows[0]
    if first.empty:
        raise DefSentError("per-pair similarities", f"no pairs of task {task!r}")
    for other in rows[1:]:
        same = (len(other) == len(first) and (other["subset"].to_numpy() == first["subset"].to_numpy()).all()
                and np.array_equal(other["gold"].to_numpy(), first["gold"].to_numpy()))
        if not same:
            raise DefSentError("per-pair similarities", f"task {task!r}: the models were scored on different pairs")
    keys = first["key"].to_numpy(np.int64) if "key" in first else None
    return TaskPairs(first["gold"].to_numpy(np.float64), subset_bounds(first["subset"].tolist()),
                     [r["similarity"].to_numpy(np.float64) for r in rows], keys)


def resampled_scores(pairs: dict[str, TaskPairs], aggregation: str, n_resamples: int,
                     seed: int) -> dict[str, list[np.ndarray]]:
    """Per task and ``avg``: every model's score on the same ``n_resamples`` resamples of the tasks' pairs (one
    generator, seeded; tasks drawn in ``pairs`` order, so a task's resamples do not depend on which models are
    compared): each task within its subsets, the average over distinct pairs."""
    rng = np.random.default_rng(seed)  # tasks drawn in order
    per_task = {}
    for name, task in pairs.items():
        index = resample(task.bounds, n_resamples, rng)  # [B, n], then each pair's count [n, B]
        counts = np.concatenate([draw_counts(index[:, start:end] - start, end - start) for start, end in task.bounds])
        per_task[name] = task.scores_of_counts(aggregation, counts)
    shared = shared_counts(pairs, n_resamples, seed)
    averaged = with_average({name: task.scores_of_counts(aggregation, shared[name]) for name, task in pairs.items()})
    return {**per_task, "avg": averaged["avg"]}


SHARED_STREAM = 1  # the average's generator: default_rng([seed, SHARED_STREAM]), apart from the tasks' one


def shared_counts(pairs: dict[str, TaskPairs], n_resamples: int, seed: int) -> dict[str, np.ndarray]:
    """Per task [n, B]: one Poisson(1) count per distinct pair and resample, the same in every task holding the pair
    (a task whose file has no keys: its pairs its own)."""
    keys, own = [], -1
    for task in pairs.values():
        if task.keys is None:
            keys.append(np.arange(own, own - len(task.gold), -1))
            own -= len(task.gold)
        else:
            keys.append(task.keys)
    distinct, inverse = np.unique(np.concatenate(keys), return_inverse=True)
    draws = np.random.default_rng([seed, SHARED_STREAM]).poisson(1.0, size=(len(distinct), n_resamples))
    draws = draws.astype(np.int32)
    out, start = {}, 0
    for name, task in pairs.items():
        out[name] = draws[inverse[start : start + len(task.gold)]]
        start += len(task.gold)
    return out


def observed_scores(pairs: dict[str, TaskPairs], aggregation: str) -> dict[str, list[float]]:
    """Per task and ``avg``: every model's score on the tasks' pairs themselves."""
    once = {name: np.ones((len(task.gold), 1), dtype=np.int32) for name, task in pairs.items()}
    out = with_average({name: [float(s[0]) for s in task.scores_of_counts(aggregation, once[name])]
                        for name, task in pairs.items()})
    return {**out, "avg": [float(value) for value in out["avg"]]}


def with_average(per_task: dict[str, list[np.ndarray]]) -> dict[str, list[np.ndarray]]:
    """``per_task`` and ``avg``, each model's mean over the tasks on each resample."""
    n_models = len(next(iter(per_task.values())))
    return {**per_task, "avg": [np.mean([scores[m] for scores in per_task.values()], axis=0)
                                for m in range(n_models)]}


def percentile_interval(value: float, resampled: np.ndarray, level: float) -> Interval:
    """``value`` with the ``level`` percentile interval of its ``resampled`` values (NaN resamples left out)."""
    tail = (1 - level) / 2 * 100
    low, high = np.nanpercentile(resampled, [tail, 100 - tail])
    return Interval(value, float(low), float(high))


def two_sided_p(differences: np.ndarray) -> float:
    """Twice the smaller share of resampled differences on either side of 0, +1-corrected, at most 1."""
    n = len(differences)
    below = (np.count_nonzero(differences <= 0) + 1) / (n + 1)
    above = (np.count_nonzero(differences >= 0) + 1) / (n + 1)
    return float(min(1.0, 2 * min(below, above)))


@dataclass(frozen=True)
class Bootstrap:
    """Several models' scores on the same test pairs and on the same resamples of them: each model's intervals and
    any two models' paired test come from one resampling."""

    points: dict[str, list[float]]
    resampled: dict[str, list[np.ndarray]]
    level: float

    @classmethod
    def of(cls, frames: Sequence[pd.DataFrame], tasks: Sequence[str], aggregation: str, options: dict) -> Bootstrap:
        """``options``: ``resamples``, ``level``, ``seed`` (config ``evaluation.bootstrap``)."""
        return cls.of_pairs({task: task_pairs(frames, task) for task in tasks}, aggregation, options)

    @classmethod
    def of_pairs(cls, pairs: dict[str, TaskPairs], aggregation: str, options: dict) -> Bootstrap:
        """:meth:`of` from every task's pairs (in the order their resamples are drawn)."""
        return cls(observed_scores(pairs, aggregation),
                   resampled_scores(pairs, aggregation, options["resamples"], options["seed"]), options["level"])

    def intervals(self, model: int) -> dict[str, Interval]:
        return {key: percentile_interval(self.points[key][model], resampled[model], self.level)
                for key, resampled in self.resampled.items()}

    def paired(self, a: int, b: int) -> dict[str, PairedTest]:
        """Model ``a`` minus model ``b``."""
        tests = {}
        for key, resampled in self.resampled.items():
            differences = resampled[a] - resampled[b]
            value = self.points[key][a] - self.points[key][b]
            tests[key] = PairedTest(percentile_interval(value, differences, self.level), two_sided_p(differences))
        return tests
