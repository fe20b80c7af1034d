"""The training-free baselines (003): post-processing, token aggregation, layers, static and random models, the
grid's combinations and the errors a user sees, on tiny models and synthetic data with known answers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from grid_reference import apply_chain, isoscore, score_combination, uniformity
from scipy import stats
from sklearn.preprocessing import QuantileTransformer

from defsent_plus.baselines.aggregation import aggregate, idf_table, most_frequent
from defsent_plus.baselines.extract import StaticAccumulator, batches, layer_vectors, random_table, token_tables
from defsent_plus.baselines.grid import (
    CachedEmbeddings,
    RankedGold,
    SpaceIsotropy,
    alignment,
    covariance_isoscore,
    gram_uniformity,
    grid_blocks,
    grid_targets,
    pair_cosines,
    score_block,
    score_grid,
)
from defsent_plus.baselines.postprocess import UniformQuantiles, fit_chain, fit_transform_chain, transform_rows
from defsent_plus.baselines.report import family_tables
from defsent_plus.baselines.sentences import EvaluationSet, ScoredPart, fit_corpus, sample_definitions
from defsent_plus.baselines.spec import (
    INDEX,
    TEMPLATES,
    Combination,
    cache_file,
    combinations,
    extraction_request,
    parse_chain,
    render_all,
    resolve_layers,
    template_text,
)
from defsent_plus.encoders.models import load_encoder
from defsent_plus.errors import DefSentError
from defsent_plus.evaluation.sts import cosine_rows
from defsent_plus.io import sentences_digest, write_json
from defsent_plus.spaces.entry_matrix import covariance
from defsent_plus.spaces.isotropy import mean_pair_cosine

CPU = torch.device("cpu")
BIASES_ON = {"frequent": True, "punctuation": True, "subword": True}


def correlated_data(n: int = 400, dim: int = 8, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, dim)) @ rng.normal(size=(dim, dim)) * np.linspace(5, 0.5, dim) + 3.0


# ------------------------------------------------------------------------------------------ post-processing


def test_all_but_the_top_removes_exactly_the_top_d_directions():
    x = correlated_data()
    out = apply_chain("abtt2", x, x, abtt_components=1, where="test")
    centred = x - x.mean(0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    top, rest = vt[:2], vt[2:]
    np.testing.assert_allclose(out @ top.T, 0.0, atol=1e-9)  # nothing left along the top-2 directions
    np.testing.assert_allclose(out @ rest.T, centred @ rest.T, atol=1e-9)  # everything else untouched
    assert parse_chain("abtt", "k", abtt_components=3) == [("abtt", 3)]


def test_whitening_gives_identity_covariance_on_its_fit_data():
    x = correlated_data()
    out = apply_chain("whiten", x, x, 1, "test")
    np.testing.assert_allclose(np.cov(out, rowvar=False), np.eye(x.shape[1]), atol=1e-8)
    np.testing.assert_allclose(out.mean(0), 0.0, atol=1e-9)


def test_quantile_u_gives_uniform_marginals():
    x = correlated_data(n=500) ** 3  # heavy tails
    out = apply_chain("quantile", x, x, 1, "test")
    for column in out.T:
        np.testing.assert_allclose(np.sort(column), np.linspace(0, 1, len(column)), atol=1e-6)
        assert stats.kstest(column, "uniform").pvalue > 0.5


def test_zscore_center_l2_and_chains():
    x = correlated_data()
    z = apply_chain("zscore", x, x, 1, "test")
    np.testing.assert_allclose(z.std(0), 1.0, atol=1e-9)
    np.testing.assert_allclose(apply_chain("center", x, x, 1, "test"), x - x.mean(0), atol=1e-9)
    chained = apply_chain("zscore+l2", x, x, 1, "test")
    np.testing.assert_allclose(np.linalg.norm(chained, axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(chained, z / np.linalg.norm(z, axis=1, keepdims=True), atol=1e-12)


@pytest.mark.parametrize("chain", ["center", "zscore", "quantile", "whiten", "abtt3", "zscore+whiten+l2"])
def test_a_post_processor_fitted_on_corpus_a_never_sees_b(chain):
    a, b = correlated_data(seed=1), correlated_data(n=50, seed=2) * 2.0
    out = apply_chain(chain, a, b, 1, "test")
    # each row of B depends on A and itself only: other rows of B change nothing ...
    np.testing.assert_allclose(apply_chain(chain, a, b[:7], 1, "test"), out[:7], atol=1e-12)
    np.testing.assert_allclose(apply_chain(chain, a, b[::-1], 1, "test"), out[::-1], atol=1e-12)
    # ... and the fitted transform is the one of A alone
    np.testing.assert_allclose(fit_chain(chain, a, 1, "test").transform(b), out, atol=1e-12)
    assert not np.allclose(apply_chain(chain, b, b, 1, "test"), out)  # fitting on B would differ


def test_too_few_fit_sentences_name_the_config_key():
    x = correlated_data(n=6, dim=8)
    with pytest.raises(DefSentError, match="config: baselines.fit_corpus.max_sentences.*whiten.*9 fit sentences"):
        apply_chain("whiten", x, x, 1, "config: baselines.fit_corpus.max_sentences")
    with pytest.raises(DefSentError, match="abtt removes 8 directions"):
        apply_chain("abtt8", correlated_data(), x, 1, "k")
    with pytest.raises(DefSentError, match=r"unknown post-processing 'zscore\+l3'"):
        parse_chain("zscore+l3", "config: baselines.grids.g.postprocess[0]")
    with pytest.raises(DefSentError, match="unknown post-processing"):
        parse_chain("none+l2", "k")


def test_alignment_and_uniformity_match_their_definitions():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(20, 4)), rng.normal(size=(20, 4))
    ux, uy = (v / np.linalg.norm(v, axis=1, keepdims=True) for v in (x, y))
    assert alignment(x, y) == pytest.approx(np.mean(np.sum((ux - uy) ** 2, 1)))
    assert alignment(x, 3 * x) == pytest.approx(0.0)
    pairs = [np.exp(-2 * np.sum((ux[i] - ux[j]) ** 2)) for i in range(20) for j in range(i + 1, 20)]
    assert uniformity(x) == pytest.approx(np.log(np.mean(pairs)))


# ------------------------------------------------------------------------------------------ tokens and aggregation


def one_hot_positions(tokens) -> torch.Tensor:
    """Token vectors equal to their position's one-hot: an aggregation then returns its own weights."""
    batch, length = tokens.input_ids.shape
    return torch.eye(length).expand(batch, length, length).clone()


