"""The baselines summary's intervals and paired tests: the per-pair cosines the grid scorer keeps are the pairs its
scores come from, the plain-mean row is found, and the summary names each row's interval and verdict."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from test_baselines import SCORING, cached_synthetic, synthetic_grid

from defsent_plus.baselines.grid import score_grid
from defsent_plus.baselines.report import (
    AVG_INTERVAL,
    VERSUS_PLAIN,
    best_inductive,
    plain_mean_index,
    plain_mean_label,
    row_uncertainty,
    selected_per_source,
    shown_rows,
    summary_markdown,
)
from defsent_plus.evaluation.sts import aggregate_spearman

BOOTSTRAP = {"resamples": 200, "level": 0.95, "seed": 0}
N_LAYERS = 2  # the synthetic cache's last layer: L2


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    """The synthetic grid's table and every row's per-pair cosines."""
    embeddings, evaluation = cached_synthetic(tmp_path_factory.mktemp("cache"))
    pairs: dict = {}
    return score_grid(synthetic_grid(), embeddings, evaluation, SCORING, pairs=pairs), pairs, evaluation


def test_the_kept_cosines_are_the_pairs_each_score_comes_from(scored):
    table, pairs, evaluation = scored
    assert sorted(pairs) == list(range(len(table)))
    for index, row in table.iterrows():
        for task, parts in evaluation.tasks.items():
            cosines = np.split(pairs[index][task], np.cumsum([len(p.gold) for p in parts])[:-1])
            expected = aggregate_spearman(cosines, [p.gold for p in parts], SCORING["sts_aggregation"])
            assert row[task] == pytest.approx(expected, abs=1e-9)


def test_the_bootstrap_points_are_the_tables_scores(scored):
    table, pairs, evaluation = scored
    shown = shown_rows(table)
    uncertainty = row_uncertainty(shown, plain_mean_index(table, N_LAYERS), pairs, evaluation, "all", BOOTSTRAP)
    for position, index in enumerate(uncertainty.indices):
        intervals = uncertainty.bootstrap.intervals(position)
        assert intervals["avg"].value == pytest.approx(table.loc[index, "avg"], abs=1e-9)
        assert all(interval.low <= interval.value <= interval.high for interval in intervals.values())
    reference = uncertainty.bootstrap.paired(0, 0)["avg"]  # the plain mean against itself: exactly 0, p = 1
    assert reference.difference.value == 0 and not reference.distinguishable and reference.p_value == 1


def test_the_plain_mean_is_the_encoders_last_layer_mean_without_post_processing(scored):
    table, _, _ = scored
    index = plain_mean_index(table, N_LAYERS)
    row = table.loc[index]
    assert (row["source"], row["template"], row["layers"], row["aggregation"], row["postprocess"], row["fit"],
            row["sweep"]) == ("encoder", "none", "L2", "mean", "none", "-", False)
    assert plain_mean_label(N_LAYERS) == "encoder, none, L2, mean, none"
    assert plain_mean_index(table[table.index != index], N_LAYERS) is None


def test_shown_rows_are_every_row_the_summary_names(scored):
    table, _, _ = scored
    shown = shown_rows(table)
    assert len(shown) == len(set(shown))
    assert set(selected_per_source(table).index) | set(best_inductive(table).index) <= set(shown)
    assert int(table["avg"].idxmax()) in shown  # the best row overall is a family's best (transductive or not)


def test_the_summary_gives_each_named_row_its_interval_and_verdict(scored):
    table, pairs, evaluation = scored
    uncertainty = row_uncertainty(shown_rows(table), plain_mean_index(table, N_LAYERS), pairs, evaluation, "all",
                                  BOOTSTRAP)
    text = summary_markdown(table, "t", [], uncertainty, plain_mean_label(N_LAYERS))
    assert AVG_INTERVAL in text and VERSUS_PLAIN in text
    assert "## Paired tests: each named row minus the plain mean (encoder, none, L2, mean, none)" in text
    tests = text.split("## Paired tests")[1]
    compared = [line for line in tests.splitlines() if line.startswith("| ") and " − plain mean " in line]
    assert len(compared) == len(uncertainty.indices) - 1  # every named row but the plain mean
    assert "Cells without intervals" in text
    # without the plain-mean row: intervals still, no paired tests, and the summary says why
    without = row_uncertainty(shown_rows(table), None, pairs, evaluation, "all", BOOTSTRAP)
    text = summary_markdown(table, "t", [], without, None)
    assert AVG_INTERVAL in text and "No paired tests" in text and "## Paired tests" not in text


def test_a_noisier_row_is_distinguishably_worse_through_the_summarys_bootstrap(scored):
    """Known answer: cosines that are the gold plus strong noise score lower than the gold plus weak noise, and the
    paired test over the grid rows' pairs says so."""
    _, _, evaluation = scored
    rng = np.random.default_rng(0)
    gold = {task: np.concatenate([p.gold for p in parts]) for task, parts in evaluation.tasks.items()}

    def noisy(scale: float) -> dict[str, np.ndarray]:
        return {task: values + rng.normal(0, scale * values.std(), len(values)) for task, values in gold.items()}

    pairs = {0: noisy(0.1), 1: noisy(2.0)}
    uncertainty = row_uncertainty([1], 0, pairs, evaluation, "all", {**BOOTSTRAP, "resamples": 500})
    test = uncertainty.bootstrap.paired(1, 0)["avg"]
    assert test.difference.value < 0 and test.distinguishable and test.p_value < 0.05


def test_the_table_is_unchanged_when_the_cosines_are_kept(scored, tmp_path):
    table, _, _ = scored
    embeddings, evaluation = cached_synthetic(tmp_path)
    pd.testing.assert_frame_equal(score_grid(synthetic_grid(), embeddings, evaluation, SCORING), table)
