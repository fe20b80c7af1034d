"""Held-out split by headword, queries that leak into nothing, training on the train split only, and the
reverse-dictionary evaluation of held-out queries."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from helpers import toy_frame, write_toy_dataset

from defsent_plus.dictionary.subsets import HeldOut, hold_out_queries, split_by_headword, write_subset
from defsent_plus.dictionary.table import definition_pairs, read_dataset, training_pairs
from defsent_plus.encoders.models import load_encoder
from defsent_plus.errors import DefSentError
from defsent_plus.evaluation.reverse_dictionary import (
    cosine_ranks,
    query_ranks,
    ranking_bootstrap,
    ranking_metrics,
    ranks_by_split,
    ranks_of_targets,
    read_queries,
    split_metrics,
)
from defsent_plus.io import write_json, write_npy
from defsent_plus.methods import method_of
from defsent_plus.methods.defsent_plus.reverse_dictionary import (
    ReverseDictionary,
    dot_ranks,
    entry_logits,
    trained_space,
    write_entry_ranking,
)
from defsent_plus.names import TRAINING_CARD
from defsent_plus.pipeline import dag
from defsent_plus.pipeline.dag import EncoderId
from defsent_plus.spaces.entry_matrix import load_space
from defsent_plus.training.trainer import TrainConfig, train_on_space

HELDOUT = {"dev": 0.1, "test": 0.1, "seed": 0}
WHERE = "config: subsets.x.heldout"


def synthetic_entries(n: int = 200) -> dict[str, list[str]]:
    """``n`` headwords with 1-3 definitions each (every text unique)."""
    return {f"w{i:03d}": [f"definition {j} of w{i:03d}" for j in range(1 + i % 3)] for i in range(n)}


def subset_of(tmp_path: Path, entries: dict[str, list[str]], heldout: dict | None = HELDOUT, max_entries=None):
    """Run the subset stage; returns (subset, queries or None) as read back from the parquet files."""
    dataset = write_toy_dataset(tmp_path / "a.parquet", entries)
    out, queries = tmp_path / "subset.parquet", tmp_path / "subset.queries.parquet"
    write_subset(dataset, out, max_entries, 0, heldout=heldout, queries_path=queries if heldout else None,
                 where=WHERE)
    return read_dataset(out), (pd.read_parquet(queries) if queries.exists() else None)


# ------------------------------------------------------------------------------------------------ split


def test_split_is_by_headword_seeded_and_8_1_1():
    frame = toy_frame(synthetic_entries(200))
    labels = split_by_headword(frame, HeldOut(0.1, 0.1, 3))
    assert Counter(labels) == {"train": 160, "dev": 20, "test": 20}
    np.testing.assert_array_equal(labels, split_by_headword(frame, HeldOut(0.1, 0.1, 3)))
    assert (labels != split_by_headword(frame, HeldOut(0.1, 0.1, 4))).any()
    shuffled = frame.sample(frac=1, random_state=1)  # the split follows the headwords, not the row order
    np.testing.assert_array_equal(split_by_headword(shuffled, HeldOut(0.1, 0.1, 3)), labels[shuffled.index])


def test_case_variants_of_a_headword_share_a_split():
    entries = {name: [f"{name} definition"] for name in ("Baroque", "baroque", "Dog", "dog")}
    entries.update(synthetic_entries(40))
    for seed in range(10):
        frame = toy_frame(entries)
        split = dict(zip(frame["entry"], split_by_headword(frame, HeldOut(0.2, 0.2, seed)), strict=True))
        assert split["Baroque"] == split["baroque"] and split["Dog"] == split["dog"]


def test_without_heldout_the_subset_is_unchanged(tmp_path):
    subset, queries = subset_of(tmp_path, synthetic_entries(30), heldout=None, max_entries=20)
    assert list(subset.columns) == ["entry", "definitions", "sources"] and len(subset) == 20
    assert queries is None and sorted(p.name for p in tmp_path.iterdir()) == ["a.parquet", "subset.parquet"]


# ---------------------------------------------------------------------------------------------- queries


def test_queries_leave_no_trace_in_the_subset_and_lose_nothing(tmp_path):
    entries = synthetic_entries(200)
    subset, queries = subset_of(tmp_path, entries)
    remaining = {d for defs in subset["definitions"] for d in defs}
    assert not set(queries["definition"]) & remaining
    assert (subset["entry"].to_numpy()[queries["entry_id"]] == queries["entry"].to_numpy()).all()
    assert (subset["split"].to_numpy()[queries["entry_id"]] == queries["split"].to_numpy()).all()
    assert set(queries["split"]) == {"dev", "test"} and queries["entry_id"].is_unique
    for entry, defs, sources, split in subset[["entry", "definitions", "sources", "split"]].itertuples(index=False):
        held = list(queries.loc[queries["entry"] == entry, "definition"])
        assert sorted(defs + held) == sorted(entries[entry]) and len(sources) == len(defs)
        assert len(held) == (split != "train" and len(entries[entry]) >= 2)
    again = tmp_path / "again"
    again.mkdir()
    subset2, queries2 = subset_of(again, entries)
    assert subset2.equals(subset) and queries2.equals(queries)


def test_a_shared_definition_is_never_a_query_and_held_out_entries_without_one_are_counted():
    frame = toy_frame({
        "a": ["shared", "only a"],       # test: gives "only a"
        "b": ["shared", "also b"],       # train
        "c": ["shared", "also b x"],     # dev: gives "also b x"
        "d": ["shared", "Also b."],      # test: every definition is another's, up to case/final punctuation
        "e": ["single"],                 # dev: a single definition -> no query
    }).assign(split=["test", "train", "dev", "test", "dev"])
    kept, queries, counts = hold_out_queries(frame, seed=0)
    assert list(zip(queries["entry"], queries["definition"], queries["split"], strict=True)) == [
        ("a", "only a", "test"), ("c", "also b x", "dev")]
    assert kept["definitions"].tolist() == [["shared"], ["shared", "also b"], ["shared"], ["shared", "Also b."],
                                            ["single"]]
    assert counts == {"test_entries": 2, "test_queries": 1, "test_shared_definitions_only": 1,
                      "dev_entries": 2, "dev_queries": 1, "dev_single_definition": 1}


def test_single_definition_held_out_entries_are_logged(tmp_path, caplog):
    caplog.set_level("INFO")
    entries = synthetic_entries(200)
    subset, queries = subset_of(tmp_path, entries)
    single = sum(len(entries[e]) == 1 for e in subset.loc[subset["split"] == "dev", "entry"])
    assert 0 < single < 20
    assert f"dev: 20 entries, {20 - single} queries; without a query: {single} with a single" in caplog.text


# ---------------------------------------------------------------------------------------------- training


def test_training_pairs_exclude_held_out_entries_but_keep_their_ids():
    frame = toy_frame().assign(split=["train", "dev", "train", "test", "train", "dev"])
    texts, ids = training_pairs(frame)
    assert set(frame["split"].to_numpy()[ids]) == {"train"}
    train = frame[frame["split"] == "train"]
    assert texts == [d for defs in train["definitions"] for d in defs]
    assert ids.tolist() == [i for i, defs in zip(train.index, train["definitions"], strict=True) for _ in defs]
    all_texts, all_ids = definition_pairs(frame.drop(columns="split"))
    plain_texts, plain_ids = training_pairs(frame.drop(columns="split"))
    assert plain_texts == all_texts and (plain_ids == all_ids).all()


def test_training_uses_the_train_split_against_all_entries(tmp_path, tiny_bert):
    frame = toy_frame().assign(split=["train", "dev", "train", "test", "train", "dev"])
    frame.to_parquet(tmp_path / "toy.parquet", index=False)
    write_npy(tmp_path / "space.npy", np.random.default_rng(0).normal(size=(len(frame), 32)).astype(np.float32))
    summary = train_on_space(tiny_bert, tmp_path / "toy.parquet", tmp_path / "space.npy", tmp_path / "model",
                             tmp_path / "train.json", TrainConfig(batch_size=2, max_length=16),
                             method_of("defsent_plus"))
    assert summary["examples"] == frame.loc[frame["split"] == "train", "definitions"].map(len).sum() == 4


# -------------------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("heldout", "n", "message"),
    [
        ({"dev": 0.5, "test": 0.5}, 50, r"subsets.x.heldout: dev \+ test = 1 leaves no entries for training"),
        ({"dev": 0.0, "test": 0.1}, 50, r"subsets.x.heldout.dev: expected a fraction of the entries in \(0, 1\)"),
        ({"dev": 0.1, "tests": 0.1}, 50, r"subsets.x.heldout: unknown keys \['tests'\]"),
        ({"dev": 0.1, "test": 0.1}, 4, r"subsets.x.heldout: the subset has 4 headwords, too few to hold out"),
    ],
)
def test_bad_heldout_config_names_the_key_and_writes_nothing(tmp_path, heldout, n, message):
    with pytest.raises(DefSentError, match=message):
        subset_of(tmp_path, synthetic_entries(n), heldout=heldout)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.parquet"]


def test_held_out_split_without_any_query_is_an_error(tmp_path):
    entries = {f"w{i:02d}": [f"the only definition of w{i:02d}"] for i in range(30)}
    with pytest.raises(DefSentError, match=r"subsets.x.heldout: no dev entry has a definition to hold out"):
        subset_of(tmp_path, entries)


# ----------------------------------------------------------------------------------------- evaluation


ENTRIES = ["city", "dog", "giraffe", "lion", "night", "red"]  # toy_frame's entry ids 0..5
SPLITS = ["train", "test", "dev", "test", "test", "train"]
QUERIES = [(2, "giraffe", "the tall animal of africa", "dev"), (1, "dog", "a small animal that can run fast", "test"),
           (4, "night", "the dark time of day", "test")]  # night's space row will point away from its query


def constructed_case(tmp_path: Path, vectors) -> tuple[Path, Path, Path]:
    """Dataset, queries and a space whose rows are the unit query vectors (night's negated), other rows random."""
    frame = toy_frame().assign(split=SPLITS)
    assert list(frame["entry"]) == ENTRIES
    frame.to_parquet(tmp_path / "toy.parquet", index=False)
    queries = pd.DataFrame(QUERIES, columns=["entry_id", "entry", "definition", "split"])
    queries.to_parquet(tmp_path / "queries.parquet", index=False)
    h = vectors([q[2] for q in QUERIES])
    space = np.random.default_rng(0).normal(size=(len(ENTRIES), h.shape[1]))
    space /= np.linalg.norm(space, axis=1, keepdims=True)  # unit rows: a query scores highest on its own direction
    for (entry_id, entry, _, _), v in zip(QUERIES, h, strict=True):
        space[entry_id] = (-1 if entry == "night" else 1) * v / np.linalg.norm(v)
    write_npy(tmp_path / "space.npy", space.astype(np.float32))
    return tmp_path / "toy.parquet", tmp_path / "queries.parquet", tmp_path / "space.npy"


def check_constructed(result: dict) -> None:
    """giraffe and dog rank their entry first; night's entry comes last of 6."""
    assert result["candidates"] == 6
    assert result["dev"] == {"mrr": 1.0, "mrr_at_10": 1.0, "top1": 100.0, "top3": 100.0, "top10": 100.0, "queries": 1,
                             "entries": 1, "without_query": 0}
    test = result["test"]
    assert test["mrr"] == pytest.approx((1 + 1 / 6) / 2)
    assert (test["top1"], test["top3"], test["top10"], test["queries"]) == (50.0, 50.0, 100.0, 2)
    assert (test["entries"], test["without_query"]) == (3, 1)  # lion: in test, no query


@pytest.fixture
def trained_model(tmp_path, tiny_bert) -> Path:
    model = tmp_path / "model"
    load_encoder(tiny_bert).save(model)
    return model


def test_the_trained_pooler_ranks_the_held_out_queries(tmp_path, trained_model):
    encoder = load_encoder(trained_model)
    dataset, queries, space = constructed_case(
        tmp_path, lambda texts: entry_logits(encoder, torch.eye(encoder.hidden_size), texts, "cls"))
    write_json(trained_model / TRAINING_CARD, {"dataset": str(dataset), "entry_space": str(space), "pooling": "cls"})
    rd = ReverseDictionary(trained_model, space, dataset, scoring="dot")
    held_out = read_queries(queries, rd.frame)
    ranks = ranks_by_split(dot_ranks(rd, held_out), held_out)
    check_constructed({"candidates": len(rd.entries), **split_metrics(ranks, rd.frame)})


def test_queries_encoded_at_once_score_as_each_alone(tiny_bert):
    """Every query is encoded in one call, sorted into batches by length (a chunk of unsorted queries padded to its
    longest: 3.4x the reverse dictionary's time on all of dataset a); each row's scores are still its own query's,
    as scoring it alone (no padding) gives them."""
    encoder = load_encoder(tiny_bert)
    space = torch.from_numpy(np.random.default_rng(0).normal(size=(40, encoder.hidden_size)).astype(np.float32))
    queries = [" ".join(["word"] * n) + f" {n}" for n in (30, 1, 12, 3, 25, 2, 7)]
    together = entry_logits(encoder, space, queries, "cls", batch_size=2)
    alone = np.concatenate([entry_logits(encoder, space, [query], "cls") for query in queries])
    np.testing.assert_allclose(together, alone, rtol=1e-4, atol=1e-4)
    targets = np.arange(len(queries))
    assert query_ranks(together, lambda chunk: chunk, targets, chunk=3).tolist() == \
        ranks_of_targets(alone, targets).tolist()


def baseline_metrics(model: Path, space: Path, dataset: Path, queries: Path) -> dict:
    """The untrained reference alone: ``model``'s mean-pooled queries against ``space`` by cosine, per split."""
    frame = read_dataset(dataset)
    held_out = read_queries(queries, frame)
    ranks = cosine_ranks(load_encoder(model), load_space(space, len(frame)), held_out)
    return {"candidates": len(frame), **split_metrics(ranks_by_split(ranks, held_out), frame)}


def test_baseline_ranks_by_cosine_to_the_base_models_space(tmp_path, tiny_bert):
    encoder = load_encoder(tiny_bert)
    dataset, queries, space = constructed_case(
        tmp_path, lambda texts: encoder.encode(texts, "mean"))
    check_constructed(baseline_metrics(tiny_bert, space, dataset, queries))


def test_the_space_comes_from_the_models_training_card(tmp_path, trained_model):
    dataset, space = write_toy_dataset(tmp_path / "toy.parquet"), tmp_path / "amp.npy"
    write_json(trained_model / TRAINING_CARD, {"dataset": str(dataset), "entry_space": str(space), "pooling": "cls"})
    assert trained_space(trained_model, [tmp_path / "ac.npy", space], dataset) == str(space)
    with pytest.raises(DefSentError, match="trained on entry space .* not one of"):
        trained_space(trained_model, [tmp_path / "ac.npy"], dataset)
    with pytest.raises(DefSentError, match="trained on dataset"):
        trained_space(trained_model, [space], tmp_path / "other.parquet")


def test_queries_of_another_dataset_are_refused(tmp_path):
    frame = toy_frame().assign(split=SPLITS)
    pd.DataFrame([(2, "lion", "x", "dev"), (1, "dog", "y", "test")],
                 columns=["entry_id", "entry", "definition", "split"]).to_parquet(tmp_path / "q.parquet")
    with pytest.raises(DefSentError, match="query for 'lion' points to entry 2, which is 'giraffe'"):
        read_queries(tmp_path / "q.parquet", frame)


def test_report_has_both_models_and_splits(tmp_path, trained_model, tiny_bert):
    encoder = load_encoder(trained_model)
    dataset, queries, space = constructed_case(
        tmp_path, lambda texts: entry_logits(encoder, torch.eye(encoder.hidden_size), texts, "cls"))
    write_json(trained_model / TRAINING_CARD, {"dataset": str(dataset), "entry_space": str(space), "pooling": "cls"})
    out = {name: tmp_path / f"rd.{name}" for name in ("json", "tsv", "md")}
    write_entry_ranking(method="defsent_plus", model_dir=trained_model, spaces=[space], dataset=dataset,
                        queries=queries, base_model=tiny_bert, base_space=[space], out_json=out["json"],
                        out_tsv=out["tsv"], out_md=out["md"], title="Held out", bootstrap=BOOTSTRAP)
    result = json.loads(out["json"].read_text())
    check_constructed(result["trained"])
    table = pd.read_csv(out["tsv"], sep="\t")
    assert list(zip(table["model"], table["protocol"], table["split"], strict=True)) == [
        (model, protocol, split) for model in ("trained", "base") for protocol in ("heldout_queries", "cosine")
        for split in ("dev", "test")]
    assert (table["mrr_low"] <= table["mrr"]).all() and (table["mrr"] <= table["mrr_high"]).all()
    text = out["md"].read_text()
    assert text.startswith("# Held out\n") and "among all 6 entries" in text and "Did training help?" in text
    # like for like: the trained model's cosine rows are the baseline ranking run on the trained model itself
    alike = baseline_metrics(trained_model, space, dataset, queries)
    assert {split: result["trained"]["cosine"][split] for split in ("dev", "test")} == {
        split: {k: v for k, v in alike[split].items() if k not in ("entries", "without_query")}
        for split in ("dev", "test")}
    base_alone = baseline_metrics(tiny_bert, space, dataset, queries)
    assert result["base"]["test"] == base_alone["test"]  # the reference is unchanged by the added protocol
    assert set(result["paired"]) == {"cosine"} and set(result["paired"]["cosine"]) == {"dev", "test"}


BOOTSTRAP = {"resamples": 200, "level": 0.95, "seed": 0}
# a training card's provenance, as trainer.py records it
TRAINED_WITH = {"project": "abc123", "torch": "9.9.9", "device": "cuda", "gpu": "NVIDIA H100",
                "precision": "bf16 autocast", "threads": 4, "seeds": {"training": 3}}


def entry_ranking_files(tmp_path: Path, model: Path, base: Path) -> dict[str, Path]:
    """The ``entries`` protocol's JSON, TSV and markdown for the constructed case, the model's training card
    recording its seed and provenance."""
    encoder = load_encoder(model)
    dataset, queries, space = constructed_case(
        tmp_path, lambda texts: entry_logits(encoder, torch.eye(encoder.hidden_size), texts, "cls"))
    write_json(model / TRAINING_CARD, {"dataset": str(dataset), "entry_space": str(space), "pooling": "cls",
                                       "seed": 3, "provenance": TRAINED_WITH})
    out = {name: tmp_path / f"rd.{name}" for name in ("json", "tsv", "md")}
    write_entry_ranking(method="defsent_plus", model_dir=model, spaces=[space], dataset=dataset, queries=queries,
                        base_model=base, base_space=[space], out_json=out["json"], out_tsv=out["tsv"],
                        out_md=out["md"], title="Held out", bootstrap=BOOTSTRAP)
    return out


def check_provenance(record: dict, seeds: dict) -> None:
    """A reverse dictionary's provenance: this machine's versions, device, precision and threads, the seeds, and the
    trained model's own training provenance."""
    from importlib.metadata import version

    assert record["torch"] == version("torch") and record["transformers"] == version("transformers")
    assert record["device"] == "cpu" and record["precision"] == "fp32" and record["threads"] >= 1
    assert record["project"] and record["seeds"] == seeds


def footers(text: str) -> tuple[str, str]:
    """A page's 'Computed with' and 'Trained with' footer lines."""
    computed = text.split("Computed with: ")[1].split("\n")[0]
    trained = text.split("Trained with: ")[1].split("\n")[0]
    return computed, trained


def test_the_reverse_dictionary_files_record_what_they_were_computed_with(tmp_path, trained_model, tiny_bert):
    from importlib.metadata import version

    from defsent_plus.evaluation.reverse_dictionary import write_comparison

    out = entry_ranking_files(tmp_path, trained_model, tiny_bert)
    record = json.loads(out["json"].read_text())["provenance"]
    check_provenance(record, {"training": 3, "bootstrap": 0})
    assert record["trained_with"] == TRAINED_WITH
    computed, trained = footers(out["md"].read_text())
    assert f"torch {version('torch')}" in computed and "device cpu" in computed and "precision fp32" in computed
    assert "torch 9.9.9" in trained and "gpu NVIDIA H100" in trained and "precision bf16 autocast" in trained
    compare = {name: tmp_path / f"compare.{name}" for name in ("tsv", "md")}
    write_comparison(runs=[{"run": "r", "json": str(out["json"])}], method_of=method_of, out_tsv=compare["tsv"],
                     out_md=compare["md"])
    assert footers(compare["md"].read_text()) == (computed, trained)


def test_the_comparison_shows_every_metrics_interval(tmp_path, trained_model, tiny_bert):
    from defsent_plus.evaluation.reverse_dictionary import write_comparison
    from defsent_plus.names import RANKING_METRICS

    out = entry_ranking_files(tmp_path, trained_model, tiny_bert)
    compare = {name: tmp_path / f"compare.{name}" for name in ("tsv", "md")}
    table = write_comparison(runs=[{"run": "r", "json": str(out["json"])}], method_of=method_of,
                             out_tsv=compare["tsv"], out_md=compare["md"], out_paired=tmp_path / "paired.tsv")
    paired = pd.read_csv(tmp_path / "paired.tsv", sep="\t")  # the markdown's trained − base rows, as numbers
    expected = json.loads(out["json"].read_text())["paired"]
    assert len(paired) == sum(len(tests) for splits in expected.values() for tests in splits.values()) > 0
    for row in paired.itertuples():
        test = expected[row.protocol][row.split][row.metric]
        assert (row.difference, row.low, row.high, row.p) == pytest.approx(
            (test["difference"], test["low"], test["high"], test["p"]), abs=1e-4)
        assert row.distinguishable == (test["low"] > 0 or test["high"] < 0)
    for metric in RANKING_METRICS:
        assert (table[f"{metric}_low"] <= table[metric]).all() and (table[metric] <= table[f"{metric}_high"]).all()
    assert set(pd.read_csv(compare["tsv"], sep="\t").columns) >= {f"{m}_{end}" for m in RANKING_METRICS
                                                                  for end in ("low", "high")}
    text = compare["md"].read_text()
    first_table = text.split("## Trained − base")[0]
    rows = [[cell.strip() for cell in line.split("|")[1:-1]] for line in first_table.splitlines()
            if line.startswith("| r ")]
    header = next(line for line in text.splitlines() if line.startswith("| run "))
    columns = [cell.strip() for cell in header.split("|")[1:-1]]
    assert len(rows) == len(table) and "mrr_low" not in columns
    for row, (_, expected) in zip(rows, table.iterrows(), strict=True):
        for metric in RANKING_METRICS:
            cell = row[columns.index(metric)]
            assert cell == (f"{expected[metric]:.3f} [{expected[f'{metric}_low']:.3f}, "
                            f"{expected[f'{metric}_high']:.3f}]"), (metric, cell)
    assert "every metric's 95% percentile-bootstrap interval" in text


def test_the_headword_protocol_records_its_provenance(tmp_path, tiny_bert):
    from defsent_plus.methods.defsent.objective import defsent_objective, save_head
    from defsent_plus.methods.defsent.reverse_dictionary import write_headword_ranking

    encoder = load_encoder(tiny_bert)
    objective = defsent_objective(encoder, "mean", seed=5)
    model = tmp_path / "defsent"
    encoder.save(model)
    save_head(objective.head, model, objective.head_info)
    write_json(model / TRAINING_CARD, {"method": "defsent", "pooling": "mean", "seed": 2, "provenance": TRAINED_WITH})
    dataset, queries, space = constructed_case(tmp_path, lambda texts: encoder.encode(texts, "mean"))
    out = {name: tmp_path / f"hw.{name}" for name in ("json", "tsv", "md")}
    write_headword_ranking(method="defsent", model_dir=model, dataset=dataset, queries=queries, base_model=tiny_bert,
                           base_space=[space], pooling="mean", out_json=out["json"], out_tsv=out["tsv"],
                           out_md=out["md"], title="t", bootstrap=BOOTSTRAP)
    record = json.loads(out["json"].read_text())["provenance"]
    check_provenance(record, {"training": 2, "base_head": 0, "bootstrap": 0})
    assert record["trained_with"] == TRAINED_WITH
    computed, trained = footers(out["md"].read_text())
    assert "device cpu" in computed and "gpu NVIDIA H100" in trained


def test_ranking_bootstrap_knows_the_answers():
    """A model against itself: difference 0, interval [0, 0], p = 1; a model that ranks every query first against
    one that ranks it 50th on 300 queries: distinguishable; the same seed gives the same intervals."""
    rng = np.random.default_rng(0)
    ranks = rng.integers(1, 100, size=300)
    same = ranking_bootstrap([ranks, ranks.copy()], BOOTSTRAP).paired(0, 1)["mrr"]
    assert same.difference.value == same.difference.low == same.difference.high == 0 and same.p_value == 1
    better = ranking_bootstrap([np.ones(300, dtype=int), np.full(300, 50)], BOOTSTRAP).paired(0, 1)
    assert better["mrr"].distinguishable and better["mrr"].difference.value == pytest.approx(1 - 1 / 50)
    assert better["top10"].p_value < 0.01
    first, again = (ranking_bootstrap([ranks], BOOTSTRAP).intervals(0) for _ in range(2))
    assert first == again and first["mrr"].low < first["mrr"].value < first["mrr"].high
    assert first["mrr"].value == pytest.approx(np.mean(1 / ranks))


def test_a_model_that_did_not_fit_is_queried_by_cosine_and_says_so(tmp_path, trained_model):
    dataset, space = write_toy_dataset(tmp_path / "toy.parquet"), tmp_path / "amp.ica.npy"
    frame = read_dataset(dataset)
    write_npy(space, np.random.default_rng(0).normal(size=(len(frame), 32)).astype(np.float32))
    write_npy(tmp_path / "amp.npy", np.random.default_rng(1).normal(size=(len(frame), 32)).astype(np.float32))
    unfitted = {"fitted": False, "note": "final loss 6.9 is within 2% of ln(1000)"}
    write_json(trained_model / TRAINING_CARD, {"dataset": str(dataset), "entry_space": str(space), "pooling": "cls",
                                               "fit": unfitted})
    rd = ReverseDictionary(trained_model)
    assert rd.scoring == "cosine" and "did not fit its objective" in rd.note and "6.9" in rd.note
    expected = cosine_ranks(rd.encoder, load_space(tmp_path / "amp.npy", len(frame)),
                            pd.DataFrame({"definition": ["a small animal"], "entry_id": [1]}))
    top = rd.top(rd.scores(["a small animal"]), top_k=len(frame))[0]
    assert [entry for entry, _ in top].index(frame["entry"][1]) + 1 == expected[0]
    assert ReverseDictionary(trained_model, scoring="dot").scoring == "dot"
    write_json(trained_model / TRAINING_CARD, {"dataset": str(dataset), "entry_space": str(space), "pooling": "cls",
                                               "fit": {**unfitted, "fitted": True}})
    assert ReverseDictionary(trained_model).scoring == "dot"
    (tmp_path / "amp.npy").unlink()
    with pytest.raises(DefSentError, match="no AMP entry space for the cosine scoring"):
        ReverseDictionary(trained_model, scoring="cosine")


def test_predict_words_warns_about_an_initialised_head(tmp_path):
    from defsent_plus.cli import untrained_head_warning

    write_json(tmp_path / TRAINING_CARD, {"head": {"head": "initialised", "seed": 0}})
    assert "meaningless until the head is trained" in untrained_head_warning(str(tmp_path))
    write_json(tmp_path / TRAINING_CARD, {"head": {"head": "pretrained"}})
    assert untrained_head_warning(str(tmp_path)) == ""


# ------------------------------------------------------------------------------------------- workflow


@pytest.mark.workflow
def test_workflow_plans_the_heldout_protocol_only_for_a_heldout_subset(tmp_path, tiny_bert):
    from workflow_utils import planned_jobs, write_tiny_config

    plain = tmp_path / "plain"
    plain.mkdir()
    write_tiny_config(plain, tiny_bert)
    assert not {"heldout_subset", "reverse_dictionary"} & set(planned_jobs(plain))
    workdir = tmp_path / "heldout"
    workdir.mkdir()
    config = write_tiny_config(workdir, tiny_bert)
    config["subsets"] = {"aheld": {"dataset": "a", "max_entries": 1000, "seed": 0,
                                   "heldout": {"dev": 0.2, "test": 0.2, "seed": 0}}}
    config["runs"]["tiny"]["dataset"] = "aheld"
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    plan = planned_jobs(workdir)
    assert plan["heldout_subset"] == plan["reverse_dictionary"] == 1 and "dictionary_subset" not in plan


@pytest.mark.workflow
def test_workflow_holds_out_trains_on_train_and_scores_the_final_model(methods_run):
    """DefSent+'s run ``dp`` of the session's methods DAG, on the held-out subset ``cheld`` (workflow_utils)."""
    from workflow_utils import PLUGINS, snakemake

    target = dag.run_file("dp", "reverse_dictionary.json")
    result = json.loads((methods_run / target).read_text())
    subset = read_dataset(methods_run / dag.subset_file("cheld"))
    queries = pd.read_parquet(methods_run / dag.subset_file("cheld", "queries.parquet"))
    for model in ("trained", "base"):
        assert result[model]["candidates"] == len(subset)
        for split in ("dev", "test"):
            assert result[model][split]["queries"] == (queries["split"] == split).sum() > 0
            assert result[model][split]["entries"] == (subset["split"] == split).sum()
    best = json.loads((methods_run / dag.best_json("dp", 2)).read_text())["best"]
    assert result["trained"]["entry_space"] == dag.space_file(EncoderId.selected("dp", 1), "cheld", best["space"])
    train = json.loads((methods_run / dag.train_summary(EncoderId.candidate("dp", 1, "amp", 0))).read_text())
    assert train["examples"] == subset.loc[subset["split"] == "train", "definitions"].map(len).sum()
    rerun = snakemake(methods_run, "--dry-run", target, pythonpath=[PLUGINS])
    assert "Nothing to be done" in rerun.stdout + rerun.stderr


def test_a_method_without_a_reverse_dictionary_protocol_is_refused_by_name(tmp_path):
    from defsent_plus.evaluation.reverse_dictionary import write_run_reverse_dictionary

    with pytest.raises(DefSentError, match="method 'simcse' declares no reverse-dictionary protocol"):
        write_run_reverse_dictionary(method=method_of("simcse"), out_json=tmp_path / "rd.json")
    assert not (tmp_path / "rd.json").exists()


def test_the_entry_protocol_needs_exactly_one_starting_model_space():
    from defsent_plus.evaluation.reverse_dictionary import only

    assert only(["amp.npy"]) == "amp.npy"
    with pytest.raises(DefSentError, match="expected one starting-model entry space"):
        only(["a.npy", "b.npy"])


# ----------------------------------------------------------------------------- whole-dictionary search


@pytest.mark.parametrize("transform", ["none", "center", "whiten", "ica"])
def test_every_transform_is_recovered_as_an_affine_map(transform):
    from defsent_plus.spaces.extension import affine_map
    from defsent_plus.spaces.transforms import apply_transform

    E = np.random.default_rng(0).gamma(2.0, size=(300, 12)).astype(np.float32)
    options = {"max_iter": 400, "random_state": 0} if transform == "ica" else {}
    T, _ = apply_transform(E, transform, **options)
    fitted = affine_map(E, T, "space")
    np.testing.assert_allclose(fitted(E), T, atol=1e-4 * np.abs(T).max())
    assert fitted.null_directions == 0 and fitted.unexplained < 1e-9
    other = np.random.default_rng(1).gamma(2.0, size=(50, 12))  # entries the map was not fitted on
    if transform in ("none", "center"):
        np.testing.assert_allclose(fitted(other), other - (E.mean(axis=0) if transform == "center" else 0), atol=1e-5)


def test_a_whitened_null_direction_is_left_out_of_the_map():
    """A space of rank 11 in 12 dimensions (as LayerNorm leaves encoder spaces): whitening blows the null
    direction's rounding noise up to unit variance; the map spans the other 11 and leaves 1/12 unexplained."""
    from defsent_plus.spaces.extension import affine_map
    from defsent_plus.spaces.transforms import apply_transform

    E = np.random.default_rng(0).gamma(2.0, size=(300, 12))
    E = (E - E.mean(axis=1, keepdims=True)).astype(np.float32)  # rows sum to zero, to float32 round-off
    T, _ = apply_transform(E, "whiten")
    fitted = affine_map(E, T, "space")
    assert fitted.null_directions == 1 and fitted.unexplained == pytest.approx(1 / 12, rel=1e-3)


def test_a_space_that_is_no_affine_map_of_its_base_is_refused():
    from defsent_plus.spaces.extension import affine_map

    E = np.random.default_rng(0).normal(size=(100, 4))
    with pytest.raises(DefSentError, match="not an affine transform of its base space: the best affine map leaves"):
        affine_map(E, E**2, "x.npy")
    with pytest.raises(DefSentError, match="4 entries cannot determine a map of 4 dimensions"):
        affine_map(E[:4], E[:4], "x.npy")


def varied_entries(n: int) -> dict[str, list[str]]:
    """``n`` headwords with 1-3 definitions of seeded random words (varied enough for a full-rank space)."""
    words = (Path(__file__).parent / "fixtures" / "tiny" / "dictionary.tsv").read_text().split()
    rng = np.random.default_rng(0)
    return {f"w{i:03d}": [" ".join(rng.choice(words, size=6)) for _ in range(1 + i % 3)] for i in range(n)}


@pytest.fixture
def whole_and_subset(tmp_path, tiny_bert) -> dict:
    """A 120-entry dataset, its 60-entry subset (no held-out split), the subset's AMP space by the tiny BERT and
    its whitened transform, as the workflow lays them out."""
    from defsent_plus.spaces.entry_space import write_entry_space
    from defsent_plus.spaces.transforms import write_transform

    whole = write_toy_dataset(tmp_path / "a.parquet", varied_entries(120))
    subset = tmp_path / "a60.parquet"
    write_subset(whole, subset, 60, 0)
    spaces = tmp_path / "spaces"
    write_entry_space(tiny_bert, subset, {name: spaces / f"{name}.npy" for name in ("ac", "amp")},
                      spaces / "entry_space.json", batch_size=16, max_length=32)
    write_transform(str(spaces / "amp.npy"), "whiten", {}, 1, str(spaces / "amp.whiten.npy"),
                    str(spaces / "amp.whiten.json"))
    return {"whole": whole, "subset": subset, "spaces": spaces, "cache": tmp_path / "cache"}


def test_a_subset_records_the_dataset_it_was_drawn_from(whole_and_subset):
    from defsent_plus.dictionary.table import SOURCE_DATASET

    assert read_dataset(whole_and_subset["subset"]).attrs[SOURCE_DATASET] == str(whole_and_subset["whole"])


def test_the_extended_space_gives_the_subsets_entries_their_trained_vectors(whole_and_subset):
    from defsent_plus.spaces.extension import extended_space

    spaces = whole_and_subset["spaces"]
    extended = extended_space(spaces / "amp.whiten.npy", whole_and_subset["whole"], whole_and_subset["cache"])
    assert extended.seconds_encoding is not None and len(extended.frame) == 120
    rows = extended.frame.reset_index().set_index("entry").loc[read_dataset(whole_and_subset["subset"])["entry"]]
    trained, whitened = extended.trained(), np.load(spaces / "amp.whiten.npy")
    assert extended.map.null_directions >= 1  # LayerNorm: the tiny BERT's space has rank 31 of 32 at most
    difference = ((trained[rows["index"]] - whitened) ** 2).sum() / ((whitened - whitened.mean(axis=0)) ** 2).sum()
    assert difference == pytest.approx(extended.map.unexplained, abs=1e-4)  # all of it in the null direction(s)
    np.testing.assert_allclose(extended.base("amp")[rows["index"]], np.load(spaces / "amp.npy"), atol=1e-5)
    again = extended_space(spaces / "amp.whiten.npy", whole_and_subset["whole"], whole_and_subset["cache"])
    assert again.seconds_encoding is None and "from the cache" in again.description()
    np.testing.assert_array_equal(again.trained(), trained)
    other = write_toy_dataset(whole_and_subset["whole"].with_name("b.parquet"), varied_entries(90))
    assert extended_space(spaces / "amp.whiten.npy", other, whole_and_subset["cache"]).seconds_encoding is not None


def test_the_cli_searches_the_whole_dataset_and_says_what_it_searched(whole_and_subset, tiny_bert, capsys):
    from defsent_plus.cli import main as cli

    model = whole_and_subset["spaces"].parent / "model"
    load_encoder(tiny_bert).save(model)
    write_json(model / TRAINING_CARD, {"dataset": str(whole_and_subset["subset"]), "pooling": "cls",
                                       "entry_space": str(whole_and_subset["spaces"] / "amp.whiten.npy")})
    subset_entries = set(read_dataset(whole_and_subset["subset"])["entry"])
    outside = next(e for e in sorted(varied_entries(120)) if e not in subset_entries)
    query = varied_entries(120)[outside][0]
    cache = ["--cache-dir", str(whole_and_subset["cache"])]
    assert cli(["reverse-dictionary", "--model", str(model), *cache, query]) == 0
    captured = capsys.readouterr()
    assert f"candidates: 60 entries of {whole_and_subset['subset']}, the model's training dataset" in captured.err
    assert (f"  {outside!r}, which has this sentence as a definition in {whole_and_subset['whole']}: not among the "
            "candidates") in captured.out
    assert cli(["reverse-dictionary", "--model", str(model), "--search", str(whole_and_subset["whole"]), *cache,
                query]) == 0
    captured = capsys.readouterr()
    assert f"candidates: 120 entries of {whole_and_subset['whole']} (the model's space extended" in captured.err
    assert f"  {outside!r}, which has this sentence as a definition in {whole_and_subset['whole']}: rank " in (
        captured.out)
    assert cli(["reverse-dictionary", "--model", str(model), "--search", "nowhere.parquet", query]) == 2
    assert "--search: expected a dataset parquet or one of ['a', 'b', 'c']" in capsys.readouterr().err


def test_a_space_that_cannot_be_extended_says_why(tmp_path):
    from defsent_plus.spaces.extension import SpaceRecipe

    write_npy(tmp_path / "entries.npy", np.zeros((3, 2), dtype=np.float32))
    with pytest.raises(DefSentError, match="its name starts with 'entries', expected one of"):
        SpaceRecipe.of(tmp_path / "entries.npy")
    with pytest.raises(DefSentError, match="no record of the encoder that built this entry space"):
        SpaceRecipe.of(tmp_path / "amp.whiten.npy")
    write_json(tmp_path / "entry_space.json", {"encoder_path": "enc"})
    recipe = SpaceRecipe.of(tmp_path / "amp.whiten.npy")
    expected = ("amp", "amp.npy", "enc", 128)  # a record without max_length: the config's default
    assert (recipe.base, recipe.base_path.name, recipe.encoder_path, recipe.max_length) == expected


@pytest.mark.parametrize("candidates", [1, 6, 10, 1000])
def test_the_chance_level_is_the_metrics_of_a_uniformly_random_rank(candidates):
    from defsent_plus.evaluation.reverse_dictionary import random_ranking_metrics

    every_rank = ranking_metrics(np.arange(1, candidates + 1))  # each rank equally likely
    assert random_ranking_metrics(candidates) == pytest.approx({k: v for k, v in every_rank.items()
                                                                if k != "queries"})


def test_the_pages_say_why_the_base_rows_coincide_and_where_chance_lies(tmp_path, trained_model, tiny_bert):
    from defsent_plus.evaluation.reverse_dictionary import write_comparison
    from defsent_plus.names import RANKING_METRICS

    out = entry_ranking_files(tmp_path, trained_model, tiny_bert)
    table = pd.read_csv(out["tsv"], sep="\t")
    base = table[table["model"] == "base"].set_index(["protocol", "split"])[list(RANKING_METRICS)]
    assert base.loc["heldout_queries"].equals(base.loc["cosine"])  # what the page's line explains
    compare = {name: tmp_path / f"compare.{name}" for name in ("tsv", "md")}
    write_comparison(runs=[{"run": "r", "json": str(out["json"])}], method_of=method_of, out_tsv=compare["tsv"],
                     out_md=compare["md"])
    n = int(table["candidates"].iloc[0])
    chance = ranking_metrics(np.arange(1, n + 1))
    for page in (out["md"], compare["md"]):
        text = page.read_text()
        assert "base rows: a starting model has no pooler trained against an entry space" in text
        line = next(line for line in text.splitlines() if line.startswith("Chance level"))
        assert f"{n:,} candidates: mrr = H_{n}/{n} = {chance['mrr']:.4f}" in line
        assert f"top1 = {chance['top1']:.3f}" in line and f"top10 = {chance['top10']:.3f} %" in line