def tiny_batch(encoder, texts, max_length=32):
    return next(batches(encoder.tokenizer, texts, [(len(texts), len(texts))], max_length, CPU))


def tables_for(encoder, corpus, biases=BIASES_ON, frequent_tokens=2, texts=None) -> tuple:
    """(the idf as numpy, the tables)."""
    tables = token_tables(encoder.tokenizer, corpus, texts or corpus,
                          {"frequent_tokens": frequent_tokens, "biases": biases}, 32, CPU)
    return tables.idf.numpy(), tables


def test_idf_follows_hand_computed_document_frequencies_and_weights_sum_to_one(tiny_bert):
    encoder = load_encoder(tiny_bert)
    corpus = ["the dog is a dog", "the cat", "the dog runs", "a bird"]
    idf, device = tables_for(encoder, corpus)
    ids = encoder.tokenizer.convert_tokens_to_ids
    n = len(corpus)
    assert idf[ids("the")] == pytest.approx(np.log(n / 3))
    assert idf[ids("dog")] == pytest.approx(np.log(n / 2))  # twice in one document counts once
    assert idf[ids("cat")] == pytest.approx(np.log(n / 1))
    assert idf[ids("[CLS]")] == pytest.approx(0.0)  # in every document
    assert idf[ids("giraffe")] == pytest.approx(np.log(n / 1))  # unseen: df taken as 1
    rows, _, tokens = tiny_batch(encoder, ["the dog", "the cat and the dog"])
    weights, _ = aggregate("idf", one_hot_positions(tokens), tokens, device)
    np.testing.assert_allclose(weights.sum(1).numpy(), 1.0, atol=1e-6)
    first = int(np.flatnonzero(rows == 0)[0])
    expected = np.array([0, np.log(4 / 3), np.log(2), 0])
    np.testing.assert_allclose(weights[first, :4].numpy(), expected / expected.sum(), atol=1e-6)


