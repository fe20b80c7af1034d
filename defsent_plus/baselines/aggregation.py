"""Token vectors -> one sentence vector (003 Section 3.3).

Every aggregation but ``cls``, ``mean`` and ``max`` is a weighted sum: per sentence, non-negative token weights scaled
to sum to 1.

- ``cls``: the first token; ``mean``: all tokens (special ones included, as DefSent+ pools);
  ``mean_nospecial``: without [CLS]/[SEP] (a prompt's [MASK] and template tokens stay); ``max``: element-wise max.
- ``idf``: idf-weighted mean, idf_t = log N/df_t over the fit corpus; ``idf_task``: over the evaluated task's own
  sentences (transductive, 003's idf^T).
- ``biases``: the mean without the fit corpus' most frequent tokens, punctuation and sub-word continuations (each
  switchable, baselines.biases) and special tokens (003's "-biases", after PromptBERT).
- ``mask``: the mean of a prompt's mask positions (T1-T4 have several).

``cls``, ``mean`` and ``max`` are the embedding stage's pooling functions themselves, so a cached last layer equals
rule ``embed``'s vectors bit for bit where the batches are the same (:mod:`defsent_plus.baselines.reuse`).

A sentence whose weights are all zero (e.g. only frequent tokens) falls back to ``mean_nospecial``; the job counts
and logs these.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import torch

from defsent_plus.baselines.spec import SHARED_POOLINGS
from defsent_plus.baselines.tokens import BatchTokens
from defsent_plus.encoders.encoding import get_pooling


@dataclass(frozen=True)
class DeviceTables:
    """The token tables on the batch's device; ``idf`` may be replaced by a task's own table."""

    idf: torch.Tensor
    frequent: torch.Tensor
    punctuation: torch.Tensor
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
    if tables.biases["frequent"]:
        kept &= ~tables.frequent[tokens.input_ids]
    if tables.biases["punctuation"]:
        kept &= ~tables.punctuation[tokens.input_ids]
    if tables.biases["subword"]:
        kept &= ~tokens.continuation
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
