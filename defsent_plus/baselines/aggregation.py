"""Token vectors -> one sentence vector (003 Section 3.3), from what is known about each token of a batch: special
tokens, sub-word continuations (from the fast tokenizer's word alignment, a token continuing the previous token's word,
so BERT's ``##`` pieces and RoBERTa's pieces without a leading ``Ġ`` are found by one rule), punctuation, the fit
corpus' most frequent tokens, idf, and the mask positions of a prompt.

Every aggregation but ``cls``, ``mean`` and ``max`` is a weighted sum: per sentence, non-negative token weights scaled
to sum to 1.

- ``cls``: the first token; ``mean``: all tokens (special ones included, as DefSent+ pools);
  ``mean_nospecial``: without [CLS]/[SEP] (a prompt's [MASK] and template tokens stay); ``max``: element-wise max.
- ``idf``: idf-weighted mean, idf_t = log N/df_t over the fit corpus; ``idf_task``: over the evaluated task's own
  sentences (transductive, 003's idf^T).
- ``biases``: the mean without the fit corpus' most frequent tokens, punctuation and sub-word continuations (each
  switchable, baselines.biases) and special tokens (003's "-biases", after PromptBERT).
- ``mask``: the mean of a prompt's mask positions (T1-T4 have several).

``cls``, ``mean`` and ``max`` are rule ``embed``'s pooling functions themselves (:mod:`defsent_plus.baselines.reuse`).

A sentence whose weights are all zero (e.g. only frequent tokens) falls back to ``mean_nospecial``; the job counts
and logs these.
"""

from __future__ import annotations

import string
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace

import numpy as np
import torch
from transformers import PreTrainedTokenizerBase

from defsent_plus.baselines.spec import SHARED_POOLINGS
from defsent_plus.encoders.encoding import get_pooling
from defsent_plus.errors import DefSentError

CONTINUATION_MARKERS = ("##", "Ġ", "▁")


def require_fast(tokenizer: PreTrainedTokenizerBase, where: str) -> None:
    if not tokenizer.is_fast:
        raise DefSentError(where, "the baselines need a fast (Rust) tokenizer for word alignment; this model's "
                                  f"tokenizer is {type(tokenizer).__name__}")


def is_punctuation_text(text: str) -> bool:
    """Only punctuation characters (Unicode category P*, or ASCII string.punctuation)."""
    return bool(text) and all(c in string.punctuation or unicodedata.category(c).startswith("P") for c in text)


def punctuation_table(tokenizer: PreTrainedTokenizerBase) -> np.ndarray:
    """bool per vocabulary id: the token (without a word-boundary or continuation marker) is punctuation."""
    table = np.zeros(len(tokenizer), dtype=bool)
    for token, index in tokenizer.get_vocab().items():
        text = token
        for marker in CONTINUATION_MARKERS:
            text = text.removeprefix(marker)
        table[index] = is_punctuation_text(text)
    return table


def token_ids(tokenizer: PreTrainedTokenizerBase, texts: Sequence[str], max_length: int) -> list[list[int]]:
    """Model input ids (special tokens included) of each text."""
    return tokenizer(list(texts), truncation=True, max_length=max_length)["input_ids"]


def idf_table(documents: Sequence[Sequence[int]], vocab_size: int, where: str) -> np.ndarray:
    """idf_t = log(N / df_t) over ``documents`` (003 eq. 4). A token the documents never contain gets df 1 (the
    rarest seen), so it counts as the most informative instead of dividing by zero."""
    if not documents:
        raise DefSentError(where, "idf needs at least one document; the corpus is empty")
    df = np.zeros(vocab_size, dtype=np.int64)  # df_t: the number of documents containing token t
    for ids in documents:
        df[np.unique(np.asarray(ids, dtype=np.int64))] += 1
    return np.log(len(documents) / np.maximum(df, 1)).astype(np.float32)


def most_frequent(documents: Sequence[Sequence[int]], vocab_size: int, n: int,
                  special_ids: Sequence[int]) -> np.ndarray:
    """The ``n`` most frequent non-special token ids of ``documents`` (ties: smaller id first)."""
    counts = np.zeros(vocab_size, dtype=np.int64)
    for ids in documents:
        np.add.at(counts, np.asarray(ids, dtype=np.int64), 1)
    counts[list(special_ids)] = 0
    order = np.lexsort((np.arange(vocab_size), -counts))
    return order[:n][counts[order[:n]] > 0]


