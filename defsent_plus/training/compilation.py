"""``training.compile``: the encoder's forward (and with it its backward) through ``torch.compile`` for a run.

``auto`` compiles on CUDA only, ``on`` everywhere (an explicit choice on CPU), ``off`` never. On CUDA the compiled
step also records CUDA graphs (mode ``reduce-overhead``), one per batch shape. A compiled run pads every batch to
the run's longest kept sentence (``max_length`` + ``extra_tokens``), so an epoch has one sequence length: one
compilation, and a second only where the batch size changes (an epoch's last, smaller batch makes the batch size
dynamic). Padded positions are masked: results move at round-off only. The weights a run saves are the same
module's, compiled or not.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch
from torch import nn

from defsent_plus.errors import DefSentError

COMPILE_CHOICES = ("off", "on", "auto")
BACKEND = "inductor"  # torch.compile's backend (the CPU test of the plumbing swaps in "aot_eager")


def compile_choice(value: bool | str) -> str:
    """The config's ``training.compile`` (YAML reads off / on as booleans) as one of :data:`COMPILE_CHOICES`."""
    return {False: "off", True: "on"}.get(value, value) if isinstance(value, bool) else value


def compile_wanted(choice: bool | str, device: torch.device) -> bool:
    """Whether ``training.compile: choice`` compiles on ``device``."""
    choice = compile_choice(choice)
    if choice not in COMPILE_CHOICES:
        raise DefSentError("config: training.compile", f"expected one of {list(COMPILE_CHOICES)}, got {choice!r}")
    return choice == "on" or (choice == "auto" and device.type == "cuda")


@contextmanager
def compiled(model: nn.Module, choice: str, device: torch.device) -> Iterator[Callable[[], None]]:
    """While open, ``model``'s calls run compiled (when ``choice`` says so on ``device``); yields what the loop
    calls at the start of every step (CUDA graphs: a new step's outputs may overwrite the last one's)."""
    if not compile_wanted(choice, device):
        yield lambda: None
        return
    graphs = device.type == "cuda"
    model.compile(backend=BACKEND, mode="reduce-overhead" if graphs and BACKEND == "inductor" else None)
    try:
        yield torch.compiler.cudagraph_mark_step_begin if graphs else (lambda: None)
    finally:
        model._compiled_call_impl = None  # eager again: evaluation and saving after training
