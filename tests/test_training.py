"""The frozen-entry trainer, its pooler adapters, determinism, best selection and bad input."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from helpers import toy_frame, write_toy_dataset
from safetensors.torch import load_file

from defsent_plus.dictionary.table import definition_pairs
from defsent_plus.encoders.models import load_encoder
from defsent_plus.errors import DefSentError
from defsent_plus.io import write_json, write_npy
from defsent_plus.methods import method_of
from defsent_plus.methods.defsent_plus.objective import EntryProjection
from defsent_plus.training.selection import copy_model, select_best, write_selection
from defsent_plus.training.task import Batch
from defsent_plus.training.trainer import TrainConfig, learning_rate_schedule, train_on_space

METHOD = method_of("defsent_plus")


def fixed_batch(encoder, frame):
    texts, ids = definition_pairs(frame)
    features = encoder.tokenizer(texts, padding=True, return_tensors="pt")
    return features, torch.as_tensor(ids)


def batch_loss(encoder, objective, features, ids):
    hidden = encoder.model(**features).last_hidden_state
    return objective(Batch(hidden, features["attention_mask"], features["input_ids"], ids))[0]


def test_loss_equals_the_formula(model_dir):
    encoder = load_encoder(model_dir)
    encoder.model.eval()
    frame = toy_frame()
    space = torch.randn(len(frame), encoder.hidden_size, generator=torch.Generator().manual_seed(0))
    features, ids = fixed_batch(encoder, frame)
    for pooling in ("cls", "mean"):
        objective = EntryProjection(space, encoder.pooler, pooling)
        with torch.no_grad():
            loss = batch_loss(encoder, objective, features, ids)
            hidden = encoder.model(**features).last_hidden_state
            mask = features["attention_mask"].unsqueeze(-1).float()
            pooled = hidden[:, 0] if pooling == "cls" else (hidden * mask).sum(1) / mask.sum(1)
            dense = encoder.pooler.dense
            act = torch.tanh if encoder.family.name == "bert" else F.gelu
            h = act(pooled @ dense.weight.T + dense.bias)
            logits = h @ space.T
            expected = -(logits.log_softmax(-1)[torch.arange(len(ids)), ids]).mean()
        assert loss.item() == pytest.approx(expected.item(), rel=1e-5)


def test_training_steps_decrease_the_loss_and_leave_the_space_frozen(model_dir):
    encoder = load_encoder(model_dir)
    frame = toy_frame()
    space = torch.randn(len(frame), encoder.hidden_size, generator=torch.Generator().manual_seed(1))
    objective = EntryProjection(space.clone(), encoder.pooler, "cls")
    features, ids = fixed_batch(encoder, frame)
    params = list(encoder.model.parameters()) + list(objective.parameters())
    optimizer = torch.optim.AdamW(params, lr=1e-3)
    encoder.model.eval()  # no dropout, so the loss is a function of the weights only
    before = batch_loss(encoder, objective, features, ids)
    for _ in range(3):
        optimizer.zero_grad()
        batch_loss(encoder, objective, features, ids).backward()
        optimizer.step()
    after = batch_loss(encoder, objective, features, ids)
    assert after.item() < before.item()
    assert torch.equal(objective.entry_space, space)
    assert all(p is not objective.entry_space for p in objective.parameters())


def test_roberta_pooler_takes_the_mlm_dense_layer_and_gelu(tiny_roberta):
    encoder = load_encoder(tiny_roberta)
    weights = load_file(str(tiny_roberta / "model.safetensors"))
    assert torch.equal(encoder.pooler.dense.weight, weights["lm_head.dense.weight"])
    assert torch.equal(encoder.pooler.dense.bias, weights["lm_head.dense.bias"])
    assert encoder.pooler.activation_name == "gelu"


def test_bert_keeps_its_pooler_and_a_pooler_less_model_gets_a_seeded_one(tiny_bert, tmp_path):
    from tiny_models import build_tiny_bert

    encoder = load_encoder(tiny_bert)
    weights = load_file(str(tiny_bert / "model.safetensors"))
    assert torch.equal(encoder.pooler.dense.weight, weights["pooler.dense.weight"])
    assert encoder.pooler.activation_name == "tanh"
    bare = build_tiny_bert(tmp_path / "bare", with_pooler=False)
    first, again, other = load_encoder(bare, 3), load_encoder(bare, 3), load_encoder(bare, 4)
    assert torch.equal(first.pooler.dense.weight, again.pooler.dense.weight)
    assert not torch.equal(first.pooler.dense.weight, other.pooler.dense.weight)


def train_toy(tmp_path: Path, model_dir: Path, seed: int = 0, name: str = "run", space=None) -> Path:
    dataset = write_toy_dataset(tmp_path / "toy.parquet")
    encoder = load_encoder(model_dir)
    if space is None:
        space = np.random.default_rng(0).normal(size=(6, encoder.hidden_size)).astype(np.float32)
    write_npy(tmp_path / "space.npy", space)
    out = tmp_path / name
    cfg = TrainConfig(lr=1e-3, batch_size=4, seed=seed, max_length=32)
    train_on_space(model_dir, dataset, tmp_path / "space.npy", out / "model", out / "train.json", cfg, METHOD)
    return out


def test_same_seed_gives_identical_weights_and_a_loadable_checkpoint(tmp_path, model_dir):
    from transformers import AutoModel

    a = train_toy(tmp_path, model_dir, seed=7, name="a")
    b = train_toy(tmp_path, model_dir, seed=7, name="b")
    c = train_toy(tmp_path, model_dir, seed=8, name="c")
    wa, wb, wc = (load_file(str(p / "model" / "model.safetensors")) for p in (a, b, c))
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    assert any(not torch.equal(wa[k], wc[k]) for k in wa)
    AutoModel.from_pretrained(a / "model")
    trained = load_encoder(a / "model")
    base = load_encoder(model_dir)
    assert trained.pooler.activation_name == base.pooler.activation_name
    assert not torch.equal(trained.pooler.dense.weight, base.pooler.dense.weight)  # the trained pooler is saved
    summary = json.loads((a / "train.json").read_text())
    assert summary["examples"] == 9 and summary["steps"] == 3 and summary["base_model"] == str(model_dir)


def test_training_does_not_change_the_entry_space_file(tmp_path, tiny_bert):
    space = np.random.default_rng(1).normal(size=(6, 32)).astype(np.float32)
    out = train_toy(tmp_path, tiny_bert, space=space)  # writes space.npy, then trains against it
    assert (out / "model").is_dir()
    np.testing.assert_array_equal(np.load(tmp_path / "space.npy"), space)


def test_exploding_loss_stops_with_an_error_and_no_output(tmp_path, tiny_bert):
    huge = np.full((6, 32), 3e38, dtype=np.float32) * np.array([[1], [-1]] * 3, dtype=np.float32)  # logits ±inf
    with pytest.raises(FloatingPointError, match="training loss became"):
        train_toy(tmp_path, tiny_bert, space=huge)
    assert not (tmp_path / "run").exists()


KILL_SCRIPT = """
import sys, time
import defsent_plus.encoders.models as models
import defsent_plus.training.trainer as t
from defsent_plus.methods import method_of
original = models.Encoder.save
def save_then_stall(self, path):
    original(self, path)  # the weights are on disk: a non-atomic save would now look complete
    print("saved", flush=True)
    time.sleep(60)
