"""Sentence encoding: where it computes, a small registry of poolings and one batched, length-sorted encoder loop.

Callers embed through :meth:`defsent_plus.encoders.models.Encoder.encode`, which delegates to :func:`encode` here,
with the batching :func:`batching_for` picks for the device.

Every pooling says how a sentence becomes model input text (``prompt`` wraps it in a template) and how the last
hidden states become one vector. Every text is tokenised once, sorted longest first and its batch padded from those
ids, so padding never changes a result and costs as little as possible; pooled rows reach the host in large chunks
(:class:`HostCopies`), with no synchronisation per batch.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from tqdm.auto import tqdm
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from defsent_plus.names import POOLINGS as POOLING_NAMES
from defsent_plus.names import PROMPT_TEMPLATE, require_same_names


def device_for_run() -> torch.device:
    """Where this process computes: CUDA when present (respecting CUDA_VISIBLE_DEVICES), else CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def autocast_for(device: torch.device):
    """bf16 autocast on GPU; a no-op context on CPU so CPU results stay exact and deterministic."""
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=device.type == "cuda")


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


# Encoding batches by device type: (batch_size, max_tokens), as :func:`batching_for` and :func:`batch_bounds` read them.
DEVICE_BATCHING: dict[str, tuple[int, int | None]] = {"cuda": (1024, 65_536)}
HOST_CHUNK_ROWS = 16_384  # pooled rows gathered on the device before one copy to the host
TOKENISE_CHUNK = 8_192  # texts tokenised per tokenizer call (bounds the Python lists alive at once)


def batching_for(device: torch.device | str, batch_size: int) -> tuple[int, int | None]:
    """(batch_size, max_tokens) to encode with on ``device``: :data:`DEVICE_BATCHING`'s for its type (at least
    ``batch_size`` sentences a batch, under its token budget), else ``batch_size`` with no budget."""
    batching = DEVICE_BATCHING.get(torch.device(device).type)
    if batching is None:
        return batch_size, None
    return max(batch_size, batching[0]), batching[1]


@dataclass(frozen=True)
class Tokenised:
    """Every text's truncated token fields (``input_ids``, ``attention_mask``, ...) concatenated in text order;
    text ``i`` is ``fields[key][starts[i] : starts[i] + lengths[i]]``."""

    fields: dict[str, np.ndarray]
    starts: np.ndarray
    lengths: np.ndarray


def tokenise(tokenizer: PreTrainedTokenizerBase, texts: Sequence[str], max_length: int) -> Tokenised:
    """Tokenise ``texts`` once (truncated to ``max_length``, unpadded) into flat arrays."""
    chunk_lengths: list[np.ndarray] = [np.zeros(0, dtype=np.int64)]
    parts: dict[str, list[np.ndarray]] = {}
    for start in range(0, len(texts), TOKENISE_CHUNK):
        encoded = tokenizer(list(texts[start : start + TOKENISE_CHUNK]), truncation=True, max_length=max_length)
        chunk_lengths.append(np.fromiter(map(len, encoded["input_ids"]), dtype=np.int64))
        total = int(chunk_lengths[-1].sum())
        for key, rows in encoded.items():
            parts.setdefault(key, []).append(np.fromiter(itertools.chain.from_iterable(rows), np.int32, total))
    lengths = np.concatenate(chunk_lengths)
    starts = np.cumsum(lengths) - lengths
    return Tokenised({key: np.concatenate(chunks) for key, chunks in parts.items()}, starts, lengths)


def pad_values(tokenizer: PreTrainedTokenizerBase) -> dict[str, int]:
    """The value each model input is padded with, as ``tokenizer.pad`` does."""
    return {"input_ids": tokenizer.pad_token_id, "token_type_ids": tokenizer.pad_token_type_id,
            "attention_mask": 0, "special_tokens_mask": 1}


