"""An evaluator's declaration is checked when it is made and when it scores: what the system could not use is
refused by name."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from conftest import FIXTURES

from defsent_plus.errors import DefSentError
from defsent_plus.evaluation.embeddings import write_embeddings
from defsent_plus.evaluation.sentence_sets import sentences_of_set
from defsent_plus.evaluators import Evaluator, Table, evaluator_of, load_plugins
from defsent_plus.evaluators.scoring import write_scores

SENTEVAL = FIXTURES / "senteval"
TABLE = Table(title=lambda config: "t", caption="c", category="c")


@pytest.mark.parametrize(("fields", "message"), [
    ({"table": TABLE}, "a table needs a score"),
    ({"sentence_set": "wiki", "score": lambda *a: None}, "unknown sentence set 'wiki'"),
    ({"sentence_set": "sts"}, "a score needs a sentence set to read, and a set a score"),
    ({"name": "Bad-Name"}, "expected lowercase letters"),
    ({"threads": "all"}, "expected 'one' or 'job'"),
])
def test_a_declaration_the_system_could_not_use_is_refused(fields, message):
    with pytest.raises(ValueError, match=message):
        Evaluator(**{"name": "toy", "description": "d", **fields})


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """Registers the module written as ``toy_eval.py`` (config evaluator_plugins); the built-ins only afterwards."""
    monkeypatch.syspath_prepend(str(tmp_path))

    def register(source: str) -> None:
        (tmp_path / "toy_eval.py").write_text(source)
        monkeypatch.delitem(sys.modules, "toy_eval", raising=False)
        load_plugins(["toy_eval"])

    yield register
    load_plugins()


def test_a_plugin_that_declares_no_evaluator_is_refused_naming_the_config_key(plugin):
    with pytest.raises(DefSentError, match="config: evaluator_plugins.*'toy_eval' does not declare .*EVALUATOR"):
        plugin("OTHER = 1\n")
    with pytest.raises(DefSentError, match="toy_eval.EVALUATOR is of type int, expected Evaluator"):
        plugin("EVALUATOR = 1\n")


def test_a_score_without_avg_is_refused_and_writes_no_score_file(plugin, tmp_path):
    plugin("from defsent_plus.evaluators import Evaluator, Scored\n"
           "EVALUATOR = Evaluator(name='noavg', description='d', sentence_set='sts',\n"
           "                      score=lambda vectors, senteval, options, threads: Scored({'STS12': 1.0}))\n")
    assert evaluator_of("noavg").sentence_set == "sts"
    sentences = sentences_of_set("sts", SENTEVAL)
    vectors = np.random.default_rng(0).normal(size=(len(sentences), 4)).astype(np.float32)
    write_embeddings(vectors, sentences, tmp_path / "v.npy", tmp_path / "v.json", label="m", model_dir=tmp_path,
                     sentence_set="sts", pooling="mean")
    with pytest.raises(DefSentError, match="evaluator noavg.*a score needs 'avg'"):
        write_scores(evaluator="noavg", embeddings=tmp_path / "v.npy", record=tmp_path / "v.json",
                     senteval_dir=SENTEVAL, out_json=tmp_path / "s.json", options={})
    assert not (tmp_path / "s.json").exists()
