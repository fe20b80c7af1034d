"""Entry embeddings (000, Eq. 2/4/7/10): AC and AMP vectors for every entry of a dataset.

AC is the mean over an entry's definitions of the last-layer CLS vector, AMP the mean of the
attention-masked mean-pooled vector. All definitions of the dataset go through one length-sorted,
dynamically padded encoding pass that produces both poolings; the per-entry average is one segment mean.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from defsent_plus import names
from defsent_plus.dictionary.table import definition_pairs, read_dataset
from defsent_plus.encoders.encoding import batching_for, device_for_run
from defsent_plus.encoders.models import Encoder, load_encoder
from defsent_plus.io import file_sha256, write_json, write_npy
from defsent_plus.spaces.entry_matrix import check_entry_space

log = logging.getLogger(__name__)

ENTRY_POOLINGS = {"ac": "cls", "amp": "mean"}  # base space -> the pooling its definitions are averaged in
names.require_same_names(ENTRY_POOLINGS, names.BASE_SPACES, "entry_space.ENTRY_POOLINGS")


def segment_mean(vectors: np.ndarray, entry_ids: np.ndarray, n_entries: int) -> np.ndarray:
    """Mean of ``vectors`` rows per entry id (ids ascending and contiguous, every entry present)."""
    if np.any(np.diff(entry_ids) < 0):
        raise ValueError("entry ids must be ascending (definitions grouped by entry)")
    counts = np.bincount(entry_ids, minlength=n_entries)
    if (counts == 0).any():
        raise ValueError(f"entry {int(np.argmin(counts))} has no definition")
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    sums = np.add.reduceat(vectors.astype(np.float64), starts, axis=0)
    return (sums / counts[:, None]).astype(np.float32)


def entry_embeddings(
    encoder: Encoder, frame: pd.DataFrame, batch_size: int = 128, max_length: int = 128, progress: bool = False
) -> dict[str, np.ndarray]:
    """AC and AMP matrices ``[n_entries, hidden]`` (row i = entry id i) from one pass over all definitions, batched
    as :func:`batching_for` picks for the encoder's device."""
    texts, entry_ids = definition_pairs(frame)
    batch_size, max_tokens = batching_for(encoder.device, batch_size)
    pooled = encoder.encode(texts, list(ENTRY_POOLINGS.values()), batch_size=batch_size, max_length=max_length,
                            progress=progress, desc="entry space", max_tokens=max_tokens)
    return {name: segment_mean(pooled[pooling], entry_ids, len(frame)) for name, pooling in ENTRY_POOLINGS.items()}


def write_entry_space(
    encoder_path: str | Path,
    dataset_path: str | Path,
    outputs: dict[str, str | Path],
    meta_path: str | Path,
    batch_size: int = 128,
    max_length: int = 128,
    encoder_name: str | None = None,
    timings: dict | None = None,
    tf32: bool = True,
) -> dict:
    """Build and write the AC/AMP spaces of a dataset with an encoder, and a JSON naming their provenance;
    ``timings`` gets the encoding's seconds and pace (the job's work clock; the JSON holds no timing); ``tf32``: on a
    GPU, TF32 matrix products (rule ``entry_space``'s measured setting)."""
    frame = read_dataset(dataset_path)
    device = device_for_run()
    encoder = load_encoder(encoder_path).to(device)
    if device.type == "cuda" and tf32:
        torch.backends.cuda.matmul.allow_tf32 = True
    n_definitions = int(frame["definitions"].map(len).sum())
    log.info("encoding %d definitions of %d entries on %s", n_definitions, len(frame), device)
    start = time.perf_counter()
    spaces = entry_embeddings(encoder, frame, batch_size, max_length, progress=True)
    seconds = time.perf_counter() - start
    for name, matrix in spaces.items():
        check_entry_space(matrix, f"{name} space of {encoder_path}", len(frame))
        write_npy(outputs[name], matrix)
    meta = {
        "encoder": encoder_name or str(encoder_path),
        "encoder_path": str(encoder_path),
        "dataset": str(dataset_path),
        "dataset_sha256": file_sha256(dataset_path),
        "entries": len(frame),
        "definitions": n_definitions,
        "hidden_size": encoder.hidden_size,
        "max_length": max_length,
        "device": device.type,
    }
    timing = {"seconds": round(seconds, 2), "definitions_per_second": round(n_definitions / max(seconds, 1e-9), 1)}
    (timings if timings is not None else {}).update(timing)
    log.info("entry space: %s, %s", meta, timing)
    write_json(meta_path, meta)
    return meta

