"""What is known about each token of a batch (003 Section 3.3): special tokens, sub-word continuations, punctuation,
the fit corpus' most frequent tokens, idf, and the mask positions of a prompt.

Continuations come from the fast tokenizer's word alignment (a token continuing the previous token's word), so
BERT's ``##`` pieces and RoBERTa's pieces without a leading ``Ġ`` are found by one rule.
"""

from __future__ import annotations

import string
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from transformers import PreTrainedTokenizerBase

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


def document_frequency(documents: Sequence[Sequence[int]], vocab_size: int) -> np.ndarray:
    """df_t: the number of documents containing token t."""
    df = np.zeros(vocab_size, dtype=np.int64)
    for ids in documents:
        df[np.unique(np.asarray(ids, dtype=np.int64))] += 1
    return df


def idf_table(documents: Sequence[Sequence[int]], vocab_size: int, where: str) -> np.ndarray:
    """idf_t = log(N / df_t) over ``documents`` (003 eq. 4). A token the documents never contain gets df 1 (the
    rarest seen), so it counts as the most informative instead of dividing by zero."""
    if not documents:
        raise DefSentError(where, "idf needs at least one document; the corpus is empty")
    df = document_frequency(documents, vocab_size)
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


@dataclass(frozen=True)
class TokenTables:
    """Per-vocabulary facts used by the aggregations: idf (fit corpus), the -biases classes."""

    idf: np.ndarray
    frequent: np.ndarray  # bool per id: among the fit corpus' top-N
    punctuation: np.ndarray  # bool per id


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
