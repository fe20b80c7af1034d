"""Experiment trackers (defsent_plus/training/trackers.py): each installed tracker stores exactly the metrics table a
train job writes (read back from its own files), a restarted job replaces its tracker run, and a tracker that is
unknown or not installed is refused before anything runs."""

from __future__ import annotations

import importlib.util
import json
import struct
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_step_loop import entry_training
from workflow_utils import validated

from defsent_plus.errors import DefSentError
from defsent_plus.training import trainer
from defsent_plus.training.metrics import PACE
from defsent_plus.training.trackers import KINDS, Tracking, check_trackers, job_tracking

INSTALLED = [name for name in KINDS if importlib.util.find_spec(name) is not None]


def tensorboard_scalars(logdir: Path) -> dict[str, dict[int, float]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(logdir))
    events.Reload()
    return {tag.removeprefix("train/"): {e.step: e.value for e in events.Scalars(tag)}
            for tag in events.Tags()["scalars"]}


def mlflow_metrics(store: Path, name: str) -> dict[str, dict[int, float]]:
    from mlflow.tracking import MlflowClient  # the store was opened by the tracker, which opted in to it

    client = MlflowClient(tracking_uri=store.resolve().as_uri())
    experiment = client.get_experiment_by_name("defsent-plus")
    (run,) = client.search_runs([experiment.experiment_id], f"attributes.run_name = '{name}'")
    return {key: {m.step: m.value for m in client.get_metric_history(run.info.run_id, key)}
            for key in run.data.metrics}


def wandb_records(path: Path):
    """The protobuf records of a W&B offline run file (its LevelDB-style log: 32 KiB blocks, 7-byte headers)."""
    block, header = 32768, 7
    data = path.read_bytes()
    assert struct.unpack("<4sHB", data[:7])[:2] == (b":W&B", 0xBEE1)
    pos, pending = 7, b""
    while pos + header <= len(data):
        left = block - pos % block
        checksum, length, kind = struct.unpack("<IHB", data[pos : pos + header])
        if left < header or (kind == 0 and length == 0):
            pos += left
            continue
        chunk, pos = data[pos + header : pos + header + length], pos + header + length
        pending = chunk if kind in (1, 2) else pending + chunk
        if kind in (1, 4):
            yield pending


def wandb_metrics(root: Path) -> dict[str, dict[int, float]]:
    from wandb.proto import wandb_internal_pb2

    (path,) = root.glob("wandb/offline-run-*/run-*.wandb")
    metrics: dict[str, dict[int, float]] = {}
    for raw in wandb_records(path):
        record = wandb_internal_pb2.Record()
        record.ParseFromString(raw)
        if record.WhichOneof("record_type") == "history":
            row = {item.key or "/".join(item.nested_key): json.loads(item.value_json) for item in record.history.item}
            for key, value in row.items():
                if not key.startswith("_"):
                    metrics.setdefault(key, {})[row["_step"]] = value
    return metrics


READ_BACK = {"tensorboard": lambda d, name: tensorboard_scalars(d / "tensorboard" / name),
             "mlflow": lambda d, name: mlflow_metrics(d / "mlflow", name),
             "wandb": lambda d, name: wandb_metrics(d / "wandb" / name)}


def as_stored(table: pd.DataFrame) -> dict[str, dict[int, float]]:
    """The metrics table as a tracker should hold it: every measured column by step, empty cells left out."""
    return {column: dict(zip(table["step"], table[column], strict=True)) if table[column].notna().all()
            else table.set_index("step")[column].dropna().to_dict()
            for column in table.columns if column not in ("step", "epoch") and table[column].notna().any()}