def test_biases_drop_exactly_the_listed_token_classes(tiny_bert):
    encoder = load_encoder(tiny_bert)
    corpus = ["the the the dog", "the a a cat", "a bird"]  # most frequent: the, a
    text = "the dog, runs"  # [CLS] the dog , run ##s [SEP]
    tokens_text = encoder.tokenizer.convert_ids_to_tokens(encoder.tokenizer(text)["input_ids"])
    assert tokens_text == ["[CLS]", "the", "dog", ",", "run", "##s", "[SEP]"]
    expected = {  # which positions survive, per switched-on class
        "frequent": [2, 3, 4, 5], "punctuation": [1, 2, 4, 5], "subword": [1, 2, 3, 4],
    }
    for switched, kept in expected.items():
        biases = {name: name == switched for name in BIASES_ON}
        _, device = tables_for(encoder, corpus, biases)
        _, _, tokens = tiny_batch(encoder, [text])
        weights, _ = aggregate("biases", one_hot_positions(tokens), tokens, device)
        assert np.flatnonzero(weights[0].numpy()).tolist() == kept, switched
    _, device = tables_for(encoder, corpus)
    _, _, tokens = tiny_batch(encoder, [text])
    weights, _ = aggregate("biases", one_hot_positions(tokens), tokens, device)
    assert np.flatnonzero(weights[0].numpy()).tolist() == [2, 4]  # all three: dog, run
    np.testing.assert_allclose(weights[0, [2, 4]].numpy(), 0.5)


def test_special_tokens_cls_mean_max_and_fallback(tiny_bert):
    encoder = load_encoder(tiny_bert)
    _, device = tables_for(encoder, ["the dog", "the cat"], frequent_tokens=5)
    _, _, tokens = tiny_batch(encoder, ["the dog runs", "the"])
    vectors = one_hot_positions(tokens)
    cls, _ = aggregate("cls", vectors, tokens, device)
    assert cls[:, 0].tolist() == [1.0, 1.0] and cls[:, 1:].abs().sum() == 0
    mean, _ = aggregate("mean", vectors, tokens, device)
    nospecial, _ = aggregate("mean_nospecial", vectors, tokens, device)
    lengths = tokens.attention.sum(1)
    np.testing.assert_allclose(mean.sum(1).numpy(), 1.0, atol=1e-6)
    assert mean[0, 0] == pytest.approx(1 / float(lengths[0])) and nospecial[0, 0] == 0
    biased, fallback = aggregate("biases", vectors, tokens, device)
    assert fallback == 1  # "the" is frequent: nothing left, so the sentence falls back to mean_nospecial
    row = int(np.argmin(lengths.numpy()))
    np.testing.assert_allclose(biased[row].numpy(), nospecial[row].numpy())
    maximum, _ = aggregate("max", torch.randn(*vectors.shape[:2], 3), tokens, device)
    assert maximum.shape == (2, 3)


def test_multi_mask_prompt_pooling_averages_exactly_the_mask_positions(tiny_bert):
    encoder = load_encoder(tiny_bert)
    _, device = tables_for(encoder, ["the dog"])
    texts, cut = render_all(TEMPLATES["T2"], ["the dog runs"], encoder.tokenizer, 64)
    assert cut == 0
    _, _, tokens = tiny_batch(encoder, texts, 64)
    positions = np.flatnonzero(tokens.input_ids[0].numpy() == encoder.tokenizer.mask_token_id)
    assert len(positions) == 3
    weights, _ = aggregate("mask", one_hot_positions(tokens), tokens, device)
    assert np.flatnonzero(weights[0].numpy()).tolist() == positions.tolist()
    np.testing.assert_allclose(weights[0, positions].numpy(), 1 / 3, atol=1e-6)
    kept, _ = aggregate("mean_nospecial", one_hot_positions(tokens), tokens, device)
    assert (kept[0, positions] > 0).all()  # a prompt's masks are text, not special tokens


def test_a_long_sentence_is_cut_so_the_template_keeps_its_masks(tiny_bert):
    encoder = load_encoder(tiny_bert)
    texts, cut = render_all(TEMPLATES["T4"], ["the dog " * 40, "the cat"], encoder.tokenizer, 48)
    assert cut == 1
    ids = encoder.tokenizer(texts, truncation=True, max_length=48)["input_ids"]
    assert [row.count(encoder.tokenizer.mask_token_id) for row in ids] == [3, 3]


def test_layer_minus_one_equals_the_embedding_matrix_rows(model_dir):
    encoder = load_encoder(model_dir)
    _, inputs, _ = tiny_batch(encoder, ["the dog runs", "a cat"])
    with torch.inference_mode():
        hidden = encoder.model(**inputs, output_hidden_states=True).hidden_states
        static = layer_vectors(encoder.model, inputs, (-1,), hidden)
        both = layer_vectors(encoder.model, inputs, (0, 2), hidden)
    rows = encoder.model.get_input_embeddings().weight[inputs["input_ids"]]
    torch.testing.assert_close(static, rows)
    torch.testing.assert_close(both, (hidden[0] + hidden[2]) / 2)


