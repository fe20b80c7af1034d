"""Small builders shared by tests: a toy dictionary dataset in the stage's parquet format."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import torch

TOY_ENTRIES = {
    "giraffe": ["a large african animal with a long neck", "the tall animal of africa"],
    "lion": ["a large cat of africa"],
    "dog": ["an animal kept in the house", "a small animal that can run fast", "a good animal"],
    "city": ["a large place where a person can live"],
    "red": ["the color of blood"],
    "night": ["the dark time of day"],
}


def toy_frame(entries: dict[str, list[str]] | None = None) -> pd.DataFrame:
    entries = entries or TOY_ENTRIES
    names = sorted(entries)
    return pd.DataFrame({
        "entry": names,
        "definitions": [entries[n] for n in names],
        "sources": [["toy"] * len(entries[n]) for n in names],
    })


def write_toy_dataset(path: Path, entries: dict[str, list[str]] | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    toy_frame(entries).to_parquet(path, index=False)
    return path


@pytest.fixture(autouse=True)
def one_thread():
    """Toy sizes gain nothing from threads, and threads spinning on shared cores cost seconds (a module that imports
    it runs each of its tests on one thread)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
