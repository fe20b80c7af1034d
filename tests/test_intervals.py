"""Bootstrap intervals and paired tests on synthetic per-pair similarities with known answers."""

import numpy as np
import pandas as pd
import pytest
from conftest import REPO
from scipy.stats import rankdata, spearmanr

from defsent_plus.errors import DefSentError
from defsent_plus.evaluation.intervals import (
    Bootstrap,
    observed_scores,
    resample,
    resampled_scores,
    row_spearman,
    subset_bounds,
    task_pairs,
)
from defsent_plus.evaluation.sts import aggregate_spearman


def frame(gold: np.ndarray, similarity: np.ndarray, subsets: list[str], task: str = "T") -> pd.DataFrame:
    return pd.DataFrame({"task": task, "subset": subsets, "pair": np.arange(len(gold)), "gold": gold,
                         "similarity": similarity})


def score_intervals(frame, tasks, aggregation, n_resamples, level, seed):
    """Every task's score and ``avg`` with its percentile-bootstrap interval."""
    return Bootstrap.of([frame], tasks, aggregation, {"resamples": n_resamples, "level": level, "seed": seed}
                        ).intervals(0)


def paired_tests(frame_a, frame_b, tasks, aggregation, n_resamples, level, seed):
    """A - B per task and ``avg``, both models scored on the same resampled pairs."""
    return Bootstrap.of([frame_a, frame_b], tasks, aggregation, {"resamples": n_resamples, "level": level,
                                                                 "seed": seed}).paired(0, 1)


def noisy(gold: np.ndarray, scale: float, seed: int) -> np.ndarray:
    return gold + np.random.default_rng(seed).normal(0, scale, len(gold))


def two_subsets(n_small: int = 40, n_large: int = 400, seed: int = 0):
    rng = np.random.default_rng(seed)
    gold = rng.uniform(0, 5, n_small + n_large)
    return gold, ["small"] * n_small + ["large"] * n_large


def test_row_spearman_equals_scipy_with_ties():
    rng = np.random.default_rng(1)
    predicted = rng.integers(0, 5, size=(3, 50)).astype(float)
    gold = rng.normal(size=(3, 50))
    expected = [spearmanr(p, g).correlation * 100 for p, g in zip(predicted, gold, strict=True)]
    np.testing.assert_allclose(row_spearman(predicted, gold), expected, rtol=1e-12)


@pytest.mark.parametrize("aggregation", ["all", "mean", "wmean"])
def test_point_scores_equal_the_evaluator(aggregation):
    gold, subsets = two_subsets()
    similarity = noisy(gold, 1.0, 2)
    cut = subsets.count("small")
    expected = aggregate_spearman([similarity[:cut], similarity[cut:]], [gold[:cut], gold[cut:]], aggregation)
    observed = observed_scores({"T": task_pairs([frame(gold, similarity, subsets)], "T")}, aggregation)
    assert observed["T"][0] == pytest.approx(expected, abs=1e-9)


def test_a_model_against_itself_differs_by_exactly_zero_with_p_one():
    gold, subsets = two_subsets()
    same = frame(gold, noisy(gold, 1.0, 3), subsets)
    test = paired_tests(same, same, ["T"], "all", 500, 0.95, seed=0)["T"]
    assert test.difference.value == 0 and test.difference.low == 0 and test.difference.high == 0
    assert test.p_value == 1.0 and not test.distinguishable


def test_strong_noise_is_significantly_worse_than_weak_noise():
    gold, subsets = two_subsets(100, 900)
    weak, strong = frame(gold, noisy(gold, 0.5, 4), subsets), frame(gold, noisy(gold, 3.0, 5), subsets)
    test = paired_tests(strong, weak, ["T"], "all", 1000, 0.95, seed=0)["T"]
    assert test.difference.value < 0 and test.difference.high < 0 and test.p_value < 0.01 and test.distinguishable
    close = frame(gold, noisy(gold, 0.5, 6), subsets)  # the same noise level, another draw: not distinguishable
    assert paired_tests(close, weak, ["T"], "all", 1000, 0.95, seed=0)["T"].p_value > 0.05


def test_intervals_are_reproducible_for_a_seed_and_move_with_it():
    gold, subsets = two_subsets()
    data = frame(gold, noisy(gold, 1.0, 7), subsets)
    first = score_intervals(data, ["T"], "all", 300, 0.95, seed=1)
    assert first == score_intervals(data, ["T"], "all", 300, 0.95, seed=1)
    assert first != score_intervals(data, ["T"], "all", 300, 0.95, seed=2)


