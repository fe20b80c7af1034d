"""One encoder scored with one pooling on one benchmark: the ``score`` and ``dev_score`` jobs' work."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import torch

from defsent_plus.encoders.models import load_encoder
from defsent_plus.encoders.runtime import device_for_run
from defsent_plus.evaluation.senteval import TRANSFER_TASKS, senteval_scores
from defsent_plus.evaluation.sts import STS_TASKS, encoder_embed, sts_scores
from defsent_plus.io import write_json
from defsent_plus.training.selection import DEV_TASK

log = logging.getLogger(__name__)


def write_benchmark_scores(
    model_dir: str | Path, senteval_dir: str | Path, out_json: str | Path, benchmark: str, pooling: str,
    batch_size: int = 128, max_length: int = 128, label: str | None = None, n_jobs: int | None = None,
    sts_aggregation: str = "all",
) -> dict:
    """Score one encoder with one pooling on ``sts`` (the 7 STS tasks), ``senteval`` (the 7 transfer tasks)
    or ``dev`` (STS-B dev, the only score used to select models). ``n_jobs``: parallel classifier fits of SentEval's
    cross-validation (the results do not depend on it)."""
    encoder = load_encoder(model_dir).to(device_for_run())
    embed = encoder_embed(encoder, pooling, batch_size, max_length, progress=True)
    start = time.perf_counter()
    with torch.inference_mode():
        if benchmark == "senteval":
            scores = senteval_scores(embed, senteval_dir, TRANSFER_TASKS, n_jobs=n_jobs)
        else:
            scores = sts_scores(embed, senteval_dir, STS_TASKS if benchmark == "sts" else (DEV_TASK,),
                                aggregation=sts_aggregation)
    result = {"model": label or str(model_dir), "model_dir": str(model_dir), "pooling": pooling,
              "benchmark": benchmark, "scores": scores, "seconds": round(time.perf_counter() - start, 1)}
    if benchmark != "senteval":
        result["sts_aggregation"] = sts_aggregation
    if benchmark == "dev":
        result["dev_score"] = scores[DEV_TASK]
    log.info("%s %s %s: %s", benchmark, label, pooling, {k: round(v, 2) for k, v in scores.items()})
    write_json(out_json, result)
    return result
