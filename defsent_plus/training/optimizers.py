"""transformers' AdamW, which the authors' code trained with and torch does not ship.

DefSent+'s TrainEncoder.py used transformers 4.10's ``AdamW(lr, eps=1e-6)``; SLT-FAI's and ConSERT's released code
train with sentence-transformers' ``fit``, which builds ``AdamW(lr, eps=1e-6, correct_bias=False)``. transformers 5
no longer has that class, and torch's AdamW differs: it adds eps after the bias correction, and always corrects.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import torch


class TransformersAdamW(torch.optim.Optimizer):
    """AdamW as transformers' ``AdamW`` computed it: ``m = b1 m + (1 - b1) g``, ``v = b2 v + (1 - b2) g²``,
    ``p -= s m / (sqrt(v) + eps)`` with ``s = lr sqrt(1 - b2^t) / (1 - b1^t)`` (``correct_bias``) or ``s = lr``, then
    the decoupled weight decay ``p -= lr wd p``."""

    def __init__(self, params: Iterable, lr: float, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-6,
                 weight_decay: float = 0.0, correct_bias: bool = True):
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                                  "correct_bias": correct_bias})

    @torch.no_grad()
    def step(self, closure=None):
        """One update of every parameter with a gradient, with foreach kernels over the parameters at the same step
        count (a parameter without a gradient does not step, so counts can differ within a group)."""
        for group in self.param_groups:
            at_step: dict[int, list[torch.Tensor]] = {}
            for param in group["params"]:
                if param.grad is None:
                    continue
                state = self.state[param]
                if not state:
                    state.update(step=0, exp_avg=torch.zeros_like(param), exp_avg_sq=torch.zeros_like(param))
                state["step"] += 1
                at_step.setdefault(state["step"], []).append(param)
            for step, params in at_step.items():
                self._update(params, group, step)
        return None

    def _update(self, params: list[torch.Tensor], group: dict, step: int) -> None:
        beta1, beta2 = group["betas"]
        grads = [param.grad for param in params]
        exp_avgs = [self.state[param]["exp_avg"] for param in params]
        exp_avg_sqs = [self.state[param]["exp_avg_sq"] for param in params]
        torch._foreach_mul_(exp_avgs, beta1)
        torch._foreach_add_(exp_avgs, grads, alpha=1 - beta1)
        torch._foreach_mul_(exp_avg_sqs, beta2)
        torch._foreach_addcmul_(exp_avg_sqs, grads, grads, value=1 - beta2)
        step_size = group["lr"]
        if group["correct_bias"]:
            step_size *= math.sqrt(1 - beta2**step) / (1 - beta1**step)
        denominators = torch._foreach_sqrt(exp_avg_sqs)
        torch._foreach_add_(denominators, group["eps"])
        torch._foreach_addcdiv_(params, exp_avgs, denominators, value=-step_size)
        if group["weight_decay"]:
            torch._foreach_add_(params, params, alpha=-group["lr"] * group["weight_decay"])
