"""The training loop every method shares: one epoch of a method's task from the run's ORIGINAL weights.

The loop is objective-agnostic: a method's task (:mod:`defsent_plus.training.task`) gives an objective that maps a
batch's encoder outputs to a loss plus named sub-losses for logging, the examples and their targets. The caller hands
in the method's declaration (:class:`~defsent_plus.training.task.TrainingMethod`); the loop never names one and never
imports the registry.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import asdict, dataclass, fields
from datetime import timedelta
from pathlib import Path

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm
from transformers import get_constant_schedule_with_warmup, get_linear_schedule_with_warmup

from defsent_plus.dictionary.table import read_dataset, training_pairs
from defsent_plus.encoders.encoding import autocast_for, device_for_run, tokenise
from defsent_plus.encoders.models import Encoder, load_encoder
from defsent_plus.errors import DefSentError
from defsent_plus.io import atomic_path, write_json
from defsent_plus.names import DEV_TASK, TRAINING_CARD
from defsent_plus.provenance import provenance
from defsent_plus.spaces.entry_matrix import load_space
from defsent_plus.training.batches import DeviceBatch, PreparedEpoch, model_attention_mask
from defsent_plus.training.compilation import compile_choice, compile_wanted, compiled
from defsent_plus.training.metrics import LossTally, MetricsTable, StepRecord, parts_of
from defsent_plus.training.optimizers import TransformersAdamW
from defsent_plus.training.resume import Checkpointer, Parts, Position, ResumeSettings, job_identity
from defsent_plus.training.task import Batch, TaskInputs, TrainingMethod, sampled_task
from defsent_plus.training.trackers import Tracking

log = logging.getLogger(__name__)


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
    warmup_rounding: str = "up"  # up: ceil(ratio x steps) steps (HF Trainer); none: unrounded (DefSent's scheduler)
    select_every: int = 0  # >0: score STS-B dev every N steps and keep the best weights (SimCSE's protocol)
    epochs: int = 1  # passes over the examples (one for a PST step; ConSERT and SLT-FAI's scripts: up to 10)
    patience: int | None = None  # with select_every: stop after this many dev scores without a new best
    no_decay: tuple[str, ...] = ()  # parameter-name parts exempt from weight decay (sentence-transformers' fit)
    extra_tokens: int = 0  # tokens kept beyond max_length (ConSERT's sentence-transformers: 3)
    rescore_at_epoch_end: bool = False  # score dev again after an epoch's last step (sentence-transformers' fit)
    log_every: int = 50
    compile: str = "off"  # off | on | auto: the encoder's forward pass through torch.compile (auto: on CUDA only)

    @property
    def kept_tokens(self) -> int:
        """The most tokens of a sentence, [CLS] and [SEP] included, training and its dev scores read."""
        return self.max_length + self.extra_tokens


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
    progress: bool = True, dev_score: Callable[[Encoder], float] | None = None, checkpoint: Checkpointer | None = None,
    metrics_path: str | Path | None = None, trackers: Sequence = (),
) -> dict:
    """``cfg.epochs`` epochs of the configured optimiser and schedule (+ gradient clipping), keeping the weights at
    the best STS-B dev score (:class:`BestWeights`) with ``cfg.select_every`` and a ``dev_score``. With a
    ``checkpoint``, the state is saved as it asks and a saved state resumed mid-epoch (:mod:`.resume`); every step's
    metrics go to ``metrics_path`` and the ``trackers`` (:mod:`.metrics`). No step makes a host round trip: batches
    are padded per epoch (:mod:`.batches`), losses read at logging steps. Returns a summary of the run."""
    if len(texts) == 0:
        raise DefSentError("training data", "no training examples")
    checkpoint = checkpoint or Checkpointer(None)
    seed_everything(cfg.seed)
    device = next(encoder.model.parameters()).device
    objective.to(device)
    tokens = tokenise(encoder.tokenizer, texts, cfg.kept_tokens)  # once, [CLS] and [SEP] included
    lengths = tokens.lengths
    order = torch.Generator().manual_seed(cfg.seed)
    epochs = [batch_order(lengths, cfg.batch_size, order, cfg.bucket_by_length) for _ in range(cfg.epochs)]
    named = [(n, p) for n, p in [*encoder.model.named_parameters(), *objective.named_parameters()] if p.requires_grad]
    optimizer = make_optimizer(parameter_groups(named, cfg), cfg, device)
    scheduler = learning_rate_schedule(optimizer, cfg, sum(map(len, epochs)))
    keeper = BestWeights(encoder, dev_score, cfg.select_every, cfg.patience, cfg.rescore_at_epoch_end)
    parts = Parts(encoder.model, objective, optimizer, scheduler, keeper)
    position = checkpoint.restore(parts) or Position()
    table = MetricsTable(metrics_path, position.metrics, trackers)
    position.metrics = table.rows  # a saved state keeps the rows so far
    keeper.on_score = table.dev_score
    encoder.model.train()
    objective.train()
    tally = LossTally(first_step=len(position.losses) + 1, lr=cfg.lr)
    step_of = TrainStep(encoder, objective, [p for _, p in named], cfg, device)
    multiple = cfg.kept_tokens if compile_wanted(cfg.compile, device) else None
    start = time.perf_counter() - position.seconds
    interval = (position.examples, time.perf_counter(), 0.0)  # where the logging interval began; the last's pace

    def absorb() -> list[dict]:
        nonlocal interval
        rows = tally.read()
        position.losses.extend(row["loss"] for row in rows)
        now = time.perf_counter()
        pace = (position.examples - interval[0]) / max(now - interval[1], 1e-9)
        table.extend(rows, pace)
        interval = (position.examples, now, pace)
        return rows

    with tqdm(total=len(texts) * cfg.epochs, initial=position.examples, desc="training", unit="sent",
              disable=not progress, mininterval=5) as bar, checkpoint.signals(), \
            compiled(encoder.model, cfg.compile, device) as begin_step:
        for epoch in range(position.epoch, len(epochs)):
            prepared = PreparedEpoch(tokens, entry_ids, epochs[epoch], encoder.tokenizer, device, multiple)
            steps = len(prepared)
            for step, batch in prepared.batches(position.step if epoch == position.epoch else 0):
                begin_step()
                tally.pending.append(step_of(batch, step / steps, epoch, optimizer.param_groups[0]["lr"]))
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad(set_to_none=True)
                done = len(position.losses) + len(tally.pending)
                position.examples += batch.size
                bar.update(batch.size)
                if step % cfg.log_every == 0 or step == steps - 1:
                    report(absorb()[-1], bar, epoch, step, steps, position.examples, time.perf_counter() - start,
                           interval[2])
                keeper.after(step, steps, done)
                if keeper.stopped:
                    break
                position.epoch, position.step = (epoch, step + 1) if step + 1 < steps else (epoch + 1, 0)
                position.seconds = time.perf_counter() - start
                checkpoint.after_step(parts, position, finished=position.epoch == len(epochs), steps_done=done,
                                      before_save=absorb)
            if keeper.stopped:
                break
        absorb()
    table.close()
    seconds = time.perf_counter() - start
    resumed = {"resumed_after_steps": position.resumed_from} if position.resumed_from else {}
    return {**summarise(position.losses, position.examples, seconds, cfg), **keeper.restore(), **resumed}


def time_left(examples: int, total: int, seconds: float, recent: float = 0.0) -> str:
    """h:mm:ss until ``total`` examples, ``examples`` being trained after ``seconds`` (a resumed job's earlier
    seconds included): at the last logging interval's pace ``recent`` (a pause or a slow start does not linger in
    it), else (0: none yet) at the pace so far."""
    left = round((total - examples) / max(recent or examples / max(seconds, 1e-9), 1e-9))
    return f"{left // 3600}:{left // 60 % 60:02d}:{left % 60:02d}"


def report(last: dict, bar: tqdm, epoch: int, step: int, steps: int, examples: int, seconds: float,
           recent: float) -> None:
    """The progress bar's and the log's line at a logging step: the ``last`` row's loss and parts, the pace and the
    time left (a long job's log says when it will end)."""
    loss, rate = last["loss"], examples / max(seconds, 1e-9)
    bar.set_postfix(loss=f"{loss:.3f}", sent_s=f"{rate:.1f}")
    log.info("epoch %d step %d/%d loss %.4f %s %.1f sent/s, %s elapsed, eta %s", epoch + 1, step + 1, steps, loss,
             parts_of(last), rate, timedelta(seconds=round(seconds)), time_left(examples, bar.total, seconds, recent))


class BestWeights:
    """SimCSE's model selection inside one training run: STS-B dev every ``every`` steps of an epoch and after its
    last one; the weights of the best score are restored at the end. With ``patience`` (sentence-transformers'
    early stopping, as ConSERT and SLT-FAI train), that many scores in a row without a new best stop the training.
    With ``rescore_at_epoch_end`` an epoch whose last step is an every-N step is scored twice on the same weights, as
    sentence-transformers' fit() does (its in-epoch evaluation, then its end-of-epoch one): the repeat is never a
    new best, so it costs a unit of patience."""

    def __init__(self, encoder: Encoder, dev_score: Callable[[Encoder], float] | None, every: int,
                 patience: int | None = None, rescore_at_epoch_end: bool = False):
        if every and dev_score is None:
            raise DefSentError("config: methods.*.select_every", "needs STS-B dev data (the train job's senteval)")
        if patience is not None and (not every or patience < 1):
            raise DefSentError("config: methods.*.patience", f"early stopping needs select_every > 0 and a patience "
                                                              f">= 1, got select_every {every}, patience {patience}")
        self.encoder, self.dev_score, self.every, self.patience = encoder, dev_score, every, patience
        self.rescore_at_epoch_end = rescore_at_epoch_end
        self.on_score: Callable[[int, float], None] | None = None  # told every (step, score): the metrics table
        self.curve: list[tuple[int, float]] = []
        self.best: dict[str, torch.Tensor] | None = None
        self.misses = 0  # scores in a row without a new best

    @property
    def stopped(self) -> bool:
        return self.patience is not None and self.misses >= self.patience

    def after(self, step: int, steps: int, done: int) -> None:
        """After ``step`` (0-based) of an epoch of ``steps``; ``done``: steps trained so far in all."""
        if not self.every:
            return
        scheduled = (step + 1) % self.every == 0
        if scheduled:
            self.score(done)
        if step == steps - 1 and not self.stopped and (not scheduled or self.rescore_at_epoch_end):
            self.score(done)

    def score(self, done: int) -> None:
        """Score STS-B dev now; keep the weights if it is a new best, else count a miss."""
        score = self.dev_score(self.encoder)
        log.info("step %d: STS-B dev %.2f", done, score)
        if self.on_score is not None:
            self.on_score(done, score)
        if not self.curve or score > max(s for _, s in self.curve):
            self.best = {k: v.detach().to("cpu", copy=True) for k, v in self.encoder.model.state_dict().items()}
            self.misses = 0
        else:
            self.misses += 1
        self.curve.append((done, score))

    def restore(self) -> dict:
        """Load the best weights; what the summary records about the selection."""
        if not self.every:
            return {}
        self.encoder.model.load_state_dict(self.best)
        best_step, best_score = max(self.curve, key=lambda point: point[1])
        return {"selection": {"every": self.every, "curve": self.curve, "best_step": best_step,
                              "best_dev": best_score, "stopped_early": self.stopped}}


SCHEDULES = {  # name -> (optimizer, warm-up steps, steps) -> the schedule
    "linear": get_linear_schedule_with_warmup,
    "constant": lambda optimizer, warmup, steps: get_constant_schedule_with_warmup(optimizer, warmup),
}
WARMUP_ROUNDINGS = {"up": math.ceil, "none": float}
OPTIMIZERS = {  # name -> (class, its own arguments besides lr, eps and weight decay)
    # fused: one kernel for all parameters (CPU and CUDA)
    "adamw": (torch.optim.AdamW, {"fused": True}),
    "adam": (torch.optim.Adam, {"fused": True}),
    "adamw_transformers": (TransformersAdamW, {}),  # as DefSent+'s TrainEncoder.py (eps before the bias correction)
    "adamw_uncorrected": (TransformersAdamW, {"correct_bias": False}),  # sentence-transformers' fit (ConSERT, SLT-FAI)
}


def parameter_groups(named: list[tuple[str, nn.Parameter]], cfg: TrainConfig) -> list:
    """The parameters to optimise: one list, or with ``cfg.no_decay`` a group of those whose names contain none
    of its parts (``cfg.weight_decay``) and one of the others (no weight decay), as sentence-transformers' fit."""
    if not cfg.no_decay:
        return [p for _, p in named]
    exempt = [any(part in name for part in cfg.no_decay) for name, _ in named]
    return [{"params": [p for (_, p), no in zip(named, exempt, strict=True) if not no]},
            {"params": [p for (_, p), no in zip(named, exempt, strict=True) if no], "weight_decay": 0.0}]


def make_optimizer(params: list, cfg: TrainConfig, device: torch.device) -> torch.optim.Optimizer:
    """The configured optimiser of :data:`OPTIMIZERS` over ``params`` (parameters or parameter groups)."""
    optimizer, arguments = OPTIMIZERS[cfg.optimizer]
    if arguments.get("fused"):
        arguments = {"fused": device.type in ("cpu", "cuda")}
    return optimizer(params, lr=cfg.lr, eps=cfg.adam_eps, weight_decay=cfg.weight_decay, **arguments)


def learning_rate_schedule(optimizer: torch.optim.Optimizer, cfg: TrainConfig, steps: int):
    """Linear warm-up over ``warmup_ratio`` of the steps, then linear decay to 0 or a constant rate. The warm-up
    length is rounded up to whole steps or, with ``warmup_rounding: none``, left a float (DefSent's LambdaLR)."""
    warmup = WARMUP_ROUNDINGS[cfg.warmup_rounding](cfg.warmup_ratio * steps)
    return SCHEDULES[cfg.schedule](optimizer, warmup, steps)


class TrainStep:
    """One optimisation step's forward and backward pass on a prepared batch; what it leaves on the device."""

    def __init__(self, encoder: Encoder, objective: nn.Module, params: list[nn.Parameter], cfg: TrainConfig,
                 device: torch.device):
        self.encoder, self.objective, self.params, self.cfg, self.device = encoder, objective, params, cfg, device
        self.view = getattr(objective, "first_view", None)  # an objective may augment the loop's forward (ConSERT)

    def __call__(self, batch: DeviceBatch, progress: float, epoch: int, lr: float) -> StepRecord:
        model = self.encoder.model
        mask = model_attention_mask(model, batch.attention_mask, batch.padded)
        extra, augmentation = self.view(batch.attention_mask) if self.view else ({}, nullcontext())
        with augmentation, autocast_for(self.device):
            hidden = model(input_ids=batch.input_ids, attention_mask=mask, **extra).last_hidden_state
        loss, parts = self.objective(Batch(hidden.float(), batch.attention_mask, batch.input_ids, batch.targets,
                                           progress, epoch, model_mask=mask))
        loss.backward()
        norm = None
        if self.cfg.max_grad_norm is not None:
            norm = torch.nn.utils.clip_grad_norm_(self.params, self.cfg.max_grad_norm)
        return StepRecord(loss.detach(), parts, norm, epoch, lr)


TIMING_KEYS = ("seconds", "sentences_per_second")  # a summary's timings: the job's work clock keeps them


def summarise(losses: list[float], examples: int, seconds: float, cfg: TrainConfig) -> dict:
    """Loss curve summary (first, last, mean and ten segment means), examples trained on (of every epoch), seconds,
    throughput."""
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


def train_on_space(
    base_model: str | Path,
    dataset_path: str | Path,
    space_path: str | Path | None,
    model_out: str | Path,
    summary_out: str | Path,
    cfg: TrainConfig,
    method: TrainingMethod,
    options: dict | None = None,
    senteval_dir: str | Path | None = None,
    run_deviations: Sequence[str] = (),
    max_examples: int | None = None,
    checkpoint: Checkpointer | None = None,
    metrics_out: str | Path | None = None,
    tracking: Tracking | None = None,
    timings: dict | None = None,
) -> dict:
    """Train the ORIGINAL base encoder with ``method``'s task (against the frozen entry space in ``space_path`` for
    methods that use one; ``options``: its objective options) and save the encoder (+ pooler, + what the objective
    adds), with :func:`train_epoch`'s selection and resume. ``tracking``: the trackers that get the metrics rows, the
    config and the summary; ``max_examples``: a rehearsal's cap (a seeded sample, recorded in the card). The
    summary's timings (``TIMING_KEYS``) go to ``timings`` (the job's work clock), not to ``summary_out``, so two
    runs' results compare byte for byte; the returned summary has them."""
    frame = read_dataset(dataset_path)
    texts, entry_ids = training_pairs(frame)  # held-out entries: classes of the softmax, never examples
    encoder = load_encoder(base_model, pooler_seed=cfg.seed)
    space = None if space_path is None else torch.from_numpy(frozen_space(space_path, frame, entry_ids, encoder,
                                                                           dataset_path))
    device = device_for_run()
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    encoder.to(device)
    task = method.build_task(TaskInputs(encoder, frame, texts, entry_ids, cfg.pooling, cfg.seed, str(dataset_path),
                                  options or {}, cfg.batch_size, space, method.config_key(),
                                  None if senteval_dir is None else str(senteval_dir)))
    if max_examples is not None and len(task.texts) > max_examples:
        run_deviations = [*run_deviations, f"rehearsal: {max_examples} of the task's {len(task.texts)} examples "
                                           f"(seeded sample, seed {cfg.seed})"]
        task = sampled_task(task, max_examples, cfg.seed)
    log.info("training %s with %s on %d sentences of %d entries (%s) on %s", base_model, method.name, len(task.texts),
             len(frame), space_path, device)
    dev = None if senteval_dir is None else dev_scorer(senteval_dir, cfg.pooling, max_length=cfg.kept_tokens)
    trackers = tracking.open() if tracking is not None else []
    summary = train_epoch(encoder, task.texts, task.targets, task.objective, cfg, dev_score=dev, checkpoint=checkpoint,
                          metrics_path=metrics_out, trackers=trackers)
    card = {**method.training_card(options), "dataset": str(dataset_path),
            "entry_space": None if space_path is None else str(space_path), "pooling": cfg.pooling,
            "base_model": str(base_model), "seed": cfg.seed, **task.card}
    if "resumed_after_steps" in summary:  # a re-run that continued a killed job's saved state
        card["resumed_after_steps"] = summary["resumed_after_steps"]
    # the method's, its variant's, then this run's own
    card["deviations"] = card["deviations"] + card.pop("run_deviations", []) + list(run_deviations)
    # what can change the trained weights besides the data: versions, device, precision, thread count, seed
    card["provenance"] = provenance(str(device), torch.get_num_threads(), {"training": cfg.seed})
    card["compiled"] = compile_wanted(cfg.compile, device)  # training.compile on this device
    summary.update(card, device=device.type, classes=task.card.get("classes"))
    summary["fit"] = card["fit"] = fit_diagnostic(summary["loss_last"], task.card.get("classes"))
    if not summary["fit"]["fitted"]:
        log.warning("%s", summary["fit"]["note"])
    with atomic_path(model_out) as tmp:
        encoder.save(tmp)
        if task.save is not None:
            task.save(tmp)
        write_json(Path(tmp) / TRAINING_CARD, card)
    timing = {key: summary.pop(key) for key in TIMING_KEYS}
    (timings if timings is not None else {}).update(timing)
    write_json(summary_out, summary)
    summary.update(timing)
    for tracker in trackers:
        tracker.finish(summary)
    if checkpoint is not None:
        checkpoint.remove()
    return summary


def dev_scorer(senteval_dir: str | Path, pooling: str, batch_size: int = 128, max_length: int = 128
               ) -> Callable[[Encoder], float]:
    """STS-B dev Spearman x 100 of an encoder with the run's pooling (SimCSE: CLS without its training MLP)."""
    from defsent_plus.evaluation.sts import encoder_embed, sts_scores  # the loop needs it only with select_every

    def score(encoder: Encoder) -> float:
        embed = encoder_embed(encoder, pooling, batch_size, max_length)
        return sts_scores(embed, senteval_dir, (DEV_TASK,))[DEV_TASK]

    return score


CHANCE_MARGIN = 0.02  # a final loss within 2% of ln(classes) has not left chance level


def fit_diagnostic(final_loss: float, classes: int | None) -> dict:
    """Whether training left chance level: a final loss within 2% of ln(number of classes), or above it, did not
    fit its targets (a uniform prediction over the classes has exactly that loss; a higher loss is worse than it)."""
    if not classes or classes < 2:
        return {"fitted": True, "chance_loss": None, "note": ""}
    chance = math.log(classes)
    fitted = final_loss < (1 - CHANCE_MARGIN) * chance
    if fitted:
        note = ""
    elif final_loss <= (1 + CHANCE_MARGIN) * chance:
        note = (f"final loss {final_loss:.3f} is within {CHANCE_MARGIN:.0%} of ln({classes}) = {chance:.3f}: the "
                "training did not fit its targets (chance level)")
    else:
        note = (f"final loss {final_loss:.3f} is above ln({classes}) = {chance:.3f}, worse than a uniform "
                "prediction: the training diverged or did not fit its targets")
    return {"fitted": fitted, "chance_loss": round(chance, 4), "note": note}


def frozen_space(space_path: str | Path, frame, entry_ids: np.ndarray, encoder: Encoder,
                 dataset_path: str | Path) -> np.ndarray:
    """The entry space a method trains against, checked against the dataset's entries and the encoder's width."""
    space = load_space(space_path, len(frame))
    if len(entry_ids) and (entry_ids.min() < 0 or entry_ids.max() >= len(space)):
        raise DefSentError(str(dataset_path), f"entry id out of range [0, {len(space)}): {int(entry_ids.max())}")
    if space.shape[1] != encoder.hidden_size:
        raise DefSentError(space_path, f"entry space has width {space.shape[1]}, encoder hidden size is "
                                       f"{encoder.hidden_size}")
    return space


def train_candidate(method: TrainingMethod, options: dict, lr: float, batch_size: int, pooling: str, seed: int,
                    base_model: str | Path, dataset_path: str | Path, space_path: str | Path | None,
                    model_out: str | Path, summary_out: str | Path, senteval_dir: str | Path | None = None,
                    max_examples: int | None = None, resume: ResumeSettings | None = None,
                    compile: bool | str = False, metrics_out: str | Path | None = None,
                    tracking: Tracking | None = None, timings: dict | None = None) -> dict:
    """One PST candidate: ``method`` with its config block ``options`` (completed by its variant: the fields of
    :class:`TrainConfig`, the rest the objective's) and the run's lr, batch size, pooling and seed; the training card
    records where these depart from the variant's. ``resume``: where and how often the state is saved (keyed by
    these arguments and the inputs' files); ``compile``: config ``training.compile``; the rest as
    :func:`train_on_space` takes them."""
    options = method.resolved_options(options)
    optimisation = {f.name for f in fields(TrainConfig)}
    chosen = {k: tuple(v) if isinstance(v, list) else v for k, v in options.items() if k in optimisation}
    cfg = TrainConfig(lr=lr, batch_size=batch_size, seed=seed, pooling=pooling, compile=compile_choice(compile),
                      **chosen)
    objective_options = {k: v for k, v in options.items() if k not in optimisation}
    departures = method.run_deviations(options, lr=lr, batch_size=batch_size, pooling=pooling)
    identity = job_identity({"method": method.name, "options": options, "config": asdict(cfg),
                             "model_out": str(model_out), "max_examples": max_examples},
                            [base_model, dataset_path, space_path, senteval_dir])
    return train_on_space(base_model, dataset_path, space_path, model_out, summary_out, cfg, method=method,
                          options=objective_options, senteval_dir=senteval_dir, run_deviations=departures,
                          max_examples=max_examples, checkpoint=Checkpointer(resume, identity),
                          metrics_out=metrics_out, tracking=tracking, timings=timings)
