"""Training that resumes after an interruption (defsent_plus/training/resume.py): every method continues mid-epoch
from its saved state to the uninterrupted run's weights, bit for bit on CPU; a SIGTERM saves and exits; a changed
parameter or a damaged state starts over; the state is removed once the outputs are written. The SIGKILL of a whole
Snakemake run is tests/test_incremental.py's."""

from __future__ import annotations

import json
import logging
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import write_toy_dataset
from safetensors.torch import load_file

from defsent_plus.io import write_npy
from defsent_plus.methods import method_of
from defsent_plus.names import TRAINING_CARD
from defsent_plus.training.resume import STATE_FILE, Checkpointer, ResumeSettings, TrainingInterrupted
from defsent_plus.training.trainer import train_candidate

# (method, options, the step after which the first attempt is stopped)
CASES = [
    pytest.param("defsent_plus", {"max_length": 32}, 2, id="defsent_plus"),
    pytest.param("defsent", {"max_length": 32}, 2, id="defsent"),
    pytest.param("simcse", {"max_length": 32, "select_every": 2}, 3, id="simcse-early-stopping-selection"),
    pytest.param("slt_fai", {"max_length": 32, "select_every": 0, "warmup": 0.25}, 2, id="slt_fai"),
    # two epochs of 5 steps, dev scores at 3 and each epoch's end: stopped in the second epoch, after a best
    pytest.param("slt_fai", {"variant": "consert", "epochs": 2, "patience": 2, "select_every": 3,
                             "max_sentences": 40, "max_length": 32}, 6, id="slt_fai-consert-two-epochs"),
]


@pytest.fixture
def inputs(tmp_path) -> dict:
    dataset = write_toy_dataset(tmp_path / "toy.parquet")
    write_npy(tmp_path / "space.npy", np.random.default_rng(0).normal(size=(6, 32)).astype(np.float32))
    return {"dataset_path": dataset, "space": tmp_path / "space.npy"}


def train(method: str, options: dict, out: Path, inputs: dict, model: Path, senteval: Path,
          resume: ResumeSettings | None, lr: float = 1e-3) -> dict:
    space = inputs["space"] if method == "defsent_plus" else None
    options = method_of(method).options_in_force(options)  # as the validated config gives them
    return train_candidate(method_of(method), options, lr=lr, batch_size=2, pooling="cls", seed=0, base_model=model,
                           dataset_path=inputs["dataset_path"], space_path=space, model_out=out / "model",
                           summary_out=out / "train.json", senteval_dir=senteval, resume=resume,
                           metrics_out=out / "metrics.tsv")


def stop_after(monkeypatch, step: int) -> None:
    """What SIGTERM's handler does, at a chosen step: ask for a save and a stop."""
    due = Checkpointer.due

    def stop_there(self, steps_done):
        if steps_done == step:
            self.stop_requested = True
        return due(self, steps_done)

    monkeypatch.setattr(Checkpointer, "due", stop_there)


def assert_same_training(resumed: Path, clean: Path) -> None:
    a, b = (json.loads((d / "train.json").read_text()) for d in (resumed, clean))
    for key in ("steps", "examples", "loss_first", "loss_last", "loss_mean", "loss_curve", "selection"):
        assert a.get(key) == b.get(key), key
    weights_a, weights_b = (load_file(d / "model" / "model.safetensors") for d in (resumed, clean))
    assert weights_a.keys() == weights_b.keys()
    for name in weights_b:
        np.testing.assert_array_equal(weights_a[name].numpy(), weights_b[name].numpy(), err_msg=name)


def assert_same_metrics(resumed: Path, clean: Path) -> None:
    """The metrics tables: every step once, equal to the uninterrupted run's."""
    table_a, table_b = (pd.read_csv(d / "metrics.tsv", sep="\t") for d in (resumed, clean))
    steps = json.loads((clean / "train.json").read_text())["steps"]
    assert table_b["step"].tolist() == list(range(1, steps + 1))
    pd.testing.assert_frame_equal(table_a, table_b)


@pytest.mark.parametrize("method, options, stop", CASES)
def test_an_interrupted_training_resumes_to_the_uninterrupted_weights(method, options, stop, tmp_path, inputs,
                                                                      tiny_bert, senteval_dir, monkeypatch):
    settings = ResumeSettings(area=str(tmp_path / "resume"), every_steps=0, every_minutes=0)
    train(method, options, tmp_path / "clean", inputs, tiny_bert, senteval_dir, resume=None)
    with monkeypatch.context() as patch:
        stop_after(patch, stop)
        with pytest.raises(TrainingInterrupted, match=f"after step {stop}"):
            train(method, options, tmp_path / "run", inputs, tiny_bert, senteval_dir, settings)
    assert not (tmp_path / "run" / "model").exists() and len(list((tmp_path / "resume").glob(f"*/{STATE_FILE}"))) == 1
    summary = train(method, options, tmp_path / "run", inputs, tiny_bert, senteval_dir, settings)
    assert summary["resumed_after_steps"] == [stop]
    assert json.loads((tmp_path / "run" / "model" / TRAINING_CARD).read_text())["resumed_after_steps"] == [stop]
    assert_same_training(tmp_path / "run", tmp_path / "clean")
    assert_same_metrics(tmp_path / "run", tmp_path / "clean")
    assert not any((tmp_path / "resume").iterdir()), "the state outlived the job's outputs"


