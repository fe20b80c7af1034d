"""Sentence encoding: a small registry of poolings and one batched, length-sorted encoder loop.

Callers embed through :meth:`defsent_plus.encoders.models.Encoder.encode`, which delegates to :func:`encode` here.

Every pooling answers two questions: how a sentence is turned into model input text (``prompt`` wraps it
in a template) and how the last hidden states become one vector. Sentences are sorted by length and
dynamically padded, so padding never changes a result and costs as little as possible.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from tqdm.auto import tqdm
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from defsent_plus.encoders.runtime import autocast_for
from defsent_plus.names import POOLINGS as POOLING_NAMES
from defsent_plus.names import PROMPT_TEMPLATE, require_same_names


def cls_pool(hidden: torch.Tensor, attention_mask: torch.Tensor, mask_positions: torch.Tensor | None) -> torch.Tensor:
    """The first token's last hidden state ([CLS] / <s>)."""
    return hidden[:, 0]


def mean_pool(hidden: torch.Tensor, attention_mask: torch.Tensor, mask_positions: torch.Tensor | None) -> torch.Tensor:
    """Attention-masked mean of the last hidden states (special tokens included, as in DefSent+)."""
    weights = attention_mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * weights).sum(1) / weights.sum(1).clamp(min=1.0)


def max_pool(hidden: torch.Tensor, attention_mask: torch.Tensor, mask_positions: torch.Tensor | None) -> torch.Tensor:
    """Element-wise max of the last hidden states over the non-padding tokens (special tokens included)."""
    padding = attention_mask.unsqueeze(-1) == 0
    return hidden.masked_fill(padding, torch.finfo(hidden.dtype).min).amax(1)


def mask_pool(hidden: torch.Tensor, attention_mask: torch.Tensor, mask_positions: torch.Tensor | None) -> torch.Tensor:
    """The last hidden state at the prompt's mask token."""
    return hidden[torch.arange(hidden.shape[0], device=hidden.device), mask_positions]


@dataclass(frozen=True)
class Pooling:
    """How sentences become input text, and how hidden states become one vector."""

    name: str
    pool: Callable[[torch.Tensor, torch.Tensor, torch.Tensor | None], torch.Tensor]
    template: str | None = None

    def prepare(self, sentence: str, tokenizer: PreTrainedTokenizerBase) -> str:
        if self.template is None:
            return sentence
        return self.template.format(sentence=sentence, mask=tokenizer.mask_token)


POOLINGS: dict[str, Pooling] = {
    "cls": Pooling("cls", cls_pool),
    "mean": Pooling("mean", mean_pool),
    "max": Pooling("max", max_pool),
    "prompt": Pooling("prompt", mask_pool, PROMPT_TEMPLATE),
}
require_same_names(POOLINGS, POOLING_NAMES, "encoding.POOLINGS")


def get_pooling(name: str) -> Pooling:
    if name not in POOLINGS:
        raise KeyError(f"unknown pooling {name!r}; expected one of {sorted(POOLINGS)}")
    return POOLINGS[name]


def length_order(texts: Sequence[str], tokenizer: PreTrainedTokenizerBase, max_length: int) -> np.ndarray:
    """Indices that sort ``texts`` by tokenised length (longest first, stable)."""
    lengths = [len(ids) for ids in tokenizer(list(texts), truncation=True, max_length=max_length)["input_ids"]]
    return np.argsort(-np.asarray(lengths), kind="stable")


def tokenize_batch(tokenizer: PreTrainedTokenizerBase, texts: Sequence[str], max_length: int) -> dict:
    """Dynamically padded model inputs for one batch."""
    return tokenizer(list(texts), padding=True, truncation=True, max_length=max_length, return_tensors="pt")


def mask_positions_of(input_ids: torch.Tensor, tokenizer: PreTrainedTokenizerBase) -> torch.Tensor:
    """Position of the (first) mask token of every row; an error if a row has none (e.g. truncated away)."""
    is_mask = input_ids == tokenizer.mask_token_id
    if not bool(is_mask.any(1).all()):
        raise ValueError("prompt pooling: a sentence lost its mask token (raise max_length)")
    return is_mask.int().argmax(1)


@torch.inference_mode()
def encode(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    sentences: Sequence[str],
    poolings: Sequence[str] = ("cls",),
    batch_size: int = 128,
    max_length: int = 128,
    progress: bool = False,
    desc: str = "encoding",
) -> dict[str, np.ndarray]:
    """Encode ``sentences`` once per distinct input text, returning float32 ``[n, hidden]`` per pooling.

    Poolings that share the same input text (``cls`` and ``mean``) share one forward pass.
    """
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    out: dict[str, np.ndarray] = {}
    for names in _group_by_template(poolings).values():
        texts = [get_pooling(names[0]).prepare(s, tokenizer) for s in sentences]
        out.update(_encode_texts(model, tokenizer, texts, names, batch_size, max_length, device, progress, desc))
    model.train(was_training)
    return {name: out[name] for name in poolings}


def _group_by_template(poolings: Sequence[str]) -> dict[str | None, list[str]]:
    groups: dict[str | None, list[str]] = {}
    for name in dict.fromkeys(poolings):
        groups.setdefault(get_pooling(name).template, []).append(name)
    return groups


def _encode_texts(model, tokenizer, texts, names, batch_size, max_length, device, progress, desc):
    hidden_size = model.config.hidden_size
    result = {name: np.empty((len(texts), hidden_size), dtype=np.float32) for name in names}
    if not texts:
        return result
    order = length_order(texts, tokenizer, max_length)
    needs_mask = any(get_pooling(n).template is not None for n in names)
    with tqdm(total=len(texts), desc=desc, unit="sent", disable=not progress, mininterval=5) as bar:
        for start in range(0, len(texts), batch_size):
            idx = order[start : start + batch_size]
            batch = tokenize_batch(tokenizer, [texts[i] for i in idx], max_length).to(device)
            mask_pos = mask_positions_of(batch["input_ids"], tokenizer) if needs_mask else None
            with autocast_for(device):
                hidden = model(**batch).last_hidden_state
            for name in names:
                pooled = get_pooling(name).pool(hidden.float(), batch["attention_mask"], mask_pos)
                result[name][idx] = pooled.cpu().numpy()
            bar.update(len(idx))
    return result
