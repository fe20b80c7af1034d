"""Best-candidate selection of a PST step: the highest STS-B dev score (never a test set), its model copied."""

from __future__ import annotations

import logging
import math
import shutil
from collections.abc import Sequence
from pathlib import Path

from defsent_plus.errors import DefSentError
from defsent_plus.io import atomic_path, read_json, write_json

log = logging.getLogger(__name__)
DEV_TASK = "STSB-dev"  # the one score that selects: STS-B dev



def select_best(candidates: Sequence[dict]) -> dict:
    """The candidate with the highest dev score; ties go to the earlier candidate (config order)."""
    if not candidates:
        raise DefSentError("best selection", "no trained candidates to choose from")
    for candidate in candidates:
        if not math.isfinite(candidate["dev_score"]):
            raise DefSentError(candidate.get("dev_json", "dev score"), "dev score is not a finite number")
    return max(candidates, key=lambda c: c["dev_score"])


def write_best(dev_jsons: Sequence[str | Path], model_dirs: Sequence[str | Path], best_json: str | Path,
               best_dir: str | Path, labels: Sequence[dict] | None = None) -> dict:
    """Pick the step's best (space, seed) by dev score and copy its model to ``best_dir`` (no symlink)."""
    candidates = []
    labels = labels or [{} for _ in dev_jsons]
    for dev_json, model_dir, label in zip(dev_jsons, model_dirs, labels, strict=True):
        dev = read_json(dev_json)
        candidates.append({**label, "dev_score": dev["dev_score"], "dev_json": str(dev_json),
                           "model": str(model_dir)})
    best = select_best(candidates)
    with atomic_path(best_dir) as tmp:
        shutil.copytree(best["model"], tmp)
    result = {"best": best, "candidates": candidates}
    write_json(best_json, result)
    log.info("best: %s (dev %.2f)", best["model"], best["dev_score"])
    return result
