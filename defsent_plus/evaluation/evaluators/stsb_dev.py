"""STS-B dev: the only score that selects models (each PST step's best candidate, SimCSE's checkpoints). Scored
with the selection's pooling and encoding options (rule ``dev_score``), never tabled; its file's ``dev_score`` is
what the selection reads."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import numpy as np

from defsent_plus.evaluation.evaluators import Evaluator, Scored
from defsent_plus.evaluation.evaluators.sts import sts_pairs_score
from defsent_plus.names import DEV_TASK

stsb_dev_pairs = sts_pairs_score((DEV_TASK,))


def dev_score(vectors: Mapping[str, np.ndarray], senteval_dir: Path, options: dict, threads: int) -> Scored:
    scored = stsb_dev_pairs(vectors, senteval_dir, options, threads)
    return replace(scored, fields={**scored.fields, "dev_score": scored.scores[DEV_TASK]})


EVALUATOR = Evaluator(
    name="dev",
    description="STS-B dev: Spearman x 100 of cosine similarity, the selection score",
    sentence_set="stsb-dev",
    score=dev_score,
    options=lambda config: {"sts_aggregation": "all"},  # one dataset: the three aggregations agree
    paired=True,
)