def interrupted_state(tmp_path: Path, inputs: dict, model: Path, senteval: Path, monkeypatch) -> ResumeSettings:
    settings = ResumeSettings(area=str(tmp_path / "resume"), every_steps=0, every_minutes=0)
    with monkeypatch.context() as patch:
        stop_after(patch, 2)
        with pytest.raises(TrainingInterrupted):
            train("defsent_plus", {"max_length": 32}, tmp_path / "run", inputs, model, senteval, settings)
    return settings


def test_a_changed_learning_rate_or_input_starts_over(tmp_path, inputs, tiny_bert, senteval_dir, monkeypatch):
    settings = interrupted_state(tmp_path, inputs, tiny_bert, senteval_dir, monkeypatch)
    summary = train("defsent_plus", {"max_length": 32}, tmp_path / "run", inputs, tiny_bert, senteval_dir, settings,
                    lr=2e-3)
    assert "resumed_after_steps" not in summary
    time.sleep(0.01)  # a rebuilt input: a new modification time
    write_npy(inputs["space"], np.random.default_rng(0).normal(size=(6, 32)).astype(np.float32))
    summary = train("defsent_plus", {"max_length": 32}, tmp_path / "run", inputs, tiny_bert, senteval_dir, settings)
    assert "resumed_after_steps" not in summary


@pytest.mark.parametrize("damage", ["tensors", "state", "half-written"])
def test_a_damaged_state_is_ignored_with_a_warning(damage, tmp_path, inputs, tiny_bert, senteval_dir, monkeypatch,
                                                   caplog):
    settings = interrupted_state(tmp_path, inputs, tiny_bert, senteval_dir, monkeypatch)
    state_dir = next((tmp_path / "resume").iterdir())
    if damage == "tensors":
        tensors = next(state_dir.glob("tensors-*.safetensors"))
        data = bytearray(tensors.read_bytes())
        data[-1] ^= 0xFF
        tensors.write_bytes(bytes(data))
    elif damage == "state":
        (state_dir / STATE_FILE).write_text("{not json")
    else:  # killed while writing the tensors of a newer state: the manifest names a file that is not there
        state = json.loads((state_dir / STATE_FILE).read_text())
        (state_dir / STATE_FILE).write_text(json.dumps({**state, "tensors": "tensors-0-9.safetensors"}))
    train("defsent_plus", {"max_length": 32}, tmp_path / "clean", inputs, tiny_bert, senteval_dir, resume=None)
    with caplog.at_level(logging.WARNING, logger="defsent_plus.training.resume"):
        summary = train("defsent_plus", {"max_length": 32}, tmp_path / "run", inputs, tiny_bert, senteval_dir, settings)
    assert "resumed_after_steps" not in summary
    assert "ignoring the damaged training state" in caplog.text
    assert_same_training(tmp_path / "run", tmp_path / "clean")


SIGTERM_SCRIPT = """
import logging, sys
from pathlib import Path
import defsent_plus.training.trainer as t
from defsent_plus.methods import method_of
from defsent_plus.training.resume import ResumeSettings
logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(message)s", force=True)
model, dataset, space, out, area = sys.argv[1:6]
t.train_candidate(method_of("defsent_plus"), {"max_length": 32, "epochs": 400}, lr=1e-4, batch_size=2, pooling="cls",
                  seed=0, base_model=model, dataset_path=dataset, space_path=space, model_out=out + "/model",
                  summary_out=out + "/train.json", resume=ResumeSettings(area=area, every_steps=0, every_minutes=0))
"""


def test_sigterm_saves_the_state_and_exits(tmp_path, inputs, tiny_bert):
    """A real SIGTERM (a preemption, SLURM's time-limit warning) mid-epoch: the job saves after its step and exits
    with an error, leaving no output; the state it saved is where the next attempt starts."""
    out, area = tmp_path / "run", tmp_path / "resume"
    proc = subprocess.Popen([sys.executable, "-c", SIGTERM_SCRIPT, str(tiny_bert), str(inputs["dataset_path"]),
                             str(inputs["space"]), str(out), str(area)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    lines = []
    for line in proc.stdout:  # training has started: the first step's progress line
        lines.append(line)
        if "step 1/" in line:
            break
    proc.send_signal(signal.SIGTERM)
    rest, _ = proc.communicate(timeout=120)
    output = "".join(lines) + rest
    assert proc.returncode != 0, output
    assert "signal SIGTERM: saving the training state" in output and "TrainingInterrupted" in output
    state = json.loads(next(area.glob(f"*/{STATE_FILE}")).read_text())
    steps = len(state["position"]["losses"])
    assert 0 < steps < 400 * 5 and f"after step {steps};" in output
    assert not (out / "model").exists() and not (out / "train.json").exists()
