"""Training against a frozen entry space (000, Eq. 5) and the pieces of Progressive Separate Training.

The loop is objective-agnostic: an objective maps a batch's encoder outputs to a loss plus named
sub-losses for logging. :class:`EntryProjection` is DefSent+'s: pooled sentence → pooler → logits against
the frozen entry matrix → cross-entropy on the definition's entry id.
"""

from __future__ import annotations

import logging
import math
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Protocol

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from tqdm.auto import tqdm
from transformers import get_constant_schedule_with_warmup, get_linear_schedule_with_warmup

from .corpus import read_corpus_file, training_corpus
from .dictionary import read_dataset, training_pairs
from .encoding import get_pooling
from .entry_matrix import load_space
from .errors import DefSentError
from .io import atomic_path, read_json, write_json
from .methods import method_of
from .models import Encoder, Pooler, autocast_for, device_for_run, load_encoder

log = logging.getLogger(__name__)
TRAINING_CARD = "defsent_training.json"  # saved in every trained model dir: what its pooler was trained against


@dataclass(frozen=True)
class TrainConfig:
    """Hyperparameters of one training run (defaults from 000, Appendix A)."""

    lr: float = 5e-5
    batch_size: int = 32
    seed: int = 0
    max_length: int = 128
    pooling: str = "cls"
    optimizer: str = "adamw"  # adamw (DefSent+) | adam (DefSent)
    weight_decay: float = 0.0
    adam_eps: float = 1e-6
    max_grad_norm: float | None = 1.0  # None: no gradient clipping (DefSent)
    bucket_by_length: bool = False
    schedule: str = "linear"  # linear: decay to 0 after the warm-up (DefSent+); constant: constant after it
    warmup_ratio: float = 0.0  # share of the steps with a linear warm-up
    select_every: int = 0  # >0: score STS-B dev every N steps and keep the best weights (SimCSE's protocol)
    log_every: int = 50


@dataclass
class Batch:
    """What an objective sees of one batch."""

    hidden: torch.Tensor  # last hidden states [batch, tokens, hidden]
    attention_mask: torch.Tensor
    input_ids: torch.Tensor
    entry_ids: torch.Tensor
    progress: float = 0.0  # share of the epoch done before this batch (warm-ups of objectives)


class Objective(Protocol):
    """Maps a batch's encoder outputs to a loss and named sub-losses (for logging)."""

    def parameters(self): ...

    def __call__(self, batch: Batch) -> tuple[torch.Tensor, dict[str, float]]: ...


