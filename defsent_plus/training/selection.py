"""Best-candidate selection of a PST step: the highest STS-B dev score (never a test set), and the copy of its model."""

from __future__ import annotations

import logging
import math
import shutil
from collections.abc import Sequence
from pathlib import Path

from defsent_plus.errors import DefSentError
from defsent_plus.io import atomic_path, read_json, write_json

log = logging.getLogger(__name__)


def select_best(candidates: Sequence[dict]) -> dict:
    """The candidate with the highest dev score; ties go to the earlier candidate (config order)."""
    if not candidates:
        raise DefSentError("best selection", "no trained candidates to choose from")
    for candidate in candidates:
        if not math.isfinite(candidate["dev_score"]):
            raise DefSentError(candidate.get("dev_json", "dev score"), "dev score is not a finite number")
    return max(candidates, key=lambda c: c["dev_score"])


def write_selection(dev_jsons: Sequence[str | Path], candidates: Sequence[dict], best_json: str | Path) -> dict:
    """Pick the step's best (space, seed) by dev score; ``candidates`` are the labels of the dev files, each with the
    candidate's ``model`` directory."""
    scored = [{**label, "dev_score": read_json(dev_json)["dev_score"], "dev_json": str(dev_json)}
              for dev_json, label in zip(dev_jsons, candidates, strict=True)]
    best = select_best(scored)
    result = {"best": best, "candidates": scored}
    write_json(best_json, result)
    log.info("best: %s (dev %.2f)", best["model"], best["dev_score"])
    return result


def copy_model(model_dir: str | Path, best_dir: str | Path) -> None:
    """The selected candidate's weights, copied to the step's ``best/`` (no symlink: it outlives the candidate)."""
    with atomic_path(best_dir) as tmp:
        shutil.copytree(model_dir, tmp)
    log.info("copied %s to %s", model_dir, best_dir)


def prune_candidates(model_dirs: Sequence[str | Path], record: str | Path) -> dict:
    """Delete a step's candidates' weights (``selection.keep_weights: selected``; the selected one is in best/) and
    record what went and how much disk it freed."""
    removed, freed = [], 0
    for model_dir in map(Path, model_dirs):
        if model_dir.is_dir():
            freed += sum(f.stat().st_size for f in model_dir.rglob("*") if f.is_file())
            shutil.rmtree(model_dir)
            removed.append(str(model_dir))
    result = {"removed": removed, "already_gone": len(model_dirs) - len(removed), "bytes_freed": freed}
    write_json(record, result)
    log.info("removed %d candidates' weights (%.1f MB); %d were already gone", len(removed), freed / 1e6,
             result["already_gone"])
    return result
