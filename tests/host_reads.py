"""Counting what a block of code reads from tensors on the host (``.item()``, ``bool(t)``, ``.tolist()``, ...).

On a GPU each such read waits for every kernel queued before it; on CPU it is cheap but still counted, so a test
on CPU can hold the training loop to its budget of reads. A ``TorchFunctionMode`` sees every tensor method call.
"""

from __future__ import annotations

import collections
import traceback

from torch.overrides import TorchFunctionMode

READS = frozenset({"item", "tolist", "__bool__", "__float__", "__int__", "__index__", "numpy", "nonzero", "cpu"})


class HostReads(TorchFunctionMode):
    """While active, counts the host reads of tensors by kind; ``where`` keeps the first call sites of each."""

    def __init__(self, keep: int = 2):
        super().__init__()
        self.counts: collections.Counter[str] = collections.Counter()
        self.where: dict[str, list[str]] = collections.defaultdict(list)
        self.keep = keep

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if name in READS:
            self.counts[name] += 1
            if len(self.where[name]) < self.keep:
                self.where[name].append("".join(traceback.format_stack(limit=8)[:-1]))
        return func(*args, **(kwargs or {}))

    @property
    def total(self) -> int:
        return sum(self.counts.values())