def test_random_embeddings_are_seeded_and_deterministic():
    first, again, other = random_table(500, 16, 0, 0.1), random_table(500, 16, 0, 0.1), random_table(500, 16, 1, 0.1)
    torch.testing.assert_close(first, again)
    assert not torch.equal(first, other)
    assert float(first.std()) == pytest.approx(0.1, rel=0.05) and abs(float(first.mean())) < 0.01


def test_avg_static_vectors_are_each_tokens_mean_over_its_contexts():
    accumulator = StaticAccumulator(vocab_size=5, hidden=2)
    ids = torch.tensor([[1, 2, 1], [2, 3, 0]])
    attention = torch.tensor([[True, True, True], [True, True, False]])
    vectors = torch.arange(12, dtype=torch.float32).reshape(2, 3, 2)
    accumulator.add(vectors, ids, attention)
    table, seen = accumulator.table()
    torch.testing.assert_close(table[1], (vectors[0, 0] + vectors[0, 2]) / 2)
    torch.testing.assert_close(table[2], (vectors[0, 1] + vectors[1, 0]) / 2)
    assert seen.tolist() == [False, True, True, True, False]  # padding is no context


def test_most_frequent_skips_special_tokens_and_breaks_ties_by_id():
    docs = [[0, 5, 5, 7, 1], [0, 7, 6, 1], [0, 6, 1]]
    assert most_frequent(docs, 10, 2, special_ids=[0, 1]).tolist() == [5, 6]
    assert idf_table(docs, 10, "k")[7] == pytest.approx(np.log(3 / 2))
    with pytest.raises(DefSentError, match="corpus is empty"):
        idf_table([], 10, "config: baselines.fit_corpus")


# ------------------------------------------------------------------------------------------ grid and config errors

GRID = {"templates": ["none", "T0"], "layers": [["last"], [1, "last"]], "layer_sweep": ["cls", "mask"],
        "aggregations": ["cls", "mean", "idf", "mask"], "sources": ["encoder", "avg", "encoder+avg", "random"],
        "postprocess": ["none", "zscore", "whiten+l2"], "fit": ["corpus", "eval"]}


def test_combinations_keep_only_meaningful_rows():
    rows = combinations(GRID, 2, {}, "config: baselines.grids.g")
    assert len(rows) == len(set(rows))
    assert not [r for r in rows if r.aggregation == "mask" and r.template == "none"]  # no mask without a prompt
    assert not [r for r in rows if r.aggregation == "cls" and r.source in ("avg", "random")]
    assert {r.source for r in rows if r.template == "T0"} == {"encoder"}  # static models: no template
    assert {r.layers for r in rows if r.source == "random"} == {"-"}
    assert {(r.postprocess, r.fit) for r in rows} == {("none", "-"), ("zscore", "corpus"), ("zscore", "eval"),
                                                      ("whiten+l2", "corpus"), ("whiten+l2", "eval")}
    sweep = [r for r in rows if r.sweep]
    assert {r.layers for r in sweep} == {"L1"}  # L2 (= last) is a main row already; CLS and mask need a layer >= 1
    assert {(r.template, r.aggregation) for r in sweep} == {("none", "cls"), ("T0", "cls"), ("T0", "mask")}
    swept_mean = combinations({**GRID, "layer_sweep": ["mean"]}, 2, {}, "k")
    assert {r.layers for r in swept_mean if r.sweep} == {"static", "L0", "L1"}
    assert Combination("encoder", "none", "L2", "cls", "none", "-") in rows


def test_extraction_request_gives_encoder_plus_avg_both_halves():
    request = extraction_request(GRID, "none", {})
    assert request["aggregations"]["avg"] == ["mean", "idf"] and "encoder+avg" not in request["aggregations"]
    assert set(request["aggregations"]["encoder"]) == {"cls", "mean", "idf"}
    assert extraction_request(GRID, "T0", {})["aggregations"] == {"encoder": ["cls", "mean", "idf", "mask"]}


def test_bad_layers_and_templates_name_their_config_key():
    assert resolve_layers(["last", 1], 6, "k") == (1, 6)
    assert resolve_layers([-1], 6, "k") == (-1,)
    with pytest.raises(DefSentError, match=r"config: baselines.grids.g.layers\[0\]\[1\].*unknown layer 7"):
        resolve_layers([1, 7], 6, "config: baselines.grids.g.layers[0]")
    with pytest.raises(DefSentError, match="unknown layer -2"):
        resolve_layers([-2], 6, "k")
    with pytest.raises(DefSentError, match=r"config: baselines.templates.mine.*has no \{mask\} token"):
        template_text("mine", {"mine": 'This "{sentence}" means nothing.'}, "config: baselines.templates.mine")
    with pytest.raises(DefSentError, match="exactly once"):
        template_text("two", {"two": "{sentence} {sentence} {mask}"}, "k")
    with pytest.raises(DefSentError, match="unknown template 'T9'"):
        template_text("T9", {}, "k")


