"""Timing a training loop's own host work: its wall time outside the step's calls that do arithmetic.

While open, :class:`StepCalls` adds up the wall time spent inside the calls that compute a step: the encoder's
forward pass, the objective's, ``Tensor.backward``, gradient clipping and the optimiser's step. A loop's seconds
less that sum is what the loop itself does on the host around them (padding, copies, host reads, bookkeeping, its
logging), measured in the same run rather than as the difference of two noisy runs. On a CPU every call is
synchronous, so the sum is the arithmetic's own time; on a GPU it would be the time to queue it (CPU only here).
Nested timed calls count once (the outermost).
"""

from __future__ import annotations

import time

import torch
from torch import nn
from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook


class StepCalls:
    """While active, ``seconds`` adds up the time inside ``modules``' forward passes, backward passes, gradient
    clipping and optimiser steps; ``calls`` counts the outermost timed calls."""

    def __init__(self, *modules: nn.Module):
        self.modules = modules
        self.seconds, self.calls = 0.0, 0
        self._depth, self._began = 0, 0.0
        self._handles: list = []
        self._originals: dict = {}

    def _enter(self, *_args, **_kwargs) -> None:
        if self._depth == 0:
            self._began = time.perf_counter()
        self._depth += 1

    def _leave(self, *_args, **_kwargs) -> None:
        self._depth -= 1
        if self._depth == 0:
            self.seconds += time.perf_counter() - self._began
            self.calls += 1

    def _timed(self, function):
        def call(*args, **kwargs):
            self._enter()
            try:
                return function(*args, **kwargs)
            finally:
                self._leave()

        return call

    def __enter__(self) -> StepCalls:
        for module in self.modules:
            self._handles += [module.register_forward_pre_hook(self._enter), module.register_forward_hook(self._leave)]
        self._handles += [register_optimizer_step_pre_hook(self._enter),
                          register_optimizer_step_post_hook(self._leave)]
        self._originals = {(torch.Tensor, "backward"): torch.Tensor.backward,
                           (torch.nn.utils, "clip_grad_norm_"): torch.nn.utils.clip_grad_norm_}
        for (owner, name), function in self._originals.items():
            setattr(owner, name, self._timed(function))
        return self

    def __exit__(self, *exc) -> None:
        for handle in self._handles:
            handle.remove()
        for (owner, name), function in self._originals.items():
            setattr(owner, name, function)