class EntryProjection(nn.Module):
    """DefSent+'s objective: softmax over a frozen entry space of the pooled, pooler-projected sentence."""

    def __init__(self, entry_space: torch.Tensor, pooler: Pooler, pooling: str):
        super().__init__()
        self.register_buffer("entry_space", entry_space.float(), persistent=False)
        self.entry_space.requires_grad_(False)
        self.pooler = pooler
        self.pooling = get_pooling(pooling)

    def logits(self, hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        h = self.pooler(self.pooling.pool(hidden, attention_mask, None))
        with torch.autocast(device_type=h.device.type, enabled=False):
            return h.float() @ self.entry_space.T

    def forward(self, batch: Batch) -> tuple[torch.Tensor, dict[str, float]]:
        loss = F.cross_entropy(self.logits(batch.hidden, batch.attention_mask), batch.entry_ids)
        return loss, {"entry_ce": loss.item()}


def seed_everything(seed: int) -> None:
    torch.manual_seed(seed)
    np.random.seed(seed)


def batch_order(lengths: np.ndarray, batch_size: int, generator: torch.Generator, bucket: bool) -> list[np.ndarray]:
    """Shuffled batches of example indices; with ``bucket``, lengths are similar within a batch.

    Bucketing sorts chunks of 50 batches by length, then shuffles the batches, so every epoch still
    sees every example once and batch composition stays seeded.
    """
    order = torch.randperm(len(lengths), generator=generator).numpy()
    if bucket:
        chunk = batch_size * 50
        parts = np.split(order, range(chunk, len(order), chunk))
        order = np.concatenate([part[np.argsort(-lengths[part], kind="stable")] for part in parts])
    batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    if bucket:
        perm = torch.randperm(len(batches), generator=generator).numpy()
        batches = [batches[i] for i in perm]
    return batches


def train_epoch(
    encoder: Encoder, texts: Sequence[str], entry_ids: np.ndarray, objective: nn.Module, cfg: TrainConfig,
    progress: bool = True, dev_score: Callable[[Encoder], float] | None = None,
) -> dict:
    """One epoch of the configured optimiser and schedule (+ gradient clipping); with ``cfg.select_every`` and a
    ``dev_score``, the encoder's weights at the best STS-B dev score are kept (checked every N steps and at the end).
    Returns a summary of the run."""
    if len(texts) == 0:
        raise DefSentError("training data", "no training examples")
    seed_everything(cfg.seed)
    device = next(encoder.model.parameters()).device
    objective.to(device)
    tokenized = encoder.tokenizer(list(texts), truncation=True, max_length=cfg.max_length)["input_ids"]
    lengths = np.array([len(ids) for ids in tokenized])
    batches = batch_order(lengths, cfg.batch_size, torch.Generator().manual_seed(cfg.seed), cfg.bucket_by_length)
    params = [p for p in list(encoder.model.parameters()) + list(objective.parameters()) if p.requires_grad]
    optimizer = make_optimizer(params, cfg, device)
    scheduler = learning_rate_schedule(optimizer, cfg, len(batches))
    keeper = BestWeights(encoder, dev_score, cfg.select_every, len(batches))
    encoder.model.train()
    objective.train()
    losses: list[float] = []
    start = time.perf_counter()
    with tqdm(total=len(texts), desc="training", unit="sent", disable=not progress, mininterval=5) as bar:
        for step, idx in enumerate(batches):
            loss, parts = _train_step(encoder, objective, tokenized, entry_ids, idx, device, params, cfg,
                                      step / len(batches))
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            losses.append(loss)
            bar.update(len(idx))
            if step % cfg.log_every == 0 or step == len(batches) - 1:
                rate = bar.n / max(time.perf_counter() - start, 1e-9)
                bar.set_postfix(loss=f"{loss:.3f}", sent_s=f"{rate:.1f}")
                log.info("step %d/%d loss %.4f %s %.1f sent/s", step + 1, len(batches), loss, parts, rate)
            keeper.after(step)
    seconds = time.perf_counter() - start
    return {**summarise(losses, len(texts), seconds, cfg), **keeper.restore()}


class BestWeights:
    """SimCSE's model selection inside one training run: STS-B dev every ``every`` steps and after the last one;
    the weights of the best score are restored at the end."""

    def __init__(self, encoder: Encoder, dev_score: Callable[[Encoder], float] | None, every: int, steps: int):
        if every and dev_score is None:
            raise DefSentError("config: methods.*.select_every", "needs STS-B dev data (the train job's senteval)")
        self.encoder, self.dev_score, self.every, self.steps = encoder, dev_score, every, steps
        self.curve: list[tuple[int, float]] = []
        self.best: dict[str, torch.Tensor] | None = None

    def after(self, step: int) -> None:
        if not self.every or ((step + 1) % self.every and step != self.steps - 1):
            return
        score = self.dev_score(self.encoder)
        log.info("step %d/%d: STS-B dev %.2f", step + 1, self.steps, score)
        if not self.curve or score > max(s for _, s in self.curve):
            self.best = {k: v.detach().to("cpu", copy=True) for k, v in self.encoder.model.state_dict().items()}
        self.curve.append((step + 1, score))

    def restore(self) -> dict:
        """Load the best weights; what the summary records about the selection."""
        if not self.every:
            return {}
        self.encoder.model.load_state_dict(self.best)
        best_step, best_score = max(self.curve, key=lambda point: point[1])
        return {"selection": {"every": self.every, "curve": self.curve, "best_step": best_step,
                              "best_dev": best_score}}


SCHEDULES = ("linear", "constant")
OPTIMIZERS = {"adamw": torch.optim.AdamW, "adam": torch.optim.Adam}


def make_optimizer(params: list[nn.Parameter], cfg: TrainConfig, device: torch.device) -> torch.optim.Optimizer:
    """AdamW (DefSent+) or Adam (DefSent) over the trainable parameters."""
    if cfg.optimizer not in OPTIMIZERS:
        raise DefSentError("config: methods.*.optimizer", f"unknown optimizer {cfg.optimizer!r}; expected one of "
                                                           f"{list(OPTIMIZERS)}")
    # fused: one kernel for all parameters (CPU and CUDA): 14 ms instead of ~90 ms per step for MiniLM on 2 cores
    return OPTIMIZERS[cfg.optimizer](params, lr=cfg.lr, eps=cfg.adam_eps, weight_decay=cfg.weight_decay,
                                     fused=device.type in ("cpu", "cuda"))


def learning_rate_schedule(optimizer: torch.optim.Optimizer, cfg: TrainConfig, steps: int):
    """Linear warm-up over ``warmup_ratio`` of the steps, then linear decay to 0 or a constant rate."""
    warmup = math.ceil(cfg.warmup_ratio * steps)
    if cfg.schedule == "linear":
        return get_linear_schedule_with_warmup(optimizer, num_warmup_steps=warmup, num_training_steps=steps)
    if cfg.schedule == "constant":
        return get_constant_schedule_with_warmup(optimizer, num_warmup_steps=warmup)
    raise DefSentError("config: methods.*.schedule", f"unknown schedule {cfg.schedule!r}; expected one of "
                                                       f"{list(SCHEDULES)}")


def _train_step(encoder, objective, tokenized, entry_ids, idx, device, params, cfg, progress) -> tuple[float, dict]:
    features = encoder.tokenizer.pad({"input_ids": [tokenized[i] for i in idx]}, return_tensors="pt").to(device)
    with autocast_for(device):
        hidden = encoder.model(**features).last_hidden_state
    batch = Batch(hidden.float(), features["attention_mask"], features["input_ids"],
                  torch.as_tensor(entry_ids[idx], device=device), progress)
    loss, parts = objective(batch)
    if not torch.isfinite(loss):
        raise FloatingPointError(f"training loss became {loss.item()} (lr {cfg.lr}); stopping")
    loss.backward()
    if cfg.max_grad_norm is not None:
        torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm)
    return loss.item(), parts