def test_fit_corpus_never_contains_a_heldout_query_and_is_never_empty(tmp_path):
    dataset = tmp_path / "a.parquet"
    pd.DataFrame({"entry": ["x", "y"], "definitions": [["one  sense", "two"], ["three", "one sense"]],
                  "sources": [["t", "t"], ["t", "t"]]}).to_parquet(dataset)
    queries = tmp_path / "q.parquet"
    pd.DataFrame({"entry_id": [0], "entry": ["x"], "definition": ["two"], "split": ["dev"]}).to_parquet(queries)
    assert sorted(sample_definitions(dataset, [queries], 10, 0)) == ["one sense", "three"]
    assert sample_definitions(dataset, [queries], 1, 0) == sample_definitions(dataset, [queries], 1, 0)
    everything = tmp_path / "all.parquet"
    pd.DataFrame({"entry_id": [0, 1], "entry": ["x", "y"], "definition": ["one sense", "three"],
                  "split": ["dev", "test"]}).to_parquet(everything)
    with pytest.raises(DefSentError, match="config: baselines.fit_corpus.*would be empty"):
        sample_definitions(dataset, [queries, everything], 10, 0)
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n", encoding="utf-8")
    with pytest.raises(DefSentError, match="empty"):
        fit_corpus({"file": str(empty), "max_sentences": 10, "seed": 0}, None, [])


def test_a_template_longer_than_max_length_names_the_config_key(tiny_bert):
    encoder = load_encoder(tiny_bert)
    with pytest.raises(DefSentError, match="config: baselines.max_length"):
        render_all(TEMPLATES["T4"], ["the dog"], encoder.tokenizer, 8)


def test_baseline_encoders_grids_and_fit_corpus_are_checked_against_the_config():
    from defsent_plus.pipeline.plan import Plan

    def plan_with(baselines: dict) -> None:
        config = {"models": {"m": "dir"}, "dictionary": {"tokenizer": "m"}, "methods": {}, "evaluation": {"tables": []},
                  "runs": {"r": {"method": "defsent_plus", "model": "m", "dataset": "a", "seeds": [0],
                                 "batch_size": 8, "steps": [{"lr": 1e-5, "spaces": ["amp"]}]}},
                  "baselines": {"encoders": {}, "grids": {"g": {**GRID}}, "fit_corpus": {"dataset": "a"},
                                "templates": {}, **baselines}}
        Plan(config, lambda run, step: {})

    plan_with({"encoders": {"m": "g", "r.step1": "g"}})  # valid
    with pytest.raises(DefSentError, match="config: baselines.encoders.m: no grid named 'nope'"):
        plan_with({"encoders": {"m": "nope"}})
    with pytest.raises(DefSentError, match="config: baselines.encoders.r.step2"):
        plan_with({"encoders": {"r.step2": "g"}})
    with pytest.raises(DefSentError, match="config: baselines.fit_corpus.dataset"):
        plan_with({"fit_corpus": {"dataset": "z"}})
    with pytest.raises(DefSentError, match=r"config: baselines.grids.g.postprocess\[0\]"):
        plan_with({"grids": {"g": {**GRID, "postprocess": ["sharpen"]}}})


# ------------------------------------------------------------------------------------------ scoring the grid fast

SYNTHETIC_TASKS = ("STS12", "SICKR")
SYNTHETIC_DIM = 6
SCORING = {"abtt_components": 1, "sts_aggregation": "all", "isotropy_seed": 0, "isotropy_pairs": 300}


def scored_parts(rng: np.random.Generator, rows: np.ndarray) -> list[ScoredPart]:
    """Two parts of pairs among ``rows``, one pair of a sentence with itself (cosine 1 up to round-off), tied gold."""
    first, second = rng.choice(rows, 15), rng.choice(rows, 15)
    second[0] = first[0]
    gold = rng.integers(0, 6, 15).astype(float)
    return [ScoredPart(first[:7], second[:7], gold[:7]), ScoredPart(first[7:], second[7:], gold[7:])]


