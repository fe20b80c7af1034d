"""Entry-embedding throughput: batched, length-sorted AC/AMP vs the one-entry-at-a-time reference recipe.

Usage: .venv/bin/python bench/bench_entry_space.py [--entries 2000] [--batch-size 128]
"""

from __future__ import annotations

import numpy as np
import torch
from common import load, parser, timed

from defsent_plus.dictionary import definition_pairs
from defsent_plus.spaces.entry_space import entry_embeddings


def reference_recipe(encoder, frame, max_length: int) -> dict[str, np.ndarray]:
    """One entry at a time: its definitions as one padded batch, CLS and masked mean, averaged."""
    device = next(encoder.model.parameters()).device
    ac, amp = [], []
    with torch.inference_mode():
        for definitions in frame["definitions"]:
            batch = encoder.tokenizer(list(definitions), padding=True, truncation=True, max_length=max_length,
                                      return_tensors="pt").to(device)
            hidden = encoder.model(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).float()
            ac.append(hidden[:, 0].mean(0))
            amp.append(((hidden * mask).sum(1) / mask.sum(1)).mean(0))
    return {"ac": torch.stack(ac).cpu().numpy(), "amp": torch.stack(amp).cpu().numpy()}


def main() -> None:
    p = parser(__doc__, entries=2000)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--max-length", type=int, default=128)
    args = p.parse_args()
    encoder, frame = load(args)
    encoder.model.eval()
    n_definitions = len(definition_pairs(frame)[0])
    ref, ref_s = timed(lambda: reference_recipe(encoder, frame, args.max_length))
    fast, fast_s = timed(lambda: entry_embeddings(encoder, frame, args.batch_size, args.max_length))
    diff = max(float(np.abs(ref[k] - fast[k]).max()) for k in ("ac", "amp"))
    print(f"entries {len(frame)}, definitions {n_definitions}, threads {args.threads}")
    print(f"reference (one entry at a time): {ref_s:8.1f} s  {n_definitions / ref_s:8.1f} definitions/s")
    print(f"batched, sorted (bs {args.batch_size}): {fast_s:8.1f} s  {n_definitions / fast_s:8.1f} definitions/s")
    print(f"speed-up: {ref_s / fast_s:.2f}x   max |difference|: {diff:.2e}")


if __name__ == "__main__":
    main()