def test_resampling_keeps_every_subset_inside_itself():
    gold, subsets = two_subsets(5, 500)
    bounds = subset_bounds(subsets)
    assert bounds == [(0, 5), (5, 505)]
    index = resample(bounds, 200, np.random.default_rng(0))
    assert index.shape == (200, 505)
    assert ((index[:, :5] >= 0) & (index[:, :5] < 5)).all() and (index[:, 5:] >= 5).all()
    with pytest.raises(DefSentError, match="contiguously"):
        subset_bounds(["a", "b", "a"])


@pytest.mark.parametrize("aggregation", ["all", "mean", "wmean"])
def test_bootstrap_scores_equal_the_evaluator_on_the_same_resamples(aggregation):
    """Subsets of 7 and 300 pairs (ties in the gold scores): every resample's score equals SentEval's aggregation
    (:func:`aggregate_spearman`) computed from scratch on the same resampled pairs, drawn as resampled_scores draws
    them (one generator, the task's subsets resampled within themselves)."""
    gold, subsets = two_subsets(7, 300, seed=8)
    gold = gold.round(1)
    similarity = noisy(gold, 1.5, 9)
    pairs = {"T": task_pairs([frame(gold, similarity, subsets)], "T")}
    resampled = resampled_scores(pairs, aggregation, 60, seed=4)["T"][0]
    index = resample(subset_bounds(subsets), 60, np.random.default_rng(4))
    expected = [aggregate_spearman([similarity[drawn[:7]], similarity[drawn[7:]]], [gold[drawn[:7]], gold[drawn[7:]]],
                                   aggregation) for drawn in index]
    np.testing.assert_allclose(resampled, expected, rtol=1e-10, atol=1e-9)


def test_models_scored_on_different_pairs_are_refused():
    gold, subsets = two_subsets()
    with pytest.raises(DefSentError, match="different pairs"):
        paired_tests(frame(gold, gold, subsets), frame(gold[::-1], gold, subsets), ["T"], "all", 10, 0.95, 0)


def test_the_95_percent_interval_covers_the_true_spearman_about_95_percent_of_the_time():
    """400 samples of 200 pairs from a bivariate normal whose Spearman is known in closed form:
    rho_s = 6/pi * arcsin(r/2); 250 resamples each."""
    r = 0.6
    truth = 6 / np.pi * np.arcsin(r / 2) * 100
    rng = np.random.default_rng(0)
    covered = 0
    for k in range(400):
        x = rng.normal(size=200)
        y = r * x + np.sqrt(1 - r * r) * rng.normal(size=200)
        interval = score_intervals(frame(x, y, ["only"] * 200), ["T"], "all", 250, 0.95, seed=k)["T"]
        covered += interval.low <= truth <= interval.high
    assert 0.93 <= covered / 400 <= 0.97


def sts_pairs(similarity_of, seed: int = 0) -> pd.DataFrame:
    """Per-pair rows of all seven STS tasks (two subsets for STS12, one for the others), similarity from gold."""
    rng = np.random.default_rng(seed)
    frames = []
    for task in ("STS12", "STS13", "STS14", "STS15", "STS16", "STSB", "SICKR"):
        subsets = ["a"] * 60 + ["b"] * 140 if task == "STS12" else [task] * 200
        gold = rng.uniform(0, 5, len(subsets))
        frames.append(pd.DataFrame({"task": task, "subset": subsets, "pair": np.arange(len(gold)), "gold": gold,
                                    "similarity": similarity_of(gold)}))
    return pd.concat(frames, ignore_index=True)


def scored_run(tmp_path):
    """A run's STS tables with intervals from three synthetic models (base; same = base's similarities, the
    dev-selected one; worse = stronger noise): (sts.tsv, per-pair files by model, bootstrap options)."""
    from defsent_plus.evaluation.report import write_score_tables
    from defsent_plus.evaluation.sts import scores_of_pairs
    from defsent_plus.io import write_json

    models = {"base": lambda g: g + np.random.default_rng(1).normal(0, 1.0, len(g)),
              "same": lambda g: g + np.random.default_rng(1).normal(0, 1.0, len(g)),
              "worse": lambda g: g + np.random.default_rng(2).normal(0, 4.0, len(g))}
    rows = []
    for step, (name, similarity_of) in enumerate(models.items()):
        pairs = sts_pairs(similarity_of)
        pairs.to_parquet(tmp_path / f"{name}.parquet")
        scores = scores_of_pairs(pairs, ("STS12", "STS13", "STS14", "STS15", "STS16", "STSB", "SICKR"))
        write_json(tmp_path / f"{name}.json", {"model": name, "model_dir": name, "pooling": "mean", "scores": scores,
                                               "sts_aggregation": "all"})
        rows.append({"scores": tmp_path / f"{name}.json", "pairs": tmp_path / f"{name}.parquet", "label": name,
                     "group": "", "step": min(step, 1), "pooling": "mean"})
    write_json(tmp_path / "best.json", {"best": {"model": "same"}})
    out = {name: tmp_path / f"sts.{name}" for name in ("tsv", "md", "png")}
    options = {"resamples": 300, "level": 0.95, "seed": 0}
    write_score_tables(rows=rows, best_json=tmp_path / "best.json", out_tsv=out["tsv"], out_md=out["md"], title="t",
                       out_png=out["png"], bootstrap=options)
    return out, {name: tmp_path / f"{name}.parquet" for name in models}, options


