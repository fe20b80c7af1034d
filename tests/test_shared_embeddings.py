"""An encoder's STS embeddings are computed once: the baselines' template-``none`` pass batches the STS sentences as
rule ``embed`` does and pools them with its functions, so the embed job reads its vectors from that cache, bit for bit
equal to a forward pass of its own; the plan sends it there only where that holds."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import REPO
from workflow_utils import validated

from defsent_plus.baselines.extract import split_blocks
from defsent_plus.baselines.reuse import cached_vectors, write_cached_sentence_embeddings
from defsent_plus.baselines.spec import extraction_options, extraction_request
from defsent_plus.baselines.stage import sts_block, write_cache
from defsent_plus.errors import DefSentError
from defsent_plus.evaluation.embeddings import write_sentence_embeddings
from defsent_plus.evaluation.sentence_sets import sts_sentences
from defsent_plus.io import read_json, read_npy, sentences_digest, write_json
from defsent_plus.pipeline.dag import baseline_cache
from defsent_plus.pipeline.plan import Plan

FIXTURE = Path(__file__).parent / "fixtures" / "senteval"
ALIGNMENT = {"min_score": 5.0, "uniformity_sentences": 20, "seed": 0}
GRID = {"templates": ["none"], "layers": [["last"]], "layer_sweep": [], "aggregations": ["cls", "mean", "max", "idf"],
        "sources": ["encoder"], "postprocess": ["none"], "fit": ["corpus"]}


@pytest.fixture(scope="module")
def cache(tiny_bert, tmp_path_factory) -> Path:
    """A template-none cache of the tiny model on the SentEval fixture: the rest of its evaluation split in batches
    of 16, the STS sentences in embed's batches of 8."""
    root = tmp_path_factory.mktemp("shared")
    corpus = root / "corpus.txt"
    corpus.write_text("".join(f"a definition of word {k}\n" for k in range(30)), encoding="utf-8")
    config = {"baselines": {"alignment": ALIGNMENT, "batch_size": 16, "max_length": 32},
              "evaluation": {"batch_size": 8}}
    request = extraction_request(GRID, "none", {})
    write_cache(model_dir=tiny_bert, senteval_dir=FIXTURE, corpus_txt=corpus, out_dir=root / "none", request=request,
                options=extraction_options(config, request), grid_key="k")
    return root / "none"


def read_from_cache(cache: Path, tiny_bert, out: Path, pooling: str) -> dict:
    return write_cached_sentence_embeddings(
        cache_dir=cache, model_dir=tiny_bert, senteval_dir=FIXTURE, sentence_set="sts", pooling=pooling,
        source={"aggregation": pooling, "batch_size": 8, "max_length": 32, "alignment": ALIGNMENT},
        out_npy=out / f"cached.{pooling}.npy", out_json=out / f"cached.{pooling}.json", label="tiny")


@pytest.mark.parametrize("pooling", ["cls", "mean", "max"])
def test_the_cached_last_layer_is_embeds_forward_pass_bit_for_bit(cache, tiny_bert, tmp_path, pooling):
    record = read_from_cache(cache, tiny_bert, tmp_path, pooling)
    fresh = write_sentence_embeddings(model_dir=tiny_bert, senteval_dir=FIXTURE, sentence_set="sts", pooling=pooling,
                                      batch_size=8, max_length=32, out_npy=tmp_path / "fresh.npy",
                                      out_json=tmp_path / "fresh.json", label="tiny")
    np.testing.assert_array_equal(read_npy(tmp_path / f"cached.{pooling}.npy"), read_npy(tmp_path / "fresh.npy"))
    assert {k: record[k] for k in ("sentences", "digest", "dim", "batch_size", "max_length")} == \
           {k: fresh[k] for k in ("sentences", "digest", "dim", "batch_size", "max_length")}
    assert record["source"].endswith(f"L2/encoder.{pooling}.eval.npy")
    assert record["provenance"]["device"] == "cpu"  # the provenance of the pass that computed the vectors


def test_only_the_sts_block_is_batched_on_its_own():
    assert split_blocks(100, 16, (60, 8)) == [(60, 8), (40, 16)]
    assert split_blocks(100, 16, None) == split_blocks(100, 16, (0, 8)) == [(100, 16)]
    assert split_blocks(60, 16, (60, 8)) == [(60, 8)]
    assert "sts_batch_size" not in extraction_options(
        {"baselines": {"alignment": ALIGNMENT, "batch_size": 16, "max_length": 32}, "evaluation": {"batch_size": 8}},
        extraction_request({**GRID, "templates": ["T0"], "aggregations": ["mask"]}, "T0", {}))


def test_a_cache_of_other_sentences_or_without_the_last_layer_is_refused(cache, tiny_bert, tmp_path):
    index = read_json(cache / "index.json")
    other = tmp_path / "other"
    other.mkdir()
    write_json(other / "index.json", {**index, "eval_digest": "0" * 16})
    with pytest.raises(DefSentError, match="re-run its baseline_embed job"):
        read_from_cache(other, tiny_bert, tmp_path, "mean")
    write_json(other / "index.json", {**index, "layers": {"L1": [1]}})
    with pytest.raises(DefSentError, match=r"no layer set of the last layer \(2\) alone"):
        read_from_cache(other, tiny_bert, tmp_path, "mean")
    assert not (tmp_path / "cached.mean.json").exists()
    evaluation = ["a sentence", "another one"]
    with pytest.raises(DefSentError, match="1 sentences are not in its evaluation split, e.g. 'unknown'"):
        cached_vectors(cache, {**index, "eval_digest": sentences_digest(evaluation)}, evaluation,
                       ["a sentence", "unknown"], "mean")


def test_a_pass_whose_evaluation_split_does_not_start_with_the_sts_sentences_is_refused():
    sentences = sts_sentences(FIXTURE)
    assert sts_block([*sentences, "a dev sentence"], FIXTURE, {"sts_batch_size": 8}) == (len(sentences), 8)
    assert sts_block(sentences, FIXTURE, {}) is None  # a template: batched with the rest
    with pytest.raises(DefSentError, match="does not start with the STS sentences"):
        sts_block([sentences[1], sentences[0], *sentences[2:]], FIXTURE, {"sts_batch_size": 8})


def default_plan(change=lambda config: None) -> Plan:
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    change(config)
    return Plan(validated(config), lambda run, step: {})


def test_the_default_plan_reads_minilms_sts_vectors_from_its_baselines_pass():
    plan = default_plan()
    job = plan.embedding_job("minilm", "sts", "mean")
    assert job["cache"] == baseline_cache("minilm", "none") and job["aggregation"] == "mean"
    assert job["batch_size"] == extraction_options(plan.config, plan.baseline_request("minilm", "none"))[
        "sts_batch_size"]
    assert "cache" not in plan.embedding_job("minilm", "stsb-dev", "mean")  # no block of its own in the cache
    assert "cache" not in plan.embedding_job("default.step3", "sts", "mean")  # no baselines pass


@pytest.mark.parametrize("change", [
    lambda c: c["evaluation"].update(max_length=64),
    lambda c: c["baselines"]["grids"]["extraction"].update(layers=[[1, "last"]], layer_sweep=[]),
    lambda c: c["baselines"]["grids"]["extraction"].update(templates=["T0"]),
    lambda c: c["baselines"].update(encoders={}),
], ids=["other max_length", "no last layer alone", "no template none", "no baselines"])
def test_an_embedding_the_cache_does_not_hold_is_encoded(change):
    job = default_plan(change).embedding_job("minilm", "sts", "mean")
    assert "cache" not in job and set(job) == {"batch_size", "max_length"}