def synthetic_evaluation(seed: int = 0) -> EvaluationSet:
    """60 sentences: two tasks and STS-B dev of 24 sentences each (the tasks share some), alignment pairs and a
    uniformity sample."""
    rng = np.random.default_rng(seed)
    tasks = {task: scored_parts(rng, np.arange(12 * k, 12 * k + 24)) for k, task in enumerate(SYNTHETIC_TASKS)}
    alignment_rows = rng.permutation(np.arange(20, 60))
    return EvaluationSet([f"sentence {k}" for k in range(60)], tasks, (alignment_rows[:8], alignment_rows[8:16]),
                         np.sort(alignment_rows[10:30]), scored_parts(rng, np.arange(36, 60)))


def write_synthetic_cache(root, evaluation: EvaluationSet, corpus: list[str], seed: int = 0) -> None:
    """A cache of one template ("none"): anisotropic float32 vectors for every (layer set, source, aggregation) the
    synthetic grid reads, each task's own rows for idf_task."""
    rng = np.random.default_rng(seed)
    mixing = rng.normal(size=(SYNTHETIC_DIM, SYNTHETIC_DIM)) * np.linspace(3, 0.3, SYNTHETIC_DIM)

    def vectors(n: int) -> np.ndarray:
        return (rng.normal(size=(n, SYNTHETIC_DIM)) @ mixing + 2.0).astype(np.float32)

    files = [("L2", "encoder", "mean"), ("L2", "avg", "mean"), ("L1", "encoder", "mean"), ("-", "random", "mean"),
             ("L2", "encoder", "idf_task"), ("L2", "avg", "idf_task")]
    for layers, source, aggregation in files:
        splits = {"corpus": len(corpus)}
        if aggregation == "idf_task":
            splits.update({f"eval-{task}": len(evaluation.task_rows(task)) for task in evaluation.tasks})
        else:
            splits["eval"] = len(evaluation.sentences)
        for split, n in splits.items():
            path = cache_file(root, layers, source, aggregation, split)
            path.parent.mkdir(parents=True, exist_ok=True)
            np.save(path, vectors(n))
    write_json(root / INDEX, {"eval_digest": sentences_digest(evaluation.sentences),
                              "corpus_digest": sentences_digest(corpus)})


def synthetic_grid() -> list[Combination]:
    """Every source (encoder + Avg. included), idf_task, every post-processor fitted on the corpus and per task, a
    layer-sweep row."""
    post_fits = [("none", "-")] + [(chain, fit) for chain in ("center", "zscore", "quantile", "whiten", "abtt1",
                                                              "zscore+l2", "quantile+whiten+l2")
                                   for fit in ("corpus", "eval")]
    embeddings = [("encoder", "L2", "mean"), ("avg", "L2", "mean"), ("encoder+avg", "L2", "mean"),
                  ("random", "-", "mean"), ("encoder", "L2", "idf_task"), ("encoder+avg", "L2", "idf_task")]
    rows = [Combination(source, "none", layers, aggregation, chain, fit)
            for source, layers, aggregation in embeddings for chain, fit in post_fits]
    return [*rows, Combination("encoder", "none", "L1", "mean", "none", "-", True)]


def cached_synthetic(root) -> tuple[CachedEmbeddings, EvaluationSet]:
    """The synthetic evaluation set and its cache written under ``root`` (template "none")."""
    evaluation = synthetic_evaluation()
    corpus = [f"definition {k}" for k in range(40)]
    write_synthetic_cache(root / "none", evaluation, corpus)
    return CachedEmbeddings({"none": root / "none"}, evaluation, corpus), evaluation


@pytest.fixture(scope="module")
def synthetic_cache(tmp_path_factory):
    return cached_synthetic(tmp_path_factory.mktemp("cache"))


def reference_table(rows, embeddings, evaluation, options) -> pd.DataFrame:
    return pd.DataFrame([score_combination(c, embeddings, evaluation, options) for c in rows])


def assert_same_table(fast: pd.DataFrame, reference: pd.DataFrame) -> None:
    assert list(fast.columns) == list(reference.columns)
    numeric = reference.select_dtypes("number").columns
    pd.testing.assert_frame_equal(fast.drop(columns=numeric), reference.drop(columns=numeric))
    np.testing.assert_allclose(fast[numeric].to_numpy(float), reference[numeric].to_numpy(float), rtol=0, atol=1e-9)


