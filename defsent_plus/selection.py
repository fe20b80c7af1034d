"""Dev scoring of trained encoders (STS-B dev, never a test set): the input of best-checkpoint selection."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import torch

from .evaluation import encoder_embed, sts_scores
from .io import write_json
from .models import device_for_run, load_encoder

log = logging.getLogger(__name__)
DEV_TASK = "STSB-dev"


def write_dev_score(
    model_dir: str | Path, senteval_dir: str | Path, out_json: str | Path, pooling: str = "mean",
    batch_size: int = 128, max_length: int = 128, labels: dict | None = None,
) -> dict:
    """Score an encoder on STS-B dev (Spearman x 100 of cosine with ``pooling``) and write ``dev.json``."""
    encoder = load_encoder(model_dir).to(device_for_run())
    start = time.perf_counter()
    with torch.inference_mode():
        score = sts_scores(encoder_embed(encoder, pooling, batch_size, max_length), senteval_dir, (DEV_TASK,))
    result = {**(labels or {}), "task": DEV_TASK, "pooling": pooling, "dev_score": score[DEV_TASK],
              "seconds": round(time.perf_counter() - start, 2)}
    log.info("dev score of %s: %.2f", model_dir, result["dev_score"])
    write_json(out_json, result)
    return result