def test_score_tables_carry_intervals_and_paired_verdicts(tmp_path):
    out, _, _ = scored_run(tmp_path)
    table = pd.read_csv(out["tsv"], sep="\t")
    assert (table["avg_low"] < table["avg"]).all() and (table["avg"] < table["avg_high"]).all()
    text = out["md"].read_text()
    assert "95% intervals" in text and "percentile bootstrap" in text and "Koehn 2004" in text
    same = next(line for line in text.splitlines() if line.startswith("| same * − base"))
    worse = next(line for line in text.splitlines() if line.startswith("| worse − base"))
    assert "+0.00 [+0.00, +0.00] n.s." in same and "| not distinguishable from 0" in same
    assert "| distinguishable from 0" in worse and "n.s." not in worse.split("|")[-3]


def test_the_comparison_tests_each_run_and_shows_ours_minus_published(tmp_path):
    from defsent_plus.evaluation.comparison import write_sts_comparison

    tables, pairs, options = scored_run(tmp_path)
    tsv = tables["tsv"]
    table = pd.read_csv(tsv, sep="\t")
    ours = table[table["dev_selected"]].iloc[0]
    published = {"r": {"source": "paper X, Table 1", "scores": {"STS12": 70.0, "avg": 60.0}}}
    out = {name: tmp_path / f"compare.{name}" for name in ("tsv", "md")}
    stored = {}  # as the workflow stores them: results/eval/<encoder>/sts_<pooling>.pairs.parquet
    for name in ("base", "same"):
        (tmp_path / name).mkdir()
        stored[name] = tmp_path / name / "sts_mean.pairs.parquet"
        stored[name].write_bytes(pairs[name].read_bytes())
    write_sts_comparison([{"run": "r", "method": "defsent_plus", "sts": str(tsv)}], out["tsv"], out["md"],
                         pairs={"r": {"mean": {"start": str(stored["base"]), "final": str(stored["same"])}}},
                         bootstrap=options, published=published, out_uncertainty=tmp_path / "uncertainty.tsv")
    columns = pd.read_csv(tmp_path / "uncertainty.tsv", sep="\t")  # what the markdown shows, as numbers
    paired = columns[columns["kind"] == "paired"].set_index("task")
    assert set(paired.index) == {"STS12", "STS13", "STS14", "STS15", "STS16", "STSB", "SICKR", "avg"}
    assert (paired[["value", "low", "high"]] == 0).all().all() and (paired["p_holm"] >= paired["p"]).all()
    selected = columns[(columns["kind"] == "interval") & (columns["model"] == "r, dev-selected")]
    assert (selected["low"] <= selected["value"]).all() and (selected["value"] <= selected["high"]).all()
    rows = {tuple(cells[1:3]): cells[3:-1] for line in out["md"].read_text().splitlines()
            if line.startswith("| ") and len(cells := [c.strip() for c in line.split("|")]) > 4}
    assert rows[("r − its start (base)", "+0.00 [+0.00, +0.00] n.s.")]  # same similarities: exactly 0
    interval = rows[("r, dev-selected", "mean")]  # STS12, ..., SICK-R, Avg.
    assert rows[("r", "published: paper X, Table 1")] == ["70.00", "60.00"]
    assert rows[("r", "ours − published")] == [f"{ours['STS12'] - 70.0:+.2f} (95%: {interval[0]})",
                                               f"{ours['avg'] - 60.0:+.2f} (95%: {interval[-1]})"]


def test_counted_resample_ranks_equal_ranking_each_resample():
    """Spearman of a resample from each item's draw count (one sort for all resamples) equals ranking every
    resample itself (scipy's average ranks), ties within and across items included."""
    from defsent_plus.evaluation.intervals import CountedGold, doubled_ranks, draw_counts

    rng = np.random.default_rng(3)
    predicted = rng.integers(0, 8, 60).astype(float)  # many ties
    gold = rng.normal(size=60).round(1)
    index = rng.integers(0, 60, size=(50, 60))
    counts = draw_counts(index, 60)
    assert (counts.sum(axis=0) == 60).all()
    drawn = [np.repeat(np.arange(60), counts[:, b]) for b in range(3)]  # resample b, its items in value order
    for b, items in enumerate(drawn):
        np.testing.assert_array_equal(doubled_ranks(predicted, counts)[items, b] / 2, rankdata(predicted[items]))
    counted = CountedGold.of(gold, counts).spearman(predicted)
    np.testing.assert_allclose(counted, row_spearman(predicted[index], gold[index]), rtol=1e-12)
    expected = [spearmanr(predicted[i], gold[i]).correlation * 100 for i in index[:5]]
    np.testing.assert_allclose(counted[:5], expected, rtol=1e-12)