@pytest.mark.parametrize("sts_aggregation", ["all", "wmean"])
def test_the_fast_grid_scorer_gives_the_reference_table(synthetic_cache, sts_aggregation):
    embeddings, evaluation = synthetic_cache
    options = {**SCORING, "sts_aggregation": sts_aggregation}
    rows = synthetic_grid()
    reference = reference_table(rows, embeddings, evaluation, options)
    assert_same_table(score_grid(rows, embeddings, evaluation, options), reference)
    # the comparison can fail: nearly every row scores differently, transductive rows have no dev or alignment
    assert reference["avg"].nunique() >= 0.9 * len(rows)
    transductive = reference[reference["aggregation"] == "idf_task"]
    assert transductive["transductive"].all() and transductive[["dev", "alignment", "uniformity"]].isna().all().all()
    assert reference.loc[reference["fit"] == "eval", "transductive"].all()


def test_the_fast_grid_scorer_reads_each_cache_file_once(synthetic_cache, monkeypatch):
    embeddings, evaluation = synthetic_cache
    reads = []
    load = np.load
    monkeypatch.setattr(np, "load", lambda path, *args, **kwargs: reads.append(path) or load(path, *args, **kwargs))
    score_grid(synthetic_grid(), embeddings, evaluation, SCORING)
    assert len(reads) == len(set(reads)) == sum(1 for _ in embeddings.roots["none"].rglob("*.npy"))


def test_uniform_quantiles_give_scikit_learns_numbers_bit_for_bit():
    rng = np.random.default_rng(0)
    for n_fit, n_quantiles in [(1500, 1000), (300, 300), (40, 17)]:
        fit = rng.standard_t(3, size=(n_fit, 5))
        fit[: n_fit // 10] = fit[0]  # tied quantiles
        fit[:, 3] = 1.0  # a constant column
        x = rng.standard_t(3, size=(200, 5)) * 2  # beyond the fit range too
        x[:3], x[3], x[4] = fit[:3], fit.max(0), -0.0  # on the quantiles
        expected = QuantileTransformer(n_quantiles=n_quantiles, subsample=None).fit(fit)
        fast = UniformQuantiles(n_quantiles).fit(fit)
        np.testing.assert_array_equal(fast.quantiles_, expected.quantiles_)
        np.testing.assert_array_equal(fast.transform(x), expected.transform(x))
        np.testing.assert_array_equal(fast.transform(fit), expected.transform(fit))
    np.testing.assert_array_equal(apply_chain("quantile+l2", fit, x, 1, "k", fast=True),
                                  apply_chain("quantile+l2", fit, x, 1, "k"))
    x[5, 2] = np.nan  # left out of the fit, NaN after
    np.testing.assert_array_equal(UniformQuantiles(50).fit(x).transform(x),
                                  QuantileTransformer(n_quantiles=50, subsample=None).fit(x).transform(x))


def test_the_fast_metrics_equal_their_definitions():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 8)) + 1.0
    x[5] = x[4]  # a distance of 0
    x[7] = 0.0  # a zero vector
    assert gram_uniformity(x) == pytest.approx(uniformity(x), abs=1e-12)
    isotropy = SpaceIsotropy(seed=3, n_pairs=5000)(x)
    assert isotropy["isoscore"] == pytest.approx(isoscore(x), abs=1e-12)
    assert isotropy["mean_cosine"] == pytest.approx(mean_pair_cosine(x, 3, 5000), abs=1e-12)
    gold = rng.integers(0, 5, 50).astype(float)
    predicted = rng.normal(size=50)
    predicted[:10] = predicted[0]  # ties
    assert RankedGold(gold).spearman_percent(predicted) == pytest.approx(
        stats.spearmanr(predicted, gold).correlation * 100, abs=1e-12)
    assert np.isnan(RankedGold(gold).spearman_percent(np.ones(50)))  # a constant side, as spearmanr
    vectors = rng.normal(size=(30, 4))
    first, second = rng.integers(0, 30, 2000), rng.integers(0, 30, 2000)
    np.testing.assert_array_equal(pair_cosines(vectors, first, second),
                                  cosine_rows(vectors[first], vectors[second]))


CHAINS = ["center", "zscore", "quantile", "whiten", "abtt2", "l2", "zscore+l2", "quantile+whiten+l2", "whiten+zscore",
          "center+abtt1+l2"]


@pytest.mark.parametrize("chain", CHAINS)
def test_transform_rows_is_the_pipelines_transform_bit_for_bit(chain):
    fit, x = correlated_data(n=300, seed=1), correlated_data(n=120, seed=2) * 1.5
    x[3] = 0.0  # a zero row (l2 leaves it zero)
    x[4] = fit.mean(0)  # a zero row after centring
    for fast in (False, True):
        pipeline = fit_chain(chain, fit, 1, "k", fast=fast)
        np.testing.assert_array_equal(transform_rows(pipeline, x), pipeline.transform(x))


