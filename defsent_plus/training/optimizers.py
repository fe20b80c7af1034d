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
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for param in group["params"]:
                if param.grad is None:
                    continue
                state = self.state[param]
                if not state:
                    state.update(step=0, exp_avg=torch.zeros_like(param), exp_avg_sq=torch.zeros_like(param))
                state["step"] += 1
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                exp_avg.mul_(beta1).add_(param.grad, alpha=1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(param.grad, param.grad, value=1 - beta2)
                step_size = group["lr"]
                if group["correct_bias"]:
                    step_size *= math.sqrt(1 - beta2 ** state["step"]) / (1 - beta1 ** state["step"])
                param.addcdiv_(exp_avg, exp_avg_sq.sqrt().add_(group["eps"]), value=-step_size)
                if group["weight_decay"]:
                    param.add_(param, alpha=-group["lr"] * group["weight_decay"])
        return None
