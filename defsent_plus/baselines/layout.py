"""Where a baseline cache keeps its files (torch-free, so the grid job reads a cache without loading torch)."""

from __future__ import annotations

from pathlib import Path

INDEX = "index.json"


def cache_file(root: str | Path, layers: str, source: str, aggregation: str, split: str) -> Path:
    return Path(root) / layers / f"{source}.{aggregation}.{split}.npy"
