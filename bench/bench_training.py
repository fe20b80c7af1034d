"""Training throughput: dynamic padding (+ length buckets) vs the reference recipe's padding to 150 tokens.

Both train the same model on the same definitions against the same frozen entry space, with batch 32.
Usage: .venv/bin/python bench/bench_training.py [--entries 300] [--batch-size 32]
"""

from __future__ import annotations

import numpy as np
import torch
from common import load, parser, timed

from defsent_plus.dictionary import definition_pairs
from defsent_plus.encoders.models import load_encoder
from defsent_plus.methods.defsent_plus.objective import EntryProjection
from defsent_plus.training.trainer import TrainConfig, train_epoch

REFERENCE_PAD = 150


def run(args, encoder_path, frame, space, cfg: TrainConfig, pad_to: int | None) -> float:
    encoder = load_encoder(encoder_path)
    if pad_to is not None:  # the reference scripts pad every batch to a fixed length
        encoder.tokenizer.model_max_length = pad_to
        original_pad = encoder.tokenizer.pad
        encoder.tokenizer.pad = lambda features, **kw: original_pad(features, padding="max_length",
                                                                    max_length=pad_to, **kw)
    texts, ids = definition_pairs(frame)
    objective = EntryProjection(torch.from_numpy(space), encoder.pooler, cfg.pooling)
    summary, seconds = timed(lambda: train_epoch(encoder, texts, ids, objective, cfg, progress=False))
    return summary["sentences_per_second"]


def main() -> None:
    p = parser(__doc__, entries=300)
    p.add_argument("--batch-size", type=int, default=32)
    args = p.parse_args()
    encoder, frame = load(args)
    space = np.random.default_rng(0).normal(size=(len(frame), encoder.hidden_size)).astype(np.float32)
    base = dict(lr=1e-5, batch_size=args.batch_size, seed=0, max_length=REFERENCE_PAD)
    ref = run(args, encoder.path, frame, space, TrainConfig(**base), pad_to=REFERENCE_PAD)
    dyn = run(args, encoder.path, frame, space, TrainConfig(**base), pad_to=None)
    bucket = run(args, encoder.path, frame, space, TrainConfig(**base, bucket_by_length=True), pad_to=None)
    print(f"definitions {len(definition_pairs(frame)[0])}, batch {args.batch_size}, threads {args.threads}")
    print(f"reference (pad to {REFERENCE_PAD}):   {ref:7.1f} sentences/s")
    print(f"dynamic padding:          {dyn:7.1f} sentences/s  ({dyn / ref:.1f}x)")
    print(f"dynamic + length buckets: {bucket:7.1f} sentences/s  ({bucket / ref:.1f}x)")


if __name__ == "__main__":
    main()