def pad_rows(tokens: Tokenised, rows: np.ndarray, pads: dict[str, int], side: str = "right",
             multiple: int | None = None) -> dict[str, np.ndarray]:
    """The int64 ``[len(rows), longest]`` model inputs of texts ``rows``, padded on ``side`` with ``pads``: equal to
    the tokenizer's own ``padding=True`` output (with ``multiple``, its ``pad_to_multiple_of``)."""
    lengths = tokens.lengths[rows]
    width = int(lengths.max()) if len(rows) else 0
    if multiple:
        width = -(-width // multiple) * multiple
    offset = (width - lengths if side == "left" else np.zeros_like(lengths))[:, None]
    cols = np.arange(width)[None, :]
    valid = (cols >= offset) & (cols < offset + lengths[:, None])
    source = (tokens.starts[rows][:, None] + cols - offset)[valid]
    out = {}
    for key, flat in tokens.fields.items():
        padded = np.full((len(rows), width), pads[key], dtype=np.int64)
        padded[valid] = flat[source]
        out[key] = padded
    return out


def batch_bounds(sorted_lengths: np.ndarray, batch_size: int, max_tokens: int | None = None) -> list[tuple[int, int]]:
    """``[start, stop)`` of consecutive batches over lengths sorted longest first: at most ``batch_size`` rows and,
    with ``max_tokens``, at most that many padded tokens (rows x the first row's length; a longer row goes alone)."""
    if batch_size < 1 or (max_tokens is not None and max_tokens < 1):
        raise ValueError(f"batch_size and max_tokens must be positive, got {batch_size} and {max_tokens}")
    bounds, start, n = [], 0, len(sorted_lengths)
    while start < n:
        rows = batch_size
        if max_tokens is not None:
            rows = max(1, min(batch_size, max_tokens // max(int(sorted_lengths[start]), 1)))
        bounds.append((start, min(start + rows, n)))
        start += rows
    return bounds


def padded_tokens(lengths: Sequence[int] | np.ndarray, batch_size: int, max_tokens: int | None = None) -> int:
    """Tokens the encoder computes, padding included, for texts of ``lengths`` batched as :func:`encode` batches
    them (longest first, each batch padded to its first row)."""
    ordered = np.sort(np.asarray(lengths, dtype=np.int64))[::-1]
    return int(sum((stop - start) * ordered[start] for start, stop in batch_bounds(ordered, batch_size, max_tokens)))


def length_order(texts: Sequence[str], tokenizer: PreTrainedTokenizerBase, max_length: int) -> np.ndarray:
    """Indices that sort ``texts`` by tokenised length (longest first, stable)."""
    lengths = [len(ids) for ids in tokenizer(list(texts), truncation=True, max_length=max_length)["input_ids"]]
    return np.argsort(-np.asarray(lengths), kind="stable")


def mask_positions(input_ids: np.ndarray, mask_token_id: int) -> np.ndarray:
    """Position of the (first) mask token of every row of host ids; an error if a row has none (e.g. truncated
    away)."""
    is_mask = input_ids == mask_token_id
    if not is_mask.any(1).all():
        raise ValueError("prompt pooling: a sentence lost its mask token (raise max_length)")
    return is_mask.argmax(1)


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
    *,
    max_tokens: int | None = None,
) -> dict[str, np.ndarray]:
    """Encode ``sentences`` once per distinct input text, returning float32 ``[n, hidden]`` per pooling: poolings
    that share an input text (``cls`` and ``mean``) share one forward pass; batched as :func:`batch_bounds` says."""
    was_training = model.training
    model.eval()
    out: dict[str, np.ndarray] = {}
    by_template: dict[str | None, list[str]] = {}
    for name in dict.fromkeys(poolings):
        by_template.setdefault(get_pooling(name).template, []).append(name)
    for names in by_template.values():
        texts = [get_pooling(names[0]).prepare(s, tokenizer) for s in sentences]
        out.update(_encode_texts(model, tokenizer, texts, names, batch_size, max_tokens, max_length, progress, desc))
    model.train(was_training)
    return {name: out[name] for name in poolings}


def _encode_texts(model, tokenizer, texts, names, batch_size, max_tokens, max_length, progress, desc):
    device = next(model.parameters()).device
    result = {name: np.empty((len(texts), model.config.hidden_size), dtype=np.float32) for name in names}
    if not texts:
        return result
    tokens = tokenise(tokenizer, texts, max_length)
    order = np.argsort(-tokens.lengths, kind="stable")
    pads, side = pad_values(tokenizer), tokenizer.padding_side
    mask_id = tokenizer.mask_token_id if any(get_pooling(n).template is not None for n in names) else None
    sink = HostCopies(result, device, batch_size)
    with tqdm(total=len(texts), desc=desc, unit="sent", disable=not progress, mininterval=5) as bar:
        for start, stop in batch_bounds(tokens.lengths[order], batch_size, max_tokens):
            idx = order[start:stop]
            inputs = pad_rows(tokens, idx, pads, side)
            mask_pos = None if mask_id is None else _to(mask_positions(inputs["input_ids"], mask_id), device)
            batch = {key: _to(value, device) for key, value in inputs.items()}
            with autocast_for(device):
                hidden = model(**batch).last_hidden_state
            hidden = hidden.float()
            sink.add(idx, {name: get_pooling(name).pool(hidden, batch["attention_mask"], mask_pos) for name in names})
            bar.update(len(idx))
    sink.close()
    return result


def _to(array: np.ndarray, device: torch.device) -> torch.Tensor:
    """A host array on ``device`` without waiting for the device (pageable memory is staged at once)."""
    return torch.from_numpy(array).to(device, non_blocking=device.type == "cuda")


class HostCopies:
    """Pooled rows gathered in device buffers and copied into ``result`` (host arrays) every
    :data:`HOST_CHUNK_ROWS` rows; on CUDA non-blocking into pinned memory, landed at the next copy or at
    :meth:`close` (the only waits). On CPU the buffer is host memory already, landed at once."""

    def __init__(self, result: dict[str, np.ndarray], device: torch.device, batch_size: int):
        n, hidden = next(iter(result.values())).shape
        rows = min(n, max(HOST_CHUNK_ROWS, batch_size))
        self.result, self.cuda, self.filled, self.in_flight = result, device.type == "cuda", 0, None
        self.on_device = {k: torch.empty((rows, hidden), dtype=torch.float32, device=device) for k in result}
        self.on_host = self.on_device if device.type == "cpu" else {
            k: torch.empty((rows, hidden), dtype=torch.float32, pin_memory=self.cuda) for k in result}
        self.index = np.empty(rows, dtype=np.int64)

    def add(self, idx: np.ndarray, pooled: dict[str, torch.Tensor]) -> None:
        """Keep one batch's pooled rows (of texts ``idx``) until the next copy to the host."""
        if self.filled + len(idx) > len(self.index):
            self.flush()
        rows = slice(self.filled, self.filled + len(idx))
        for name, vectors in pooled.items():
            self.on_device[name][rows].copy_(vectors)
        self.index[rows] = idx
        self.filled += len(idx)

    def flush(self) -> None:
        """Land the previous copy, then start copying the gathered rows to the host."""
        self._land()
        n, self.filled = self.filled, 0
        if self.on_host is not self.on_device:
            for name, buffer in self.on_device.items():
                self.on_host[name][:n].copy_(buffer[:n], non_blocking=self.cuda)
        event = torch.cuda.Event() if self.cuda else None
        self.in_flight = (self.index[:n].copy(), event)
        if event is None:  # a synchronous copy (or, on CPU, the buffer itself): land it before it is refilled
            self._land()
        else:
            event.record()

    def close(self) -> None:
        """Copy whatever is left and wait for it."""
        self.flush()
        self._land()

    def _land(self) -> None:
        if self.in_flight is None:
            return
        index, event = self.in_flight
        if event is not None:
            event.synchronize()
        for name, buffer in self.on_host.items():
            self.result[name][index] = buffer[: len(index)].numpy()
        self.in_flight = None
