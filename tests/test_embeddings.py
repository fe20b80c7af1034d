"""The embedding stage: stored sentence embeddings equal fresh encodings, are refused for other sentences, and score
exactly as encoding on the fly does; STS scorings store their per-pair similarities."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from defsent_plus.encoders.models import load_encoder
from defsent_plus.errors import DefSentError
from defsent_plus.evaluation.embeddings import read_sentence_embeddings, stored_embed, write_sentence_embeddings
from defsent_plus.evaluation.sentence_sets import SENTENCE_SETS, sentences_of_set
from defsent_plus.evaluators.scoring import write_scores
from defsent_plus.io import read_json
from defsent_plus.sts import PAIR_COLUMNS, STS_TASKS, encoder_embed, sts_scores

FIXTURE = Path(__file__).parent / "fixtures" / "senteval"


def embed_set(model_dir, tmp_path: Path, sentence_set: str, pooling: str = "mean") -> tuple[Path, Path]:
    npy, record = tmp_path / f"{sentence_set}.{pooling}.npy", tmp_path / f"{sentence_set}.{pooling}.json"
    write_sentence_embeddings(model_dir=model_dir, senteval_dir=FIXTURE, sentence_set=sentence_set, pooling=pooling,
                              batch_size=8, max_length=32, out_npy=npy, out_json=record, label="tiny")
    return npy, record


def test_sets_are_the_distinct_sentences_of_their_benchmarks():
    sts = sentences_of_set("sts", FIXTURE)
    assert len(sts) == len(set(sts)) and sts
    dev = sentences_of_set("stsb-dev", FIXTURE)
    assert dev and len(dev) == len(set(dev)) and set(dev).isdisjoint({""})
    with pytest.raises(DefSentError, match="unknown sentence set"):
        sentences_of_set("sts17", FIXTURE)
    assert set(SENTENCE_SETS) == {"sts", "stsb-dev", "senteval"}


@pytest.mark.parametrize("pooling", ["mean", "cls"])
def test_stored_embeddings_equal_fresh_encodings(tiny_bert, tmp_path, pooling):
    npy, record = embed_set(tiny_bert, tmp_path, "sts", pooling)
    sentences = sentences_of_set("sts", FIXTURE)
    vectors, stored = read_sentence_embeddings(npy, record, sentences)
    fresh = load_encoder(tiny_bert).encode(sentences, pooling, batch_size=8, max_length=32)
    np.testing.assert_array_equal(np.stack([vectors[s] for s in sentences]), fresh)
    assert stored["sentences"] == len(sentences) and stored["pooling"] == pooling and stored["dim"] == fresh.shape[1]
    record = stored["provenance"]
    assert record["device"] == "cpu" and record["precision"] == "fp32" and record["threads"] >= 1
    assert {"torch", "transformers", "scikit-learn", "project"} <= set(record)


def test_embeddings_of_other_sentences_are_refused(tiny_bert, tmp_path):
    npy, record = embed_set(tiny_bert, tmp_path, "stsb-dev")
    sentences = sentences_of_set("stsb-dev", FIXTURE)
    with pytest.raises(DefSentError, match="re-run its embed job"):
        read_sentence_embeddings(npy, record, sentences[:-1] + ["a sentence the data did not have"])
    vectors, _ = read_sentence_embeddings(npy, record, sentences)
    with pytest.raises(DefSentError, match="were not encoded"):
        stored_embed(vectors)(["not in the set"])


def test_scores_from_stored_embeddings_equal_encoding_on_the_fly(tiny_bert, tmp_path):
    npy, record = embed_set(tiny_bert, tmp_path, "sts")
    out = tmp_path / "sts_mean.json"
    pairs_file = tmp_path / "sts_mean.pairs.parquet"
    result = write_scores(evaluator="sts", embeddings=npy, record=record, senteval_dir=FIXTURE, out_json=out,
                          out_pairs=pairs_file, options={"sts_aggregation": "wmean"})
    embed = encoder_embed(load_encoder(tiny_bert), "mean", batch_size=8, max_length=32)
    assert result["scores"] == sts_scores(embed, FIXTURE, STS_TASKS, aggregation="wmean")
    assert read_json(out)["embeddings"]["digest"] == read_json(record)["digest"]
    pairs = pd.read_parquet(pairs_file)
    assert tuple(pairs.columns) == PAIR_COLUMNS
    assert list(dict.fromkeys(pairs["task"])) == list(STS_TASKS)
    assert set(pairs.loc[pairs["task"] == "STS12", "subset"]) == {"MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN",
                                                                  "surprise.SMTnews"}
    assert np.isfinite(pairs["similarity"]).all() and (pairs["similarity"].abs() <= 1 + 1e-9).all()


def test_dev_scoring_stores_pairs_and_the_dev_score(tiny_bert, tmp_path):
    npy, record = embed_set(tiny_bert, tmp_path, "stsb-dev")
    result = write_scores(evaluator="dev", embeddings=npy, record=record, senteval_dir=FIXTURE,
                          out_json=tmp_path / "d.json", out_pairs=tmp_path / "d.parquet",
                          options={"sts_aggregation": "all"})
    pairs = pd.read_parquet(tmp_path / "d.parquet")
    assert set(pairs["task"]) == {"STSB-dev"} and result["dev_score"] == result["scores"]["STSB-dev"]


def test_score_tables_name_what_the_scores_were_computed_with(tiny_bert, tmp_path):
    from importlib.metadata import version

    from defsent_plus.evaluation.report import write_score_tables
    from defsent_plus.io import write_json

    npy, record = embed_set(tiny_bert, tmp_path, "sts")
    write_scores(evaluator="sts", embeddings=npy, record=record, senteval_dir=FIXTURE, out_json=tmp_path / "s.json",
                 out_pairs=tmp_path / "s.parquet", options={"sts_aggregation": "all"})
    write_json(tmp_path / "best.json", {"best": {"model": "elsewhere"}})
    rows = [{"scores": tmp_path / "s.json", "pairs": tmp_path / "s.parquet", "label": "tiny", "group": "", "step": 0,
             "pooling": "mean"}]
    write_score_tables(rows=rows, best_json=tmp_path / "best.json", out_tsv=tmp_path / "t.tsv",
                       out_md=tmp_path / "t.md", title="t", bootstrap={"resamples": 100, "level": 0.9, "seed": 0})
    footer = (tmp_path / "t.md").read_text().split("Computed with: ")[1]
    assert f"torch {version('torch')}" in footer and f"transformers {version('transformers')}" in footer
    assert "device cpu" in footer and "precision fp32" in footer and "project " in footer
