"""The training loop as it was before the prepared-batch loop (commit eae1778): the baseline tests/test_step_loop.py
holds the current loop to. A frozen copy, not used by the workflow.

Per step it pads the batch on the host (``tokenizer.pad``), copies it synchronously, checks the loss for finiteness
in an ``if`` and reads it with ``.item()`` (two host syncs), and reads each part of the loss (objectives returned
``.item()`` floats then; their tensors are read here the same way).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from defsent_plus.encoders.encoding import autocast_for
from defsent_plus.encoders.models import Encoder
from defsent_plus.errors import DefSentError
from defsent_plus.training.resume import Checkpointer, Parts, Position
from defsent_plus.training.task import Batch
from defsent_plus.training.trainer import (
    BestWeights,
    TrainConfig,
    batch_order,
    learning_rate_schedule,
    make_optimizer,
    parameter_groups,
    seed_everything,
    summarise,
)

log = logging.getLogger(__name__)


def tokenized_examples(tokenizer, texts: Sequence[str], cfg: TrainConfig) -> list[list[int]]:
    """Token ids of the training examples, [CLS] and [SEP] included, truncated to ``cfg.kept_tokens``."""
    return tokenizer(list(texts), truncation=True, max_length=cfg.kept_tokens)["input_ids"]


def train_epoch(
    encoder: Encoder, texts: Sequence[str], entry_ids: np.ndarray, objective: nn.Module, cfg: TrainConfig,
    progress: bool = True, dev_score: Callable[[Encoder], float] | None = None, checkpoint: Checkpointer | None = None,
    metrics_path: str | None = None, trackers=(),  # the frozen loop had no metrics table nor trackers: ignored
) -> dict:
    """``cfg.epochs`` epochs (one for a PST step) of the configured optimiser and schedule (+ gradient clipping);
    with ``cfg.select_every`` and a ``dev_score``, the encoder's weights at the best STS-B dev score are kept
    (checked every N steps of an epoch and at its end; ``cfg.patience`` scores without a new best stop training).
    With a ``checkpoint``, the loop's state is saved as it asks and a saved state is resumed mid-epoch
    (:mod:`defsent_plus.training.resume`). Returns a summary of the run."""
    if len(texts) == 0:
        raise DefSentError("training data", "no training examples")
    checkpoint = checkpoint or Checkpointer(None)
    seed_everything(cfg.seed)
    device = next(encoder.model.parameters()).device
    objective.to(device)
    tokenized = tokenized_examples(encoder.tokenizer, texts, cfg)
    lengths = np.array([len(ids) for ids in tokenized])
    order = torch.Generator().manual_seed(cfg.seed)
    epochs = [batch_order(lengths, cfg.batch_size, order, cfg.bucket_by_length) for _ in range(cfg.epochs)]
    named = [(n, p) for n, p in [*encoder.model.named_parameters(), *objective.named_parameters()] if p.requires_grad]
    params = [p for _, p in named]
    optimizer = make_optimizer(parameter_groups(named, cfg), cfg, device)
    scheduler = learning_rate_schedule(optimizer, cfg, sum(map(len, epochs)))
    keeper = BestWeights(encoder, dev_score, cfg.select_every, cfg.patience, cfg.rescore_at_epoch_end)
    parts = Parts(encoder.model, objective, optimizer, scheduler, keeper)
    position = checkpoint.restore(parts) or Position()
    encoder.model.train()
    objective.train()
    start = time.perf_counter() - position.seconds
    with tqdm(total=len(texts) * cfg.epochs, initial=position.examples, desc="training", unit="sent",
              disable=not progress, mininterval=5) as bar, checkpoint.signals():
        for epoch in range(position.epoch, len(epochs)):
            batches = epochs[epoch]
            for step in range(position.step if epoch == position.epoch else 0, len(batches)):
                idx = batches[step]
                loss, parts_of_loss = _train_step(encoder, objective, tokenized, entry_ids, idx, device, params, cfg,
                                                  step / len(batches), epoch)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad(set_to_none=True)
                position.losses.append(loss)
                position.examples += len(idx)
                bar.update(len(idx))
                if step % cfg.log_every == 0 or step == len(batches) - 1:
                    rate = position.examples / max(time.perf_counter() - start, 1e-9)
                    bar.set_postfix(loss=f"{loss:.3f}", sent_s=f"{rate:.1f}")
                    log.info("epoch %d step %d/%d loss %.4f %s %.1f sent/s", epoch + 1, step + 1, len(batches), loss,
                             parts_of_loss, rate)
                keeper.after(step, len(batches), len(position.losses))
                if keeper.stopped:
                    break
                position.epoch, position.step = (epoch, step + 1) if step + 1 < len(batches) else (epoch + 1, 0)
                position.seconds = time.perf_counter() - start
                checkpoint.after_step(parts, position, finished=position.epoch == len(epochs))
            if keeper.stopped:
                break
    seconds = time.perf_counter() - start
    resumed = {"resumed_after_steps": position.resumed_from} if position.resumed_from else {}
    return {**summarise(position.losses, position.examples, seconds, cfg), **keeper.restore(), **resumed}


def _train_step(encoder, objective, tokenized, entry_ids, idx, device, params, cfg, progress,
                epoch) -> tuple[float, dict]:
    features = encoder.tokenizer.pad({"input_ids": [tokenized[i] for i in idx]}, return_tensors="pt").to(device)
    view = getattr(objective, "first_view", None)  # an objective may augment the loop's forward pass (ConSERT)
    extra, augmentation = view(features["attention_mask"]) if view else ({}, nullcontext())
    with augmentation, autocast_for(device):
        hidden = encoder.model(**features, **extra).last_hidden_state
    batch = Batch(hidden.float(), features["attention_mask"], features["input_ids"],
                  torch.as_tensor(entry_ids[idx], device=device), progress, epoch)
    loss, parts = objective(batch)
    parts = {k: v.item() if isinstance(v, torch.Tensor) else v for k, v in parts.items()}
    if not torch.isfinite(loss):
        raise FloatingPointError(f"training loss became {loss.item()} (lr {cfg.lr}); stopping")
    loss.backward()
    if cfg.max_grad_norm is not None:
        torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm)
    return loss.item(), parts
