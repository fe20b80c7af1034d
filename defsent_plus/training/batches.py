"""An epoch's batches, padded once on the host before the epoch and handed to the device one step ahead.

The step loop never pads, tokenises or copies synchronously: every batch of an epoch is padded into one host buffer
(pinned on CUDA) when the epoch starts, and the batch after the current one is already on its way to the device
(a non-blocking copy) while the current step runs. Each batch is padded to its own longest example, exactly as
``tokenizer.pad`` pads it, so the arithmetic equals per-step padding; ``pad_to_multiple_of`` rounds that length up
(a compiled step's one length, :mod:`.compilation`). The host also knows which batches have no padding at all, so
the model's attention mask is built here (:func:`model_attention_mask`), not read on the device at every forward pass.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from defsent_plus.encoders.encoding import Tokenised, pad_rows, pad_values


@dataclass
class DeviceBatch:
    """One step's inputs on the device."""

    input_ids: torch.Tensor
    attention_mask: torch.Tensor  # 2-D, what poolings and objectives read
    targets: torch.Tensor
    padded: bool  # whether any position is padding (known on the host)
    size: int  # examples in the batch


class PreparedEpoch:
    """An epoch's batches (``order``: example indices per batch) of ``tokens`` (the examples tokenised once, by
    :func:`defsent_plus.encoders.encoding.tokenise`), padded as ``tokenizer`` pads into one host buffer before the
    epoch; ``multiple``: each batch's padded length rounded up to it."""

    def __init__(self, tokens: Tokenised, targets: np.ndarray, order: Sequence[np.ndarray], tokenizer,
                 device: torch.device, multiple: int | None = None):
        self.device = device
        self.shapes, self.padded, flat_ids, flat_masks = [], [], [], []
        pads = pad_values(tokenizer)
        for idx in order:
            inputs = pad_rows(tokens, np.asarray(idx), pads, tokenizer.padding_side, multiple)
            ids, mask = inputs["input_ids"], inputs["attention_mask"]
            self.shapes.append(ids.shape)
            self.padded.append(not mask.all())
            flat_ids.append(ids.ravel())
            flat_masks.append(mask.ravel())
        self.offsets = np.cumsum([0, *(ids.size for ids in flat_ids)])
        pin = device.type == "cuda"
        self.ids = _host_tensor(np.concatenate(flat_ids), pin)
        self.masks = _host_tensor(np.concatenate(flat_masks), pin)
        self.targets = _host_tensor(np.concatenate([np.asarray(targets)[idx] for idx in order]).astype(np.int64), pin)
        self.target_offsets = np.cumsum([0, *(len(idx) for idx in order)])

    def __len__(self) -> int:
        return len(self.shapes)

    def batch(self, step: int) -> DeviceBatch:
        """Batch ``step`` on the device (a non-blocking copy from pinned memory on CUDA; a view on CPU)."""
        start, end = self.offsets[step], self.offsets[step + 1]
        first, last = self.target_offsets[step], self.target_offsets[step + 1]
        shape = self.shapes[step]
        return DeviceBatch(self._to_device(self.ids[start:end].view(shape)),
                           self._to_device(self.masks[start:end].view(shape)),
                           self._to_device(self.targets[first:last]), self.padded[step], shape[0])

    def batches(self, first: int = 0) -> Iterator[tuple[int, DeviceBatch]]:
        """``(step, batch)`` from step ``first`` on, each next batch's copy issued before the current one is used."""
        upcoming = self.batch(first) if first < len(self) else None
        for step in range(first, len(self)):
            current = upcoming
            upcoming = self.batch(step + 1) if step + 1 < len(self) else None
            yield step, current

    def _to_device(self, tensor: torch.Tensor) -> torch.Tensor:
        return tensor if self.device.type == "cpu" else tensor.to(self.device, non_blocking=True)


def _host_tensor(array: np.ndarray, pin: bool) -> torch.Tensor:
    tensor = torch.from_numpy(np.ascontiguousarray(array))
    return tensor.pin_memory() if pin else tensor


def model_attention_mask(model: torch.nn.Module, attention_mask: torch.Tensor, padded: bool
                         ) -> torch.Tensor | None:
    """The attention mask to hand the model, built without reading the device: with SDPA attention, ``None`` for a
    batch without padding and else the boolean ``[batch, 1, tokens, tokens]`` mask transformers' ``sdpa_mask``
    builds (after a host sync on the device); with any other attention, the 2-D mask as it is."""
    if getattr(model.config, "_attn_implementation", None) != "sdpa":
        return attention_mask
    if not padded:
        return None
    keys = attention_mask.bool()[:, None, None, :]
    return keys.expand(-1, 1, attention_mask.shape[1], -1)