def summarise(losses: list[float], examples: int, seconds: float, cfg: TrainConfig) -> dict:
    """Loss curve summary (first, last, mean and ten segment means), examples, seconds, throughput."""
    segments = np.array_split(np.asarray(losses), min(10, len(losses)))
    return {
        "config": asdict(cfg),
        "examples": examples,
        "steps": len(losses),
        "loss_first": losses[0],
        "loss_last": losses[-1],
        "loss_mean": float(np.mean(losses)),
        "loss_curve": [float(s.mean()) for s in segments],
        "seconds": round(seconds, 2),
        "sentences_per_second": round(examples / max(seconds, 1e-9), 2),
    }


def check_entry_ids(entry_ids: np.ndarray, n_entries: int, where: str) -> None:
    if len(entry_ids) and (entry_ids.min() < 0 or entry_ids.max() >= n_entries):
        raise DefSentError(where, f"entry id out of range [0, {n_entries}): {int(entry_ids.max())}")


@dataclass
class TrainingTask:
    """What a method trains: its objective, the examples and their targets, and what it adds to the model."""

    objective: nn.Module
    texts: list[str]
    targets: np.ndarray  # per example: the class the objective predicts (entry id, headword token id, ...)
    card: dict = field(default_factory=dict)  # recorded in the model's training card
    save: Callable[[Path], None] | None = None  # writes the objective's own weights next to the encoder


def train_on_space(
    base_model: str | Path,
    dataset_path: str | Path,
    space_path: str | Path | None,
    model_out: str | Path,
    summary_out: str | Path,
    cfg: TrainConfig,
    method: str = "defsent_plus",
    options: dict | None = None,
    senteval_dir: str | Path | None = None,
) -> dict:
    """Train the ORIGINAL base encoder for one epoch with ``method``'s objective (against the frozen entry space
    in ``space_path`` for methods that use one; ``options``: the method's objective options) and save the encoder
    (+ pooler, + what the objective adds). With ``senteval_dir`` and ``cfg.select_every``, the weights with the best
    STS-B dev score during training are the ones saved."""
    frame = read_dataset(dataset_path)
    texts, entry_ids = training_pairs(frame)  # held-out entries: classes of the softmax, never examples
    encoder = load_encoder(base_model, pooler_seed=cfg.seed)
    inputs = {}
    if space_path is not None:
        inputs["space"] = torch.from_numpy(frozen_space(space_path, frame, entry_ids, encoder, dataset_path))
    device = device_for_run()
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    encoder.to(device)
    task = build_task(method, encoder, frame=frame, texts=texts, entry_ids=entry_ids, pooling=cfg.pooling,
                      seed=cfg.seed, where=str(dataset_path), options=options or {}, batch_size=cfg.batch_size,
                      **inputs)
    log.info("training %s with %s on %d sentences of %d entries (%s) on %s", base_model, method, len(task.texts),
             len(frame), space_path, device)
    dev = None if senteval_dir is None else dev_scorer(senteval_dir, cfg.pooling, max_length=cfg.max_length)
    summary = train_epoch(encoder, task.texts, task.targets, task.objective, cfg, dev_score=dev)
    card = {"method": method, "dataset": str(dataset_path), "entry_space": None if space_path is None else
            str(space_path), "pooling": cfg.pooling, "base_model": str(base_model), **task.card}
    summary.update(card, device=device.type, classes=task.card.get("classes"))
    summary["fit"] = fit_diagnostic(summary["loss_last"], task.card.get("classes"))
    if not summary["fit"]["fitted"]:
        log.warning("%s", summary["fit"]["note"])
    with atomic_path(model_out) as tmp:
        encoder.save(tmp)
        if task.save is not None:
            task.save(tmp)
        write_json(Path(tmp) / TRAINING_CARD, card)
    write_json(summary_out, summary)
    return summary