def test_the_interval_benchmark_runs_and_both_ways_agree(senteval_dir, monkeypatch, capsys):
    """bench/bench_intervals.py at toy size: the counted ranks give the resampled scores of ranking every resample."""
    monkeypatch.syspath_prepend(str(REPO / "bench"))
    import bench_intervals

    assert bench_intervals.main(["--senteval", str(senteval_dir), "--models", "2", "--resamples", "5"]) == 0
    printed = capsys.readouterr().out
    assert "ratio" in printed and float(printed.split("largest |difference| ")[1].split()[0]) < 1e-9


def copied_tasks(keys: bool) -> pd.DataFrame:
    """Two tasks that are the same pairs (with their keys, or without, as files written before keys existed)."""
    gold, subsets = two_subsets(n_small=60, n_large=300, seed=3)
    one = frame(gold, noisy(gold, 1.5, 4), subsets, task="A")
    if keys:
        one["key"] = np.arange(len(one), dtype=np.int64) * 7919
    return pd.concat([one, one.assign(task="B")], ignore_index=True)


def test_two_tasks_that_are_copies_give_the_average_the_interval_of_one():
    options = {"resamples": 400, "level": 0.95, "seed": 0}
    both = Bootstrap.of([copied_tasks(keys=True)], ["A", "B"], "all", options).intervals(0)["avg"]
    alone = Bootstrap.of([copied_tasks(keys=True)], ["A"], "all", options).intervals(0)["avg"]
    assert (both.low, both.high) == pytest.approx((alone.low, alone.high), abs=1e-9)
    independent = Bootstrap.of([copied_tasks(keys=False)], ["A", "B"], "all", options).intervals(0)["avg"]
    assert independent.high - independent.low < 0.85 * (both.high - both.low)  # copies resampled apart: too narrow
    task = Bootstrap.of([copied_tasks(keys=True)], ["A"], "all", options).intervals(0)["A"]  # within subsets
    assert task.high - task.low == pytest.approx(both.high - both.low, rel=0.2)  # Poisson ~ multinomial


def test_pair_keys_identify_a_pair_across_tasks_and_order(senteval_dir):
    from defsent_plus.evaluation.sts import load_sts_parts, pair_key

    stsb = load_sts_parts(senteval_dir, "STSB")[0]
    years = [p for task in ("STS12", "STS13", "STS14", "STS15", "STS16") for p in load_sts_parts(senteval_dir, task)]
    stsb_keys = {pair_key(a, b) for a, b in zip(stsb.sentences1, stsb.sentences2, strict=True)}
    year_keys = {pair_key(a, b) for p in years for a, b in zip(p.sentences1, p.sentences2, strict=True)}
    assert len(stsb_keys & year_keys) > 900  # issue #33 counted 1,007 of STS-B's 1,379 test pairs in STS12-16
    assert pair_key("a", "b") != pair_key("b", "a") and pair_key("a", "b") == pair_key("a", "b")


def test_holm_adjusts_a_rows_task_p_values_step_down():
    from defsent_plus.evaluation.significance import holm

    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])


def test_the_averages_verdict_is_flagged_where_the_other_aggregation_disagrees():
    from defsent_plus.evaluation.significance import paired_rows

    gold, subsets = two_subsets(n_small=200, n_large=200, seed=5)
    a = noisy(gold, 0.5, 6)
    shifted = a + 10.0 * (np.asarray(subsets) == "large")  # the same order within each subset, not across them
    frames = [frame(gold, a, subsets), frame(gold, shifted, subsets)]
    options = {"resamples": 300, "level": 0.95, "seed": 0}
    concatenated, per_subset = (Bootstrap.of(frames, ["T"], aggregation, options) for aggregation in ("all", "mean"))
    row = paired_rows([("a − shifted", 0, 1)], concatenated, ("mean", per_subset)).iloc[0]
    assert row["Avg. difference"] == "distinguishable from 0"
    assert row["Avg. under mean"] == "+0.00 [+0.00, +0.00] n.s. ⚑ verdict differs"
    same = paired_rows([("a − a", 0, 0)], concatenated, ("mean", per_subset)).iloc[0]
    assert "⚑" not in same["Avg. under mean"]