models.Encoder.save = save_then_stall
cfg = t.TrainConfig(lr=1e-3, batch_size=1, seed=0, max_length=32)
t.train_on_space(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] + "/model", sys.argv[4] + "/train.json", cfg,
                 method_of("defsent_plus"))
"""


def test_training_killed_while_saving_leaves_no_complete_looking_output(tmp_path, tiny_bert):
    dataset = write_toy_dataset(tmp_path / "toy.parquet")
    write_npy(tmp_path / "space.npy", np.ones((6, 32), dtype=np.float32))
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-c", KILL_SCRIPT, str(tiny_bert), str(dataset), str(tmp_path / "space.npy"), str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    assert proc.stdout.readline().strip() == "saved"  # training is over; the model is being written
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert not (out / "model").exists() and not (out / "train.json").exists()


def test_best_selection_follows_dev_scores_and_the_copy_is_a_real_directory(tmp_path):
    devs, labels = [], []
    for i, score in enumerate([70.0, 75.5, 72.0]):
        model = tmp_path / f"m{i}"
        model.mkdir()
        (model / "weights.txt").write_text(str(i))
        write_json(tmp_path / f"dev{i}.json", {"dev_score": score, "seed": i})
        devs.append(tmp_path / f"dev{i}.json")
        labels.append({"space": "amp", "seed": i, "model": str(model)})
    result = write_selection(devs, labels, tmp_path / "best.json")
    assert result["best"]["seed"] == 1 and result["best"]["model"] == str(tmp_path / "m1")
    copy_model(result["best"]["model"], tmp_path / "best")
    assert (tmp_path / "best" / "weights.txt").read_text() == "1" and not (tmp_path / "best").is_symlink()
    assert select_best([{"dev_score": 1.0, "k": "first"}, {"dev_score": 1.0, "k": "second"}])["k"] == "first"


@pytest.mark.parametrize("problem", ["rows", "width", "entry_id", "empty", "tokenizer"])
def test_bad_input_fails_before_training(tmp_path, tiny_bert, tiny_roberta, problem, monkeypatch):
    dataset = write_toy_dataset(tmp_path / "toy.parquet")
    model, space = tiny_bert, np.ones((6, 32), dtype=np.float32)
    if problem == "rows":
        space = np.ones((5, 32), dtype=np.float32)
    elif problem == "width":
        space = np.ones((6, 16), dtype=np.float32)
    elif problem == "entry_id":
        from defsent_plus.training import trainer as training

        original = training.training_pairs
        monkeypatch.setattr(training, "training_pairs", lambda frame: (original(frame)[0], original(frame)[1] + 6))
    elif problem == "empty":
        toy_frame().iloc[:0].to_parquet(dataset, index=False)
    elif problem == "tokenizer":
        model = tmp_path / "mismatch"
        import shutil

        shutil.copytree(tiny_bert, model)
        for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"):
            (model / name).unlink(missing_ok=True)
        for name in ("tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt"):
            if (tiny_roberta / name).exists():
                shutil.copy(tiny_roberta / name, model / name)
    write_npy(tmp_path / "space.npy", space)
    messages = {"rows": "5 rows but the dataset has 6", "width": "width 16", "entry_id": "entry id out of range",
                "empty": "no entries", "tokenizer": "do not match"}
    with pytest.raises(DefSentError, match=messages[problem]):
        train_on_space(model, dataset, tmp_path / "space.npy", tmp_path / "out/model", tmp_path / "out/t.json",
                       TrainConfig(), METHOD)
    assert not (tmp_path / "out").exists()


def learning_rates(cfg: TrainConfig, steps: int) -> list[float]:
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=cfg.lr)
    schedule = learning_rate_schedule(optimizer, cfg, steps)
    rates = []
    for _ in range(steps):
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        schedule.step()
    return rates


def test_schedules_linear_decay_and_constant_after_warmup():
    assert learning_rates(TrainConfig(lr=1.0), 4) == pytest.approx([1.0, 0.75, 0.5, 0.25])  # DefSent+: no warm-up
    assert learning_rates(TrainConfig(lr=1.0, schedule="constant", warmup_ratio=0.2), 10) == pytest.approx(
        [0.0, 0.5, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0])  # ceil(0.2 * 10) = 2 warm-up steps, then constant


@pytest.mark.parametrize(("block", "option", "value"), [
    ("methods.defsent_plus", "schedule", "cosine"), ("methods.defsent_plus", "warmup_rounding", "down"),
    ("methods.defsent_plus", "optimizer", "sgd"), ("methods.simcse", "augmentation", "cutout"),
    ("methods.simcse", "loss", "triplet"), ("methods.simcse", "corpus", "wiki"),
    ("methods.slt_fai", "first_augmentation", "dropout"), ("methods.slt_fai", "discriminators", "other"),
    ("methods.slt_fai", "at_views", "two"), ("runs.tiny", "training_pooling", "prompt"),
])
def test_an_unknown_choice_is_refused_by_the_config_naming_its_key(block, option, value):
    """The trainer and the objectives look these names up without a check of their own."""
    from test_dag import tiny_config
    from workflow_utils import validated

    config = tiny_config()
    section, name = block.split(".")
    config[section].setdefault(name, {})[option] = value
    with pytest.raises(DefSentError, match=rf"^config: {block}.{option}: '{value}' is not one of"):
        validated(config)


def test_defsents_warm_up_is_unrounded_as_its_scheduler_computes_it():
    """hppRC/defsent experiments/src/lr_scheduler.py: multiplier = step / (warmup_ratio x steps) while below it, then
    1, the length a float. At 25 steps that is 2.5 warm-up steps: 0, 0.4, 0.8, then 1 (rounded up to 3: 0, 1/3,
    2/3)."""
    unrounded = TrainConfig(lr=1.0, schedule="constant", warmup_ratio=0.1, warmup_rounding="none")
    assert learning_rates(unrounded, 25)[:4] == pytest.approx([0.0, 0.4, 0.8, 1.0])
    rounded = TrainConfig(lr=1.0, schedule="constant", warmup_ratio=0.1)
    assert learning_rates(rounded, 25)[:4] == pytest.approx([0.0, 1 / 3, 2 / 3, 1.0])
    from defsent_plus.methods import method_of

    assert method_of("defsent").options["warmup_rounding"]["default"] == "none"
    assert method_of("simcse").options["warmup_rounding"]["default"] == "up"


def test_chance_level_training_is_flagged():
    import math

    from defsent_plus.training.trainer import fit_diagnostic

    assert not fit_diagnostic(6.97, 1000)["fitted"]  # the default DefSent+ run before: 6.97 vs ln 1000 = 6.91
    assert "within 2% of ln(1000)" in fit_diagnostic(6.80, 1000)["note"]
    # a rehearsal's random BERT-base against an ICA space: 3,167 is no chance level, and the note must not say so
    diverged = fit_diagnostic(3167.4, 832)
    assert not diverged["fitted"] and "within" not in diverged["note"] and "worse than a uniform" in diverged["note"]
    assert fit_diagnostic(0.97 * math.log(1000), 1000)["fitted"]
    assert fit_diagnostic(5.0, None)["fitted"]  # no classes known: nothing to compare with


def test_adam_without_clipping_is_plain_adam():
    """DefSent's optimisation: Adam (no decoupled weight decay) and no gradient clipping."""
    from defsent_plus.training.trainer import make_optimizer

    params = [torch.nn.Parameter(torch.ones(3))]
    optimizer = make_optimizer(params, TrainConfig(optimizer="adam", adam_eps=1e-8, max_grad_norm=None),
                               torch.device("cpu"))
    assert type(optimizer) is torch.optim.Adam and optimizer.defaults["eps"] == 1e-8


def test_selection_during_training_needs_dev_data(tiny_bert):
    from defsent_plus.training.trainer import BestWeights

    with pytest.raises(DefSentError, match=r"methods\.\*\.select_every: needs STS-B dev data"):
        BestWeights(load_encoder(tiny_bert), None, every=10)
