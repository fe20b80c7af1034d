"""What a method hands the trainer (:class:`TrainingTask`) and what its objective sees of a batch (:class:`Batch`).

The base types methods build on: methods import this module, the trainer never imports a method (it is handed one,
:class:`TrainingMethod`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd
import torch
from torch import nn

UNSET = object()  # Batch.model_mask when the loop gave none: the 2-D attention mask


@dataclass
class Batch:
    """What an objective sees of one batch."""

    hidden: torch.Tensor  # last hidden states [batch, tokens, hidden]
    attention_mask: torch.Tensor
    input_ids: torch.Tensor
    entry_ids: torch.Tensor
    progress: float = 0.0  # share of the epoch done before this batch (warm-ups of objectives)
    epoch: int = 0  # which epoch (0-based) the batch belongs to
    model_mask: Any = UNSET  # the attention mask the loop handed the model (batches.model_attention_mask)

    @property
    def mask_for_model(self) -> torch.Tensor | None:
        """The attention mask an objective's own forward pass of the whole batch hands the model."""
        return self.attention_mask if self.model_mask is UNSET else self.model_mask


@dataclass
class TaskInputs:
    """Everything a method may build its task from: the encoder, the run's dataset and its training definitions
    (held-out entries never among them), the method's objective options and the job's inputs."""

    encoder: Any  # defsent_plus.encoders.models.Encoder
    frame: pd.DataFrame  # the run's dataset, one row per entry
    texts: list[str]  # its training definitions
    entry_ids: np.ndarray  # each definition's entry (row of ``frame``)
    pooling: str
    seed: int
    where: str  # the dataset's path, for errors
    options: dict  # methods.<name> without the optimisation options
    batch_size: int
    space: torch.Tensor | None = None  # the frozen entry space (methods that train against one)
    config_key: str = "config: methods"  # where users set ``options`` (for errors)
    senteval_dir: str | None = None  # SentEval's data (methods that select on STS-B dev or train on its sentences)


@dataclass
class TrainingTask:
    """What a method trains: its objective, the examples and their targets, and what it adds to the model."""

    objective: nn.Module
    texts: list[str]
    targets: np.ndarray  # per example: the class the objective predicts (entry id, headword token id, ...)
    card: dict = field(default_factory=dict)  # recorded in the model's training card
    save: Callable[[Path], None] | None = None  # writes the objective's own weights next to the encoder


class TrainingMethod(Protocol):
    """What the trainer asks of a method's declaration (:class:`defsent_plus.methods.base.Method`), which the caller
    resolves and passes in: the trainer never imports the methods registry."""

    name: str
    build_task: Callable[[TaskInputs], TrainingTask]

    def config_key(self) -> str: ...

    def resolved_options(self, options: dict | None) -> dict: ...

    def run_deviations(self, options: dict, **run: Any) -> list[str]: ...

    def training_card(self, options: dict | None) -> dict: ...


def unused_targets(examples: list[str]) -> np.ndarray:
    """For objectives without class targets (contrastive ones): the loop still batches an array of them."""
    return np.zeros(len(examples), dtype=np.int64)


def sampled_task(task: TrainingTask, size: int, seed: int) -> TrainingTask:
    """``task`` with a seeded sample of ``size`` of its examples, in their order (a rehearsal's cap)."""
    keep = np.sort(np.random.default_rng(seed).choice(len(task.texts), size=size, replace=False))
    return TrainingTask(task.objective, [task.texts[i] for i in keep], task.targets[keep], task.card, task.save)