def dev_scorer(senteval_dir: str | Path, pooling: str, batch_size: int = 128, max_length: int = 128
               ) -> Callable[[Encoder], float]:
    """STS-B dev Spearman x 100 of an encoder with the run's pooling (SimCSE: CLS without its training MLP)."""
    from .evaluation import encoder_embed, sts_scores
    from .selection import DEV_TASK

    def score(encoder: Encoder) -> float:
        embed = encoder_embed(encoder, pooling, batch_size, max_length)
        return sts_scores(embed, senteval_dir, (DEV_TASK,))[DEV_TASK]

    return score


CHANCE_MARGIN = 0.02  # a final loss within 2% of ln(classes) has not left chance level


def fit_diagnostic(final_loss: float, classes: int | None) -> dict:
    """Whether training left chance level: a final loss within 2% of ln(number of classes) did not fit its
    targets (a uniform prediction over the classes has exactly that loss)."""
    if not classes or classes < 2:
        return {"fitted": True, "chance_loss": None, "note": ""}
    chance = math.log(classes)
    fitted = final_loss < (1 - CHANCE_MARGIN) * chance
    note = "" if fitted else (f"final loss {final_loss:.3f} is within {CHANCE_MARGIN:.0%} of ln({classes}) = "
                              f"{chance:.3f}: the training did not fit its targets (chance level)")
    return {"fitted": fitted, "chance_loss": round(chance, 4), "note": note}


def frozen_space(space_path: str | Path, frame, entry_ids: np.ndarray, encoder: Encoder,
                 dataset_path: str | Path) -> np.ndarray:
    """The entry space a method trains against, checked against the dataset's entries and the encoder's width."""
    space = load_space(space_path, len(frame))
    check_entry_ids(entry_ids, len(space), str(dataset_path))
    if space.shape[1] != encoder.hidden_size:
        raise DefSentError(space_path, f"entry space has width {space.shape[1]}, encoder hidden size is "
                                       f"{encoder.hidden_size}")
    return space


def defsent_plus_task(encoder: Encoder, frame, texts: list[str], entry_ids: np.ndarray, pooling: str, seed: int,
                      where: str, options: dict, batch_size: int, space: torch.Tensor) -> TrainingTask:
    """000: each definition's class is its entry; logits against the frozen entry space."""
    return TrainingTask(EntryProjection(space, encoder.pooler, pooling), texts, entry_ids,
                        card={"classes": len(frame)})


def defsent_task(encoder: Encoder, frame, texts: list[str], entry_ids: np.ndarray, pooling: str, seed: int,
                 where: str, options: dict, batch_size: int) -> TrainingTask:
    """001: each definition's class is its headword's token; logits over the whole vocabulary."""
    from .defsent import defsent_training_task

    return defsent_training_task(encoder, frame, texts, entry_ids, pooling, seed, where)


def simcse_task(encoder: Encoder, frame, texts: list[str], entry_ids: np.ndarray, pooling: str, seed: int,
                where: str, options: dict, batch_size: int) -> TrainingTask:
    """Unsupervised SimCSE: two dropout views of each corpus sentence against the batch's other sentences."""
    corpus = training_corpus(texts, options["corpus_file"], options["max_sentences"], seed, where)
    return TrainingTask(contrastive_objective(encoder, pooling, seed, options), corpus, unused_targets(corpus),
                        card={**corpus_card(corpus, options), "classes": batch_size})  # InfoNCE: chance = ln(batch)