@pytest.mark.skipif(not INSTALLED, reason="no tracker installed")
def test_each_installed_tracker_stores_the_train_jobs_metrics_table(tiny_bert, tmp_path):
    encoder, texts, ids, objective, cfg = entry_training(tiny_bert, log_every=4, steps=12)
    tracking = job_tracking({"report_to": INSTALLED, "dir": str(tmp_path / "trackers")}, "default", 1, "amp", 0,
                            params={"lr": cfg.lr, "method": "defsent_plus"})
    trackers = tracking.open()
    summary = trainer.train_epoch(encoder, texts, ids, objective, cfg, progress=False, dev_score=None,
                                  metrics_path=tmp_path / "metrics.tsv", trackers=trackers)
    for tracker in trackers:
        tracker.finish(summary)
    expected = as_stored(pd.read_csv(tmp_path / "metrics.tsv", sep="\t"))
    assert set(expected) == {"lr", "loss", "entry_ce", "grad_norm"}  # entry_ce: its part
    for name in INSTALLED:
        stored = READ_BACK[name](tmp_path / "trackers", "default/step1/amp/seed0")
        assert stored.keys() == {*expected, PACE}, name  # the pace: the trackers', not the table's (no timing)
        assert stored[PACE].keys() == expected["loss"].keys() and min(stored[PACE].values()) > 0, name
        for column, values in expected.items():  # TensorBoard keeps float32
            assert stored[column].keys() == values.keys(), (name, column)
            np.testing.assert_allclose(list(stored[column].values()), list(values.values()), rtol=1e-6,
                                       err_msg=f"{name}: {column}")


@pytest.mark.skipif("tensorboard" not in INSTALLED, reason="tensorboard not installed")
def test_a_job_that_starts_again_replaces_its_tracker_run(tmp_path):
    rows = [{"step": s, "epoch": 1, "lr": 0.1, "loss": 1.0 / s} for s in (1, 2, 3)]
    for attempt in (rows, rows[:2]):  # a resumed job replays its saved rows into a fresh tracker run
        (tracker,) = Tracking(["tensorboard"], tmp_path, "r/step1/amp/seed0").open()
        tracker.log(attempt)
        tracker.finish({})
    assert tensorboard_scalars(tmp_path / "tensorboard" / "r/step1/amp/seed0")["loss"] == {1: 1.0, 2: 0.5}


def test_an_unknown_or_missing_tracker_is_refused_naming_the_key_and_the_extra(monkeypatch):
    with pytest.raises(DefSentError, match=r"logging\.report_to.*'neptune'"):
        check_trackers(["neptune"])
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "mlflow" else real(name, *a))
    with pytest.raises(DefSentError, match=r"logging\.report_to: mlflow is not installed: bash bin/setup mlflow "
                                           r"\(in this checkout; elsewhere pip install 'defsent-plus\[mlflow\]'\)"):
        check_trackers(["mlflow"])


def test_the_schema_knows_the_trackers_and_reports_none_by_default(tmp_path):
    from test_dag import tiny_config

    assert tiny_config()["logging"] == {"report_to": [], "dir": "{logs}/trackers"}  # this config's logs folder
    config = tiny_config()
    config["logging"] = {"report_to": ["neptune"]}
    with pytest.raises(DefSentError, match=r"config: logging\.report_to\.0"):
        validated(config)


BLOCK_MLFLOW = '''import importlib.abc, sys


class NoMlflow(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "mlflow" or name.startswith("mlflow."):
            raise ModuleNotFoundError(name)
        return None


sys.meta_path.insert(0, NoMlflow())
'''


@pytest.mark.workflow
def test_a_missing_tracker_stops_the_workflow_before_any_job(tmp_path, tiny_bert):
    from workflow_utils import snakemake, write_tiny_config

    write_tiny_config(tmp_path, tiny_bert, logging={"report_to": ["mlflow"], "dir": "logs/trackers"})
    (tmp_path / "block").mkdir()
    (tmp_path / "block" / "sitecustomize.py").write_text(BLOCK_MLFLOW)
    refused = snakemake(tmp_path, "--dry-run", check=False, pythonpath=[tmp_path / "block"])
    assert refused.returncode != 0 and "mlflow is not installed" in refused.stderr + refused.stdout
    assert not (tmp_path / "results").exists()


@pytest.mark.workflow
def test_every_train_job_of_the_tiny_run_reported_its_metrics_table_to_tensorboard(tiny_run):
    tables = sorted(tiny_run.glob("results/tiny/step*/*/seed*/metrics.tsv"))
    assert len(tables) >= 3  # every step's candidates
    for path in tables:
        table = pd.read_csv(path, sep="\t")
        name = "/".join(path.parent.relative_to(tiny_run / "results").parts)
        stored = tensorboard_scalars(tiny_run / "logs" / "trackers" / "tensorboard" / name)
        assert table["step"].tolist() == list(range(1, len(table) + 1))
        assert stored["loss"] == pytest.approx(dict(zip(table["step"], table["loss"], strict=True)), rel=1e-6)
