"""The uncertainty of the rows a baseline summary shows: their per-pair cosines (what the evaluator's per-pair files
hold), one bootstrap over all of them (:class:`~defsent_plus.evaluation.intervals.Bootstrap`: the same resampled
pairs for every row), each row's intervals and its paired test against the plain mean (the encoder's own mean pooling
of its last layer, no template, no post-processing: what a trained model's "base" row is)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from defsent_plus.baselines.sentences import EvaluationSet
from defsent_plus.baselines.spec import ENCODER, NO_FIT, layer_set_name
from defsent_plus.baselines.templates import NO_TEMPLATE
from defsent_plus.evaluation.intervals import Bootstrap, TaskPairs

PLAIN_MEAN = {"source": ENCODER, "template": NO_TEMPLATE, "aggregation": "mean", "postprocess": "none", "fit": NO_FIT}


def plain_mean_label(n_layers: int) -> str:
    """The plain-mean row as the summary names combinations (source, template, layers, aggregation, post-processing)."""
    return ", ".join([PLAIN_MEAN["source"], PLAIN_MEAN["template"], layer_set_name((n_layers,)),
                      PLAIN_MEAN["aggregation"], PLAIN_MEAN["postprocess"]])


def plain_mean_index(table: pd.DataFrame, n_layers: int) -> int | None:
    """The grid index of the plain-mean row (a grid row before a layer-sweep row of the same combination), or None
    when the grid has none."""
    matches = table[(table[list(PLAIN_MEAN)] == pd.Series(PLAIN_MEAN)).all(axis=1)
                    & (table["layers"] == layer_set_name((n_layers,)))]
    return None if matches.empty else int(matches.sort_values("sweep", kind="stable").index[0])


def task_pairs(pairs: Sequence[dict[str, np.ndarray]], evaluation: EvaluationSet) -> dict[str, TaskPairs]:
    """Every STS task's gold, subset bounds (its parts in file order) and the per-pair cosines of each grid row of
    ``pairs``: the evaluator's per-pair files without writing them."""
    out = {}
    for task, parts in evaluation.tasks.items():
        ends = np.cumsum([len(p.gold) for p in parts]).tolist()
        out[task] = TaskPairs(np.concatenate([p.gold for p in parts]).astype(np.float64),
                              list(zip([0, *ends[:-1]], ends, strict=True)), [cosines[task] for cosines in pairs])
    return out


@dataclass(frozen=True)
class RowUncertainty:
    """Intervals of the shown rows and their paired tests against the plain mean (``reference``: its position in
    ``indices``, or None when the grid has no plain-mean row)."""

    indices: list[int]
    bootstrap: Bootstrap
    reference: int | None
    options: dict

    def position(self, index: int) -> int:
        return self.indices.index(index)


def row_uncertainty(shown: Sequence[int], reference: int | None, pairs: dict[int, dict[str, np.ndarray]],
                    evaluation: EvaluationSet, aggregation: str, options: dict) -> RowUncertainty:
    """One bootstrap (``options``: config ``evaluation.bootstrap``) over the ``shown`` grid rows and the reference,
    the reference first."""
    indices = list(dict.fromkeys([*([] if reference is None else [reference]), *shown]))
    bootstrap = Bootstrap.of_pairs(task_pairs([pairs[index] for index in indices], evaluation), aggregation, options)
    return RowUncertainty(indices, bootstrap, None if reference is None else 0, options)
