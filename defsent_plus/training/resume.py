"""Training state that survives preemption, a time limit or a kill, so a re-run train job continues mid-epoch.

Every ``every_steps`` steps or ``every_minutes`` minutes, and when SIGTERM or SIGUSR1 arrives, the loop's whole state
is written into ``<area>/<identity>/``: the encoder's and the objective's weights, the optimiser's state, the
schedule, every random generator (torch CPU and CUDA, numpy, Python, and those an objective holds), the position in
the (seeded, precomputed) batch order, the losses and counters so far and the in-training model selection. The
identity hashes the job's parameters and its inputs (path, size and modification time of every file under them), so
a changed lr or a rebuilt input never resumes from a stale state. The area lies outside every rule's outputs, so
Snakemake's clean-up of a failed job leaves it, and it is removed once the job's outputs are written.

Files: ``tensors-<n>.safetensors`` (every tensor) and ``state.json`` (everything else, the identity, and the
tensors' SHA-256 digest), the latter replaced atomically after the former is complete: a state is valid only when
``state.json`` parses, names this identity and its tensors' digest matches. Anything else is ignored with a warning.
No pickle.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
import shutil
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from torch import nn

from defsent_plus.errors import DefSentError
from defsent_plus.io import file_sha256

log = logging.getLogger(__name__)

STATE_FILE = "state.json"
FORMAT = 2  # 2: the tensors' digest is SHA-256
STOP_SIGNALS = (signal.SIGTERM, signal.SIGUSR1)  # SLURM's warning signal before a time limit; a preemption's TERM


@dataclass(frozen=True)
class ResumeSettings:
    """Config ``resume``: where states go and how often (a GPU-sized default; tests save every step or two)."""

    area: str | None = "results/.resume"  # None: no states, a killed job starts over
    every_steps: int = 0  # 0: by time only
    every_minutes: float = 15.0  # 0: by steps only


@dataclass
class Position:
    """Where the loop is and what it has gathered: the next batch to train (``epoch``, ``step``) and the counters."""

    epoch: int = 0
    step: int = 0
    losses: list[float] = field(default_factory=list)
    examples: int = 0
    seconds: float = 0.0  # training seconds before this process
    resumed_from: list[int] = field(default_factory=list)  # the steps earlier processes stopped after
    metrics: list[dict] = field(default_factory=list)  # the metrics table's rows so far (training.metrics)


class TrainingInterrupted(DefSentError):
    """A stop signal arrived: the state was saved and the job exits, to be resumed by its re-run."""


def job_identity(params: dict, inputs: Sequence[str | Path | None]) -> str:
    """A digest of the job's parameters and of every input file's path, size and modification time."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(json.dumps(params, sort_keys=True, default=str).encode())
    for root in inputs:
        if root is None:
            continue
        root = Path(root)
        files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
        for path in files:
            stat = path.stat()
            digest.update(f"{path.resolve()}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def generators_of(module: nn.Module) -> dict[str, torch.Generator]:
    """The torch generators an objective keeps on its modules (augmentation masks, masked tokens), by path."""
    found = {}
    for prefix, sub in module.named_modules():
        for name, value in vars(sub).items():
            if isinstance(value, torch.Generator):
                found[f"{prefix}.{name}" if prefix else name] = value
    return found


def tensors_of(prefix: str, state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Detached CPU copies (tied weights become separate tensors, as safetensors needs)."""
    return {f"{prefix}{k}": v.detach().to("cpu", copy=True).contiguous() for k, v in state.items()}


def with_prefix(tensors: dict[str, torch.Tensor], prefix: str) -> dict[str, torch.Tensor]:
    return {k[len(prefix):]: v for k, v in tensors.items() if k.startswith(prefix)}


def split_optimizer(state: dict) -> tuple[dict[str, torch.Tensor], dict]:
    """An optimiser's state dict as tensors (``optim.<param>.<key>``) and JSON (the rest, the parameter groups)."""
    tensors, plain = {}, {}
    for index, values in state["state"].items():
        for key, value in values.items():
            if isinstance(value, torch.Tensor):
                tensors[f"{index}.{key}"] = value
            else:
                plain.setdefault(str(index), {})[key] = value
    return tensors_of("optim.", tensors), {"plain": plain, "param_groups": state["param_groups"]}


def joined_optimizer(tensors: dict[str, torch.Tensor], saved: dict) -> dict:
    state: dict[int, dict] = {int(i): dict(values) for i, values in saved["plain"].items()}
    for name, value in with_prefix(tensors, "optim.").items():
        index, key = name.split(".", 1)
        state.setdefault(int(index), {})[key] = value
    groups = [{**g, "betas": tuple(g["betas"])} if "betas" in g else g for g in saved["param_groups"]]
    return {"state": state, "param_groups": groups}


def random_states(objective: nn.Module) -> tuple[dict[str, torch.Tensor], dict]:
    tensors = {"rng.torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        tensors |= {f"rng.cuda.{i}": s for i, s in enumerate(torch.cuda.get_rng_state_all())}
    tensors |= {f"rng.objective.{name}": g.get_state() for name, g in generators_of(objective).items()}
    kind, keys, pos, has_gauss, gauss = np.random.get_state()
    return tensors, {"numpy": [kind, keys.tolist(), pos, has_gauss, gauss], "python": random.getstate()}


def restore_random_states(tensors: dict[str, torch.Tensor], saved: dict, objective: nn.Module) -> None:
    torch.set_rng_state(tensors["rng.torch"])
    cuda = [tensors[k] for k in sorted((k for k in tensors if k.startswith("rng.cuda.")),
                                       key=lambda k: int(k.rsplit(".", 1)[1]))]
    if cuda and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(cuda)
    for name, generator in generators_of(objective).items():
        generator.set_state(tensors[f"rng.objective.{name}"])
    kind, keys, pos, has_gauss, gauss = saved["numpy"]
    np.random.set_state((kind, np.asarray(keys, dtype=np.uint32), pos, has_gauss, gauss))
    version, internal, gauss_next = saved["python"]
    random.setstate((version, tuple(internal), gauss_next))


@dataclass
class Parts:
    """What the loop trains and the objects whose state a resume restores."""

    model: nn.Module
    objective: nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    keeper: object  # trainer.BestWeights: curve, misses, best weights


class Checkpointer:
    """Saves and restores one train job's state in ``<area>/<identity>``; ``Checkpointer(None)`` does nothing."""

    def __init__(self, settings: ResumeSettings | None, identity: str = ""):
        self.settings = settings if settings is not None and settings.area else None
        self.directory = Path(self.settings.area) / identity if self.settings else None
        self.identity = identity
        self.stop_requested = False
        self.last_save = time.monotonic()
        self.saves = 0

    @property
    def enabled(self) -> bool:
        return self.directory is not None

    @contextmanager
    def signals(self) -> Iterator[None]:
        """SIGTERM and SIGUSR1 ask for a save and a stop after the current step (main thread only)."""
        if not self.enabled or threading.current_thread() is not threading.main_thread():
            yield
            return

        def request_stop(signum, _frame):
            log.warning("signal %s: saving the training state after this step, then exiting",
                        signal.Signals(signum).name)
            self.stop_requested = True

        previous = {s: signal.signal(s, request_stop) for s in STOP_SIGNALS}
        try:
            yield
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)

    def due(self, steps_done: int) -> bool:
        if not self.enabled:
            return False
        s = self.settings
        by_steps = s.every_steps > 0 and steps_done % s.every_steps == 0
        by_time = s.every_minutes > 0 and time.monotonic() - self.last_save >= 60 * s.every_minutes
        return self.stop_requested or by_steps or by_time

    def after_step(self, parts: Parts, position: Position, finished: bool, steps_done: int | None = None,
                   before_save: Callable[[], object] | None = None) -> None:
        """Save when due (never after the last step: nothing is left to resume); on a stop signal, save and raise.
        ``steps_done``: steps trained (default: the position's losses); ``before_save`` completes the position
        (the loop's losses still on the device)."""
        steps_done = len(position.losses) if steps_done is None else steps_done
        if finished or not self.due(steps_done):
            return
        if before_save is not None:
            before_save()
        self.save(parts, position)
        if self.stop_requested:
            raise TrainingInterrupted(self.directory, f"stopped by a signal after step {len(position.losses)}; the "
                                                      "state is saved and a re-run of this job resumes from it")

    def save(self, parts: Parts, position: Position) -> None:
        started = time.perf_counter()
        self.directory.mkdir(parents=True, exist_ok=True)
        tensors = tensors_of("model.", parts.model.state_dict())
        tensors |= tensors_of("objective.", parts.objective.state_dict())
        optimizer_tensors, optimizer_plain = split_optimizer(parts.optimizer.state_dict())
        rng_tensors, rng_plain = random_states(parts.objective)
        keeper = parts.keeper
        best = tensors_of("best.", keeper.best or {})
        self.saves += 1
        name = f"tensors-{os.getpid()}-{self.saves}.safetensors"
        partial = self.directory / f".{name}.partial"
        save_file(tensors | optimizer_tensors | rng_tensors | best, str(partial))
        os.replace(partial, self.directory / name)
        state = {"format": FORMAT, "identity": self.identity, "tensors": name,
                 "digest": file_sha256(self.directory / name), "position": asdict(position),
                 "optimizer": optimizer_plain, "scheduler": parts.scheduler.state_dict(), "random": rng_plain,
                 "keeper": {"curve": keeper.curve, "misses": keeper.misses}, "saved_at": time.time()}
        partial_state = self.directory / f".{STATE_FILE}.partial"
        partial_state.write_text(json.dumps(state), encoding="utf-8")
        os.replace(partial_state, self.directory / STATE_FILE)
        for old in self.directory.glob("tensors-*.safetensors"):
            if old.name != name:
                old.unlink()
        self.last_save = time.monotonic()
        log.info("saved the training state after step %d (%.1f s, %.0f MB) in %s", len(position.losses),
                 time.perf_counter() - started, (self.directory / name).stat().st_size / 1e6, self.directory)

    def valid_state(self) -> tuple[dict, dict[str, torch.Tensor]] | None:
        """The saved state of this identity, or None (none there, or damaged: ignored with a warning)."""
        if not self.enabled or not (self.directory / STATE_FILE).exists():
            return None
        try:
            state = json.loads((self.directory / STATE_FILE).read_text(encoding="utf-8"))
            if state.get("format") != FORMAT or state.get("identity") != self.identity:
                raise ValueError("written for another job or format")
            tensors_path = self.directory / state["tensors"]
            if file_sha256(tensors_path) != state["digest"]:
                raise ValueError(f"{tensors_path.name} does not match its digest")
            return state, load_file(str(tensors_path))
        except (OSError, ValueError, KeyError, TypeError) as err:  # json.JSONDecodeError is a ValueError
            log.warning("ignoring the damaged training state in %s (%s); training starts over", self.directory, err)
            return None

    def restore(self, parts: Parts) -> Position | None:
        """Load a valid saved state into ``parts``; the position to continue from, or None to start over."""
        found = self.valid_state()
        if found is None:
            return None
        state, tensors = found
        parts.model.load_state_dict(with_prefix(tensors, "model."))
        parts.objective.load_state_dict(with_prefix(tensors, "objective."))
        parts.optimizer.load_state_dict(joined_optimizer(tensors, state["optimizer"]))
        parts.scheduler.load_state_dict(state["scheduler"])
        parts.keeper.best = with_prefix(tensors, "best.") or None
        parts.keeper.curve = [tuple(point) for point in state["keeper"]["curve"]]
        parts.keeper.misses = state["keeper"]["misses"]
        restore_random_states(tensors, state["random"], parts.objective)
        position = Position(**state["position"])
        position.resumed_from.append(len(position.losses))
        log.warning("resuming training from the state saved after step %d (epoch %d, batch %d) in %s",
                    len(position.losses), position.epoch + 1, position.step, self.directory)
        return position

    def remove(self) -> None:
        """Delete this job's state (its outputs are complete)."""
        if self.enabled and self.directory.exists():
            shutil.rmtree(self.directory)
