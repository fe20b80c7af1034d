"""A frozen copy of ``defsent_plus.encoders.encoding.encode``'s loop before tokenise-once and token budgets (issue 44
item 3): every text tokenised twice (length order, then per batch), ``batch_size`` sentences a batch, each batch's
pooled rows copied to the host. The oracle that CPU encoding without a budget must equal bit for bit."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from defsent_plus.encoders.encoding import get_pooling


def length_order(texts: Sequence[str], tokenizer, max_length: int) -> np.ndarray:
    lengths = [len(ids) for ids in tokenizer(list(texts), truncation=True, max_length=max_length)["input_ids"]]
    return np.argsort(-np.asarray(lengths), kind="stable")


def tokenize_batch(tokenizer, texts: Sequence[str], max_length: int) -> dict:
    return tokenizer(list(texts), padding=True, truncation=True, max_length=max_length, return_tensors="pt")


def mask_positions_of(input_ids: torch.Tensor, tokenizer) -> torch.Tensor:
    is_mask = input_ids == tokenizer.mask_token_id
    if not bool(is_mask.any(1).all()):
        raise ValueError("prompt pooling: a sentence lost its mask token (raise max_length)")
    return is_mask.int().argmax(1)


@torch.inference_mode()
def oracle_encode(model, tokenizer, sentences: Sequence[str], poolings: Sequence[str] = ("cls",),
                  batch_size: int = 128, max_length: int = 128) -> dict[str, np.ndarray]:
    """Today's ``encode`` on CPU (no autocast there)."""
    device = next(model.parameters()).device
    model.eval()
    out: dict[str, np.ndarray] = {}
    groups: dict[str | None, list[str]] = {}
    for name in dict.fromkeys(poolings):
        groups.setdefault(get_pooling(name).template, []).append(name)
    for names in groups.values():
        texts = [get_pooling(names[0]).prepare(s, tokenizer) for s in sentences]
        out.update(_encode_texts(model, tokenizer, texts, names, batch_size, max_length, device))
    return {name: out[name] for name in poolings}


def _encode_texts(model, tokenizer, texts, names, batch_size, max_length, device):
    result = {name: np.empty((len(texts), model.config.hidden_size), dtype=np.float32) for name in names}
    if not texts:
        return result
    order = length_order(texts, tokenizer, max_length)
    needs_mask = any(get_pooling(n).template is not None for n in names)
    for start in range(0, len(texts), batch_size):
        idx = order[start : start + batch_size]
        batch = tokenize_batch(tokenizer, [texts[i] for i in idx], max_length).to(device)
        mask_pos = mask_positions_of(batch["input_ids"], tokenizer) if needs_mask else None
        hidden = model(**batch).last_hidden_state
        for name in names:
            pooled = get_pooling(name).pool(hidden.float(), batch["attention_mask"], mask_pos)
            result[name][idx] = pooled.cpu().numpy()
    return result
