"""Experiment trackers a train job reports to (config ``logging.report_to``; none by default): TensorBoard, MLflow and
Weights & Biases, each writing offline under ``logging.dir``, each an optional extra of the package.

A tracker gets what the metrics table gets (:mod:`defsent_plus.training.metrics`), as the table gets it: every step's
row at the loop's reads, with the job's config when it starts and its summary (final loss, fit, in-training
selection) when it ends. One tracker run per train job, named ``<run>/step<k>/<target>/seed<s>``; a job that starts
again (a resumed one replays the rows of its saved state) replaces its earlier tracker run, so each step is stored
once.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from defsent_plus.errors import DefSentError

NOT_METRICS = ("step", "epoch")  # row keys that index a row rather than measure it


def check_trackers(names: Sequence[str], where: str = "config: logging.report_to") -> None:
    """Every named tracker is known and installed (checked before the DAG runs, naming the missing extra: each
    tracker's module and the package extra that installs it have the tracker's name)."""
    for name in names:
        if name not in KINDS:
            raise DefSentError(where, f"unknown tracker {name!r}; expected some of {sorted(KINDS)}")
        try:
            installed = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):  # a finder that refuses it: missing
            installed = False
        if not installed:
            raise DefSentError(where, f"{name} is not installed: bash bin/setup {name} (in this checkout; "
                                      f"elsewhere pip install 'defsent-plus[{name}]'), or remove it from the list")


def metrics_of(row: dict) -> dict[str, float]:
    """A row's measured values (no index columns, no empty cells)."""
    return {k: float(v) for k, v in row.items()
            if k not in NOT_METRICS and v is not None and not (isinstance(v, float) and math.isnan(v))}


@dataclass
class Tracking:
    """Where and as what a train job reports: tracker names, their directory, the tracker run's name and config."""

    report_to: Sequence[str] = ()
    directory: str | Path = "logs/trackers"
    name: str = "train"
    config: dict = field(default_factory=dict)

    def open(self) -> list:
        """The named trackers, each with its run started."""
        check_trackers(self.report_to)
        return [KINDS[name](Path(self.directory) / name, self.name, self.config) for name in self.report_to]


def job_tracking(logging: dict, run: str, step: int | str, space: str, seed: int | str, params: dict) -> Tracking:
    """A train job's tracking from config ``logging``: its tracker run is ``<run>/step<k>/<space>/seed<s>``, its
    config the run's name, step, space, seed and the job's parameters."""
    name = f"{run}/step{step}/{space}/seed{seed}"
    config = {"run": run, "step": int(step), "space": space, "seed": int(seed), **params}
    return Tracking(tuple(logging.get("report_to") or ()), logging.get("dir", "logs/trackers"), name, config)


class TensorBoard:
    """Event files under ``<dir>/<name>/`` (``tensorboard --logdir <dir>``): every metric as a scalar ``train/<k>``."""

    def __init__(self, directory: Path, name: str, config: dict):
        from torch.utils.tensorboard import SummaryWriter

        self.logdir = directory / name
        shutil.rmtree(self.logdir, ignore_errors=True)
        self.writer = SummaryWriter(str(self.logdir))
        self.writer.add_text("config", as_text(config))

    def log(self, rows: list[dict]) -> None:
        for row in rows:
            for key, value in metrics_of(row).items():
                self.writer.add_scalar(f"train/{key}", value, row["step"])
        self.writer.flush()

    def finish(self, summary: dict) -> None:
        self.writer.add_text("summary", as_text(summary))
        self.writer.close()


class MLflow:
    """A run of experiment ``defsent-plus`` in the file store ``<dir>`` (``mlflow ui --backend-store-uri <dir>``;
    the full ``mlflow`` package's ``mlflow migrate-filestore`` moves it into a database)."""

    EXPERIMENT = "defsent-plus"

    def __init__(self, directory: Path, name: str, config: dict):
        os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 keeps its file store behind an opt-in
        from mlflow.tracking import MlflowClient

        self.client = MlflowClient(tracking_uri=directory.resolve().as_uri())
        experiment = self.client.get_experiment_by_name(self.EXPERIMENT)
        experiment_id = (experiment.experiment_id if experiment is not None
                         else self.client.create_experiment(self.EXPERIMENT))
        for old in self.client.search_runs([experiment_id], f"attributes.run_name = '{name}'"):
            self.client.delete_run(old.info.run_id)
        self.run_id = self.client.create_run(experiment_id, run_name=name).info.run_id
        for key, value in flat(config).items():
            self.client.log_param(self.run_id, key, value)

    def log(self, rows: list[dict]) -> None:
        from mlflow.entities import Metric

        metrics = [Metric(key, value, 0, row["step"]) for row in rows for key, value in metrics_of(row).items()]
        for start in range(0, len(metrics), 1000):  # the store's batch limit
            self.client.log_batch(self.run_id, metrics=metrics[start : start + 1000])

    def finish(self, summary: dict) -> None:
        for key, value in flat(summary).items():
            self.client.set_tag(self.run_id, f"summary.{key}", value)
        self.client.set_terminated(self.run_id)


class WandB:
    """An offline run under ``<dir>/<name>/wandb`` (``wandb sync`` uploads it), project ``defsent-plus``."""

    def __init__(self, directory: Path, name: str, config: dict):
        import wandb

        root = directory / name
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        self.run = wandb.init(project="defsent-plus", name=name, dir=str(root), mode="offline", config=config,
                              settings=wandb.Settings(silent=True, console="off", x_disable_stats=True))

    def log(self, rows: list[dict]) -> None:
        for row in rows:
            self.run.log(metrics_of(row), step=row["step"])

    def finish(self, summary: dict) -> None:
        self.run.summary.update(flat(summary))
        self.run.finish()


KINDS = {"tensorboard": TensorBoard, "mlflow": MLflow, "wandb": WandB}  # name: its module, its extra


def flat(tree: dict, prefix: str = "") -> dict[str, str | float | int | bool]:
    """A nested dict as ``a.b.c`` keys with scalar values (lists as text)."""
    out = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            out.update(flat(value, f"{prefix}{key}."))
        elif isinstance(value, (int, float, bool, str)):
            out[f"{prefix}{key}"] = value
        elif value is not None:
            out[f"{prefix}{key}"] = str(value)
    return out


def as_text(tree: dict) -> str:
    """A dict as indented JSON in a markdown code block (TensorBoard's text panel renders markdown)."""
    return "```\n" + json.dumps(tree, indent=1, sort_keys=True, default=str) + "\n```"