@dataclass
class BatchTokens:
    """One batch's token facts, as tensors on the batch's device ([B, T] each)."""

    input_ids: torch.Tensor
    attention: torch.Tensor  # real tokens
    special: torch.Tensor  # [CLS]/[SEP]/<s>/</s>
    continuation: torch.Tensor  # a token continuing the previous token's word
    mask: torch.Tensor  # the prompt's mask tokens


def batch_tokens(encoding, tokenizer: PreTrainedTokenizerBase, device: torch.device) -> BatchTokens:
    """Token facts of a padded batch from ``tokenizer(..., return_special_tokens_mask=True)``."""
    input_ids = encoding["input_ids"]
    attention = encoding["attention_mask"].bool()
    special = encoding["special_tokens_mask"].bool() & attention
    continuation = torch.zeros_like(attention)
    for row in range(input_ids.shape[0]):
        words = encoding.word_ids(row)
        for position in range(1, len(words)):
            continuation[row, position] = words[position] is not None and words[position] == words[position - 1]
    mask = (input_ids == tokenizer.mask_token_id) & attention if tokenizer.mask_token_id is not None else \
        torch.zeros_like(attention)
    return BatchTokens(input_ids.to(device), attention.to(device), special.to(device), continuation.to(device),
                       mask.to(device))


@dataclass(frozen=True)
class DeviceTables:
    """Per-vocabulary facts on the batch's device: idf (the fit corpus', or a task's own), the -biases classes."""

    idf: torch.Tensor
    frequent: torch.Tensor  # bool per id: among the fit corpus' top-N
    punctuation: torch.Tensor  # bool per id
    biases: dict  # {"frequent": bool, "punctuation": bool, "subword": bool}


def token_weights(name: str, tokens: BatchTokens, tables: DeviceTables) -> torch.Tensor:
    """Un-normalised [B, T] weights of a weighted aggregation."""
    real = tokens.attention
    if name == "mean_nospecial":
        return (real & ~tokens.special).float()
    if name in ("idf", "idf_task"):
        return tables.idf[tokens.input_ids] * real.float()
    if name == "biases":
        return biases_kept(tokens, tables).float()
    if name == "mask":
        if not bool(tokens.mask.any(1).all()):
            raise ValueError("mask aggregation: a sentence lost its mask token (raise baselines.max_length)")
        return tokens.mask.float()
    raise KeyError(f"unknown aggregation {name!r}")


def biases_kept(tokens: BatchTokens, tables: DeviceTables) -> torch.Tensor:
    """Tokens left after removing special tokens and the switched-on bias classes."""
    kept = tokens.attention & ~tokens.special
    classes = {"frequent": tables.frequent[tokens.input_ids], "punctuation": tables.punctuation[tokens.input_ids],
               "subword": tokens.continuation}
    for name, tokens_of_class in classes.items():
        if tables.biases[name]:
            kept &= ~tokens_of_class
    return kept


def aggregate(name: str, vectors: torch.Tensor, tokens: BatchTokens, tables: DeviceTables) -> tuple[torch.Tensor, int]:
    """[B, H] sentence vectors of ``vectors`` [B, T, H] and how many sentences fell back to ``mean_nospecial``."""
    if name in SHARED_POOLINGS:
        return get_pooling(name).pool(vectors, tokens.attention, None), 0
    weights = token_weights(name, tokens, tables)
    empty = weights.sum(1) <= 0
    if bool(empty.any()):
        fallback = (tokens.attention & ~tokens.special).float()
        weights = torch.where(empty.unsqueeze(1), fallback, weights)
    weights = weights / weights.sum(1, keepdim=True).clamp(min=torch.finfo(weights.dtype).tiny)
    return torch.einsum("bt,bth->bh", weights, vectors), int(empty.sum())


def rows_of(tokens: BatchTokens, keep: torch.Tensor) -> BatchTokens:
    """The batch's rows where ``keep`` (bool [B]) is true."""
    return BatchTokens(*(getattr(tokens, field.name)[keep] for field in fields(tokens)))


def only_known(tokens: BatchTokens, known: torch.Tensor) -> BatchTokens:
    """The batch with tokens outside ``known`` (bool per id) treated as padding (Avg.: tokens the fit corpus never
    showed have no static vector)."""
    return replace(tokens, attention=tokens.attention & known[tokens.input_ids])