@pytest.mark.parametrize("chain", ["none", *CHAINS])
def test_fit_transform_chain_is_apply_chain_on_itself_bit_for_bit(chain):
    x = correlated_data(n=200, seed=3) ** 3  # heavy tails
    x[:20, 2] = x[0, 2]  # tied values, tied quantiles
    expected = apply_chain(chain, x, x, 1, "k")  # scikit-learn's QuantileTransformer, the oracle's
    np.testing.assert_array_equal(fit_transform_chain(chain, x, 1, "k"), expected)
    with pytest.raises(DefSentError, match="config: k"):  # the same errors on too few sentences
        fit_transform_chain("whiten", x[:5], 1, "config: k")


def test_the_isoscore_of_a_covariance_equals_the_one_of_its_eigenvalues():
    rng = np.random.default_rng(0)
    spaces = {"anisotropic": correlated_data(n=500, dim=12), "isotropic": rng.normal(size=(4000, 12)),
              "rank 3": rng.normal(size=(300, 3)) @ rng.normal(size=(3, 12)),
              "one direction": np.outer(rng.normal(size=50), rng.normal(size=12))}
    values = {}
    for name, space in spaces.items():
        values[name] = covariance_isoscore(covariance(space))
        assert values[name] == pytest.approx(isoscore(space), abs=1e-12), name
    assert values["isotropic"] > 0.95 and values["one direction"] == pytest.approx(0.0, abs=1e-12)
    assert values["rank 3"] == pytest.approx(2 / 11, abs=0.05)
    assert np.isnan(covariance_isoscore(covariance(np.ones((10, 4)))))  # no variance at all, as isoscore


def test_score_block_times_its_reads_and_post_processings_without_changing_rows(synthetic_cache):
    embeddings, evaluation = synthetic_cache
    rows = synthetic_grid()
    targets = grid_targets(evaluation, SCORING)
    seconds: dict[str, float] = {}
    for block in grid_blocks(rows):
        timed = score_block(block, embeddings, targets, seconds)
        untimed = score_block(block, embeddings, targets)
        assert [index for index, *_ in timed] == [index for index, *_ in untimed]
        assert_same_table(pd.DataFrame([row for _, row, _ in timed]), pd.DataFrame([row for _, row, _ in untimed]))
        assert all(pairs is None for *_, pairs in timed)
    assert set(seconds) == {"load"} | {f"{c.postprocess} {c.fit}" for c in rows}
    assert all(value > 0 for value in seconds.values())


def test_family_tables_select_on_dev_and_only_read_the_test_average():
    rows = [  # (aggregation, postprocess, fit, transductive, dev, avg)
        ("mean", "none", "-", False, 86.0, 78.0),
        ("mean", "zscore", "corpus", False, 85.0, 79.0),  # the best test average of mean, not its selection
        ("idf_task", "none", "-", True, 80.0, 70.0),  # transductive only: nothing to select
        ("mean", "zscore", "eval", True, 87.0, 80.0),  # the best dev of all, transductive: never selected
    ]
    table = pd.DataFrame([{"source": "encoder", "template": "none", "layers": "L6", "aggregation": a,
                           "postprocess": p, "fit": f, "transductive": t, "dev": d, "avg": v}
                          for a, p, f, t, d, v in rows])
    text = family_tables(table)
    aggregation = text.split("## Best per aggregation")[1].split("##")[0]
    assert "| mean " in aggregation and "encoder, none, L6, mean, none" in aggregation
    mean_line = next(line for line in aggregation.splitlines() if line.startswith("| mean"))
    assert "86.00" in mean_line and "zscore (eval) [transductive]" in mean_line and "80.00" in mean_line
    idf_line = next(line for line in aggregation.splitlines() if line.startswith("| idf_task"))
    assert "- (all transductive)" in idf_line
    post = text.split("## Best per post-processing (fit)")[1].split("##")[0]
    members = {line.split("|")[1].strip() for line in post.splitlines() if line.startswith("| ")}
    assert {"none", "zscore (corpus)", "zscore (eval)"} <= members


def test_the_grid_scored_by_two_processes_equals_one(synthetic_cache):
    embeddings, evaluation = synthetic_cache
    rows = synthetic_grid()
    pd.testing.assert_frame_equal(score_grid(rows, embeddings, evaluation, SCORING, n_jobs=2),
                                  score_grid(rows, embeddings, evaluation, SCORING, n_jobs=1))
