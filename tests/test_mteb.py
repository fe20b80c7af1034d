"""MTEB as an evaluator: its STS tasks on the stored vectors, offline, in MTEB's results layout, equal to this
project's scores of the same vectors (up to float32 ties), encoding nothing it was given."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import FIXTURES, REPO

from defsent_plus.encoders.models import load_encoder
from defsent_plus.errors import DefSentError
from defsent_plus.evaluation.embeddings import write_embeddings
from defsent_plus.evaluation.mteb_eval import (
    MTEB_NAMES,
    local_sts_task,
    model_meta,
    run_mteb,
    stored_vectors_encoder,
    workflow_encode,
    write_mteb,
)
from defsent_plus.evaluation.sentence_sets import sentences_of_set
from defsent_plus.sts import STS_TASKS, load_sts_task, pair_similarities

SENTEVAL = FIXTURES / "senteval"


def test_mteb_is_a_declared_dependency():
    """The default run's rule mteb imports it: a missing one would fail late, inside a job (it did once)."""
    import tomllib


    dependencies = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    assert any(dependency.startswith("mteb") for dependency in dependencies)


@pytest.fixture(scope="module")
def stored(tmp_path_factory, tiny_bert) -> dict:
    """Seeded random vectors of the fixture STS sentences (spread cosines: the tiny BERT's are all near 1, where
    float32 round-off reorders most pairs), stored as the embed job stores them, and the score job's per-pair
    similarities."""
    folder = tmp_path_factory.mktemp("mteb")
    sentences = sentences_of_set("sts", SENTEVAL)
    vectors = np.random.default_rng(0).normal(size=(len(sentences), 32)).astype(np.float32)
    write_embeddings(vectors, sentences, folder / "sts.npy", folder / "sts.json", label="tiny", model_dir=tiny_bert,
                     sentence_set="sts", pooling="mean", batch_size=128, max_length=128)
    pairs = pair_similarities(dict(zip(sentences, vectors, strict=True)), SENTEVAL)
    pairs.to_parquet(folder / "pairs.parquet")
    return {"folder": folder, "vectors": dict(zip(sentences, vectors, strict=True)), "model": tiny_bert}


def test_mteb_scores_the_stored_vectors_like_the_project(stored):
    folder = stored["folder"]
    write_mteb(embeddings=folder / "sts.npy", record=folder / "sts.json", pairs=folder / "pairs.parquet",
               senteval_dir=SENTEVAL, model_dir=stored["model"], out_dir=folder / "mteb",
               out_check=folder / "check.tsv", name="defsent-plus/tiny.mean", revision="abc123", pooling="mean")
    check = pd.read_csv(folder / "check.tsv", sep="\t")
    assert list(check["task"]) == list(STS_TASKS) and list(check["mteb_task"]) == list(MTEB_NAMES.values())
    assert check["difference_float32"].abs().max() < 1e-4, check  # MTEB's cosines are float32
    assert check["difference"].abs().max() > 1e-3, check  # identical-sentence pairs: tied in float32, not float64
    results = folder / "mteb" / "results" / "defsent-plus__tiny.mean" / "abc123"
    assert {p.stem for p in results.glob("*.json")} == {*MTEB_NAMES.values(), "model_meta"}
    meta = json.loads((results / "model_meta.json").read_text())
    assert (meta["revision"], meta["embed_dim"], meta["similarity_fn_name"]) == ("abc123", 32, "cosine")
    assert meta["n_parameters"] == sum(p.numel() for p in load_encoder(stored["model"]).model.parameters())
    sts12 = json.loads((results / "STS12.json").read_text())
    assert sts12["dataset_revision"].startswith("senteval-")  # read locally, never MTEB's hub copy
    assert 100 * sts12["scores"]["test"][0]["cosine_spearman"] == pytest.approx(check["mteb"][0], abs=1e-3)
    assert [sts12[key] for key in ("evaluation_time", "date", "evaluation_phases")] == [None] * 3  # no timing
    from mteb.results import TaskResult

    assert TaskResult.from_disk(results / "STS12.json").get_score() == sts12["scores"]["test"][0]["main_score"]


def test_the_stored_vectors_serve_every_sts_sentence_and_others_are_encoded_once(stored):
    meta = model_meta("defsent-plus/tiny.mean", "r", None, 32, 128)
    tasks = [local_sts_task(task, SENTEVAL) for task in ("STS12", "SICKR")]
    complete = stored_vectors_encoder(stored["vectors"], meta)  # no encoder: a missing sentence would be an error
    expected = run_mteb(complete, tasks, stored["folder"] / "complete")
    pairs = load_sts_task(SENTEVAL, "STS12")
    dropped = {s: v for s, v in stored["vectors"].items() if s != pairs.sentences1[0]}
    calls = []

    def encode(sentences: list[str]) -> np.ndarray:
        calls.append(list(sentences))
        return np.stack([stored["vectors"][s] for s in sentences])

    partial = stored_vectors_encoder(dropped, meta, encode)
    assert run_mteb(partial, [local_sts_task(t, SENTEVAL) for t in ("STS12", "SICKR")],
                    stored["folder"] / "partial") == expected
    assert calls == [[pairs.sentences1[0]]] and partial.encoded == 1
    with pytest.raises(DefSentError, match="1 sentences of STS12 are not stored"):
        run_mteb(stored_vectors_encoder(dropped, meta), [local_sts_task("STS12", SENTEVAL)], stored["folder"] / "x")


def test_an_unknown_local_task_is_refused():
    with pytest.raises(DefSentError, match="no local data for STS task 'STS17'"):
        local_sts_task("STS17", Path("."))


def test_mtebs_mock_run_passes_every_text_task_through_the_workflows_encoder(tiny_bert):
    """MTEB's own check of a model implementation (``mteb.mock_run``: a mock task of every text task type, offline)
    on the wrapper rule ``mteb`` uses, with no stored vector: every sentence goes through the workflow's encoder and
    pooling, as the tasks an online user adds to ``evaluation.mteb.tasks`` do."""
    import mteb

    model = stored_vectors_encoder({}, model_meta("defsent-plus/tiny.mean", "r", None, 32, 32),
                                   workflow_encode(tiny_bert, "mean", 16, 32))
    results = mteb.mock_run(model)
    ran = {name for name, status in results.items() if status is not None}
    assert results.all_passed, results.to_markdown()
    assert {"MockSTSTask", "MockClassificationTask", "MockRetrievalTask", "MockClusteringTask"} <= ran
    assert model.encoded > 0 and len(model.vectors) == model.encoded