def slt_fai_task(encoder: Encoder, frame, texts: list[str], entry_ids: np.ndarray, pooling: str, seed: int,
                 where: str, options: dict, batch_size: int) -> TrainingTask:
    """SLT-FAI (004): SimCSE (or a ConSERT augmentation) + frequency-adversarial and incomplete-sentence losses;
    frequency labels from the training corpus or ``frequency_corpus``, tokenised with the model's tokenizer."""
    from .slt_fai import SltFai, frequency_labels

    corpus = training_corpus(texts, options["corpus_file"], options["max_sentences"], seed, where)
    counted = read_corpus_file(options["frequency_corpus"]) if options["frequency_corpus"] else corpus
    low_frequency = frequency_labels(encoder.tokenizer, counted, options["frequency_rate"])
    objective = SltFai(encoder, contrastive_objective(encoder, pooling, seed, options), low_frequency,
                       pooling=pooling, alpha=options["alpha"], beta=options["beta"], epsilon=options["epsilon"],
                       warmup=options["warmup"], seed=seed)
    card = {**corpus_card(corpus, options), "frequency_corpus": options["frequency_corpus"] or "training corpus",
            "low_frequency_types": int(low_frequency.sum())}
    return TrainingTask(objective, corpus, unused_targets(corpus), card=card)


def contrastive_objective(encoder: Encoder, pooling: str, seed: int, options: dict) -> nn.Module:
    """SimCSE's InfoNCE objective with the method's temperature, training MLP and augmentation."""
    from .contrastive import UnsupervisedContrastive

    return UnsupervisedContrastive(encoder, pooling=pooling, temperature=options["temperature"], mlp=options["mlp"],
                                   augmentation=options["augmentation"], cutoff_rate=options["cutoff_rate"],
                                   seed=seed)


def corpus_card(corpus: list[str], options: dict) -> dict:
    return {"corpus": options["corpus_file"] or "run dataset's training definitions", "sentences": len(corpus),
            "augmentation": options["augmentation"], "temperature": options["temperature"]}


def unused_targets(corpus: list[str]) -> np.ndarray:
    """Contrastive methods have no class targets; the loop still batches an array of them."""
    return np.zeros(len(corpus), dtype=np.int64)


# A method of defsent_plus.methods.METHODS plugs in here: its task (objective, examples, targets) built from the
# encoder, the dataset, the method's objective options and the job's inputs.
TASKS: dict[str, Callable[..., TrainingTask]] = {"defsent_plus": defsent_plus_task, "defsent": defsent_task,
                                                 "simcse": simcse_task, "slt_fai": slt_fai_task}


def build_task(method: str, encoder: Encoder, **inputs) -> TrainingTask:
    """The training task of a registered method for this encoder."""
    method_of(method)
    return TASKS[method](encoder, **inputs)


def train_candidate(method: str, options: dict, lr: float, batch_size: int, pooling: str, seed: int,
                    base_model: str | Path, dataset_path: str | Path, space_path: str | Path | None,
                    model_out: str | Path, summary_out: str | Path, senteval_dir: str | Path | None = None) -> dict:
    """One PST candidate: ``method`` with its config block ``options`` (methods.<method>: the optimisation fields of
    :class:`TrainConfig`, the rest the objective's) and the run's lr, batch size, pooling and seed."""
    optimisation = {f.name for f in fields(TrainConfig)}
    cfg = TrainConfig(lr=lr, batch_size=batch_size, seed=seed, pooling=pooling,
                      **{k: v for k, v in options.items() if k in optimisation})
    objective_options = {k: v for k, v in options.items() if k not in optimisation}
    return train_on_space(base_model, dataset_path, space_path, model_out, summary_out, cfg, method=method,
                          options=objective_options, senteval_dir=senteval_dir)


# ------------------------------------------------------------------------------------ PST selection


def select_best(candidates: Sequence[dict]) -> dict:
    """The candidate with the highest dev score; ties go to the earlier candidate (config order)."""
    if not candidates:
        raise DefSentError("best selection", "no trained candidates to choose from")
    for candidate in candidates:
        if not math.isfinite(candidate["dev_score"]):
            raise DefSentError(candidate.get("dev_json", "dev score"), "dev score is not a finite number")
    return max(candidates, key=lambda c: c["dev_score"])


def write_best(dev_jsons: Sequence[str | Path], model_dirs: Sequence[str | Path], best_json: str | Path,
               best_dir: str | Path, labels: Sequence[dict] | None = None) -> dict:
    """Pick the step's best (space, seed) by dev score and copy its model to ``best_dir`` (no symlink)."""
    candidates = []
    labels = labels or [{} for _ in dev_jsons]
    for dev_json, model_dir, label in zip(dev_jsons, model_dirs, labels, strict=True):
        dev = read_json(dev_json)
        candidates.append({**label, "dev_score": dev["dev_score"], "dev_json": str(dev_json),
                           "model": str(model_dir)})
    best = select_best(candidates)
    with atomic_path(best_dir) as tmp:
        shutil.copytree(best["model"], tmp)
    result = {"best": best, "candidates": candidates}
    write_json(best_json, result)
    log.info("best: %s (dev %.2f)", best["model"], best["dev_score"])
    return result
