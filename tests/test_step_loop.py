"""The training loop with no host round trip (defsent_plus/training/batches.py, metrics.py, compilation.py): every
method trains bit for bit as the loop before it (tests/legacy_loop.py), the loop reads tensors on the host once per
logging interval, a non-finite loss is caught at the next read with its step, batches are padded as the tokenizer
pads them, the model's attention mask is built on the host without changing the forward pass, and a compiled step
follows the eager one."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import legacy_loop
import numpy as np
import pandas as pd
import pytest
import torch
from helpers import write_toy_dataset
from host_reads import HostReads
from test_resume import CASES, assert_same_training, train

from defsent_plus.encoders.encoding import pad_rows, pad_values, tokenise
from defsent_plus.encoders.models import load_encoder
from defsent_plus.errors import DefSentError
from defsent_plus.io import write_npy
from defsent_plus.methods.defsent_plus.objective import EntryProjection
from defsent_plus.training import trainer
from defsent_plus.training.batches import PreparedEpoch, model_attention_mask
from defsent_plus.training.compilation import compile_wanted
from defsent_plus.training.metrics import NonFiniteLoss

SENTENCES = ["a large animal with a long neck", "the color of the sky", "a dog", "the red ball is big and new",
             "a small bird", "water", "the person who makes food for the team at night", "a tree"] * 6


@pytest.fixture
def inputs(tmp_path) -> dict:
    dataset = write_toy_dataset(tmp_path / "toy.parquet")
    write_npy(tmp_path / "space.npy", np.random.default_rng(0).normal(size=(6, 32)).astype(np.float32))
    return {"dataset_path": dataset, "space": tmp_path / "space.npy"}


@pytest.mark.parametrize("method, options, _stop", CASES)
def test_every_method_trains_bit_for_bit_as_the_loop_before_it(method, options, _stop, tmp_path, inputs, tiny_bert,
                                                                senteval_dir, monkeypatch):
    train(method, options, tmp_path / "now", inputs, tiny_bert, senteval_dir, resume=None)
    monkeypatch.setattr(trainer, "train_epoch", legacy_loop.train_epoch)
    train(method, options, tmp_path / "before", inputs, tiny_bert, senteval_dir, resume=None)
    assert_same_training(tmp_path / "now", tmp_path / "before")


def entry_training(model: Path, log_every: int, steps: int, objective_of=None):
    encoder = load_encoder(model, pooler_seed=0)
    space = torch.randn(10, encoder.hidden_size, generator=torch.Generator().manual_seed(1))
    objective = (objective_of or (lambda e: EntryProjection(space, e.pooler, "mean")))(encoder)
    texts = SENTENCES[: 4 * steps]
    cfg = trainer.TrainConfig(lr=1e-3, batch_size=4, log_every=log_every, bucket_by_length=True)
    return encoder, texts, np.arange(len(texts)) % 10, objective, cfg


@pytest.mark.parametrize("log_every", [1, 5, 50])
def test_the_loop_reads_the_device_once_per_logging_interval(model_dir, log_every):
    steps = 12
    encoder, texts, ids, objective, cfg = entry_training(model_dir, log_every, steps)
    with HostReads() as reads:
        trainer.train_epoch(encoder, texts, ids, objective, cfg, progress=False)
    logging_steps = len({*range(0, steps, log_every), steps - 1})
    order = 2  # the seeded batch order: two randperms read as numpy arrays before the epoch
    assert reads.total <= logging_steps + order, (reads.counts, dict(reads.where))
    with HostReads() as before:  # the counter sees what the loop before did: reads in every step
        legacy_loop.train_epoch(*entry_training(model_dir, log_every, steps), progress=False)
    assert before.total >= 2 * steps


class NaNAfter(torch.nn.Module):
    """DefSent+'s objective whose loss turns NaN from the ``bad``-th call on."""

    def __init__(self, inner: torch.nn.Module, bad: int):
        super().__init__()
        self.inner, self.bad, self.calls = inner, bad, 0

    def forward(self, batch):
        loss, parts = self.inner(batch)
        self.calls += 1
        return (loss * math.nan if self.calls >= self.bad else loss), parts


def test_a_non_finite_loss_stops_training_at_the_next_read_naming_its_step(tiny_bert):
    encoder, texts, ids, _, cfg = entry_training(tiny_bert, log_every=50, steps=12)
    objective = NaNAfter(EntryProjection(torch.randn(10, encoder.hidden_size), encoder.pooler, "mean"), bad=7)
    with pytest.raises(NonFiniteLoss, match=r"training loss became nan at step 7 \(lr 0.001\)"):
        trainer.train_epoch(encoder, texts, ids, objective, cfg, progress=False)
    assert objective.calls == 12  # read at the epoch's last step, the first logging step after it


def test_a_long_job_logs_its_pace_and_time_left_at_each_logging_step(tiny_bert, caplog):
    encoder, texts, ids, objective, cfg = entry_training(tiny_bert, log_every=4, steps=12)
    with caplog.at_level("INFO", logger="defsent_plus.training.trainer"):
        trainer.train_epoch(encoder, texts, ids, objective, cfg, progress=False)
    lines = [r.getMessage() for r in caplog.records if " sent/s, " in r.getMessage()]
    assert [line.split()[3] for line in lines] == ["1/12", "5/12", "9/12", "12/12"]
    assert lines[-1].endswith("eta 0:00:00") and all(" elapsed, eta " in line for line in lines)


def test_the_metrics_table_has_every_step_once_with_the_logged_losses_and_the_steps_learning_rates(tiny_bert, caplog,
                                                                                                 tmp_path):
    encoder, texts, ids, objective, cfg = entry_training(tiny_bert, log_every=4, steps=12)
    scores = iter(range(100))
    cfg = replace(cfg, select_every=5)
    with caplog.at_level("INFO", logger="defsent_plus.training.trainer"):
        summary = trainer.train_epoch(encoder, texts, ids, objective, cfg, progress=False,
                                      dev_score=lambda _: float(next(scores)), metrics_path=tmp_path / "m.tsv")
    table = pd.read_csv(tmp_path / "m.tsv", sep="\t")
    assert table["step"].tolist() == list(range(1, 13)) and (table["epoch"] == 1).all()
    logged = {int(m.split()[3].split("/")[0]): float(m.split()[5]) for m in (r.getMessage() for r in caplog.records)
              if " sent/s, " in m}
    assert {step: round(table.loss[step - 1], 4) for step in logged} == logged
    assert (table.loss.iloc[0], table.loss.iloc[-1]) == (summary["loss_first"], summary["loss_last"])
    np.testing.assert_allclose(table["lr"], cfg.lr * (1 - np.arange(12) / 12))  # linear decay, no warm-up
    assert (table["grad_norm"] > 0).all() and "examples_per_second" not in table  # no timing in results
    assert table["dev_score"].dropna().to_dict() == {4: 0.0, 9: 1.0, 11: 2.0}  # steps 5, 10 and the epoch's end


@pytest.mark.parametrize(("examples", "seconds", "eta"), [(100, 10.0, "0:00:30"), (10, 9.0, "0:05:51"),
                                                          (1, 3600.0, "399:00:00")])
def test_the_time_left_is_the_examples_left_at_the_pace_so_far(examples, seconds, eta):
    assert trainer.time_left(examples, 400, seconds) == eta


def test_the_time_left_follows_the_last_intervals_pace_after_a_pause():
    assert trainer.time_left(100, 400, 1000.0, recent=10.0) == "0:00:30"  # not 0:50:00 at the pace so far


@pytest.mark.parametrize("side", ["right", "left"])
@pytest.mark.parametrize("multiple", [None, 8])
def test_batches_are_padded_as_the_tokenizer_pads_them(model_dir, side, multiple):
    tokenizer = load_encoder(model_dir).tokenizer
    tokenizer.padding_side = side
    rows = tokenizer(SENTENCES[:5])
    expected = tokenizer.pad(rows, return_tensors="np", pad_to_multiple_of=multiple)
    padded = pad_rows(tokenise(tokenizer, SENTENCES[:5], 128), np.arange(5), pad_values(tokenizer), side, multiple)
    assert padded.keys() == expected.keys()
    for key, value in expected.items():
        np.testing.assert_array_equal(padded[key], value, err_msg=key)


def test_a_prepared_epoch_holds_each_batch_and_knows_which_have_padding(tiny_bert):
    tokenizer = load_encoder(tiny_bert).tokenizer
    texts = ["a dog", "a cat", "the red ball is big"]
    rows = tokenizer(texts)["input_ids"]
    epoch = PreparedEpoch(tokenise(tokenizer, texts, 128), np.array([5, 6, 7]), [np.array([0, 1]), np.array([2, 0])],
                          tokenizer, torch.device("cpu"))
    batches = list(epoch.batches())
    assert [step for step, _ in batches] == [0, 1] and [b.padded for _, b in batches] == [False, True]
    second = batches[1][1]
    np.testing.assert_array_equal(second.targets.numpy(), [7, 5])
    np.testing.assert_array_equal(second.input_ids[1, : len(rows[0])].numpy(), rows[0])
    assert list(epoch.batches(first=1))[0][0] == 1


@pytest.mark.parametrize("texts", [SENTENCES[:4], ["a dog", "a cat"]], ids=["padded", "unpadded"])
def test_the_host_built_attention_mask_gives_the_same_forward_pass(model_dir, texts):
    encoder = load_encoder(model_dir)
    features = encoder.tokenizer(texts, padding=True, return_tensors="pt")
    mask = features["attention_mask"]
    given = model_attention_mask(encoder.model, mask, padded=not bool(mask.all()))
    assert (given is None) == bool(mask.all())
    with torch.no_grad():
        expected = encoder.model(**features).last_hidden_state
        got = encoder.model(input_ids=features["input_ids"], attention_mask=given).last_hidden_state
    assert torch.equal(got, expected)


def test_an_eager_attention_model_gets_the_plain_mask(tiny_bert):
    encoder = load_encoder(tiny_bert)
    encoder.model.config._attn_implementation = "eager"
    mask = torch.ones(2, 3, dtype=torch.long)
    assert model_attention_mask(encoder.model, mask, padded=False) is mask


def test_compilation_is_an_explicit_choice_on_cpu():
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    assert not compile_wanted("auto", cpu) and compile_wanted("auto", cuda) and compile_wanted("on", cpu)
    assert not compile_wanted("off", cuda) and not compile_wanted(False, cuda) and compile_wanted(True, cpu)
    with pytest.raises(DefSentError, match="training.compile"):
        compile_wanted("yes", cpu)


def test_a_compiled_step_follows_the_eager_one(tiny_bert, monkeypatch):
    """torch.compile's plumbing on CPU (dynamo and AOT autograd, eager kernels: inductor's code generation takes
    minutes on two cores; the GPU run measures inductor with CUDA graphs, docs/gpu.md), dropout off (compiled
    dropout draws other masks), every batch padded to one length: the eager run's loss curve and weights within
    float32 round-off, one compiled graph for batches of every length (a second for the epoch's smaller last batch),
    and the model runs eagerly again afterwards."""
    from defsent_plus.methods.simcse.objective import without_dropout
    from defsent_plus.training import compilation

    monkeypatch.setattr(compilation, "BACKEND", "aot_eager")
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    curves, weights = {}, {}
    for choice in ("off", "on"):
        encoder, texts, ids, objective, cfg = entry_training(tiny_bert, log_every=50, steps=6)
        texts = texts[:-1]  # a smaller last batch
        without_dropout(encoder.model)
        summary = trainer.train_epoch(encoder, texts, ids, objective, trainer.TrainConfig(
            **{**cfg.__dict__, "compile": choice}), progress=False)
        curves[choice], weights[choice] = summary["loss_curve"], encoder.model.state_dict()
        assert getattr(encoder.model, "_compiled_call_impl", None) is None
    graphs = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    assert 1 <= graphs <= 2, dict(torch._dynamo.utils.counters["stats"])
    np.testing.assert_allclose(curves["on"], curves["off"], atol=1e-5)
    for name, value in weights["off"].items():
        torch.testing.assert_close(weights["on"][name], value, atol=1e-5, rtol=1e-5, msg=name)


class PerParameterAdamW(torch.optim.Optimizer):
    """transformers' AdamW as the loop before it computed it, one parameter at a time (the oracle of the foreach
    form in defsent_plus/training/optimizers.py)."""

    def __init__(self, params, lr, eps, weight_decay, correct_bias, betas=(0.9, 0.999)):
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                                  "correct_bias": correct_bias})

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for param in group["params"]:
                if param.grad is None:
                    continue
                state = self.state[param]
                if not state:
                    state.update(step=0, exp_avg=torch.zeros_like(param), exp_avg_sq=torch.zeros_like(param))
                state["step"] += 1
                state["exp_avg"].mul_(beta1).add_(param.grad, alpha=1 - beta1)
                state["exp_avg_sq"].mul_(beta2).addcmul_(param.grad, param.grad, value=1 - beta2)
                step_size = group["lr"]
                if group["correct_bias"]:
                    step_size *= math.sqrt(1 - beta2 ** state["step"]) / (1 - beta1 ** state["step"])
                param.addcdiv_(state["exp_avg"], state["exp_avg_sq"].sqrt().add_(group["eps"]), value=-step_size)
                if group["weight_decay"]:
                    param.add_(param, alpha=-group["lr"] * group["weight_decay"])


@pytest.mark.parametrize("correct_bias", [True, False])
def test_the_foreach_transformers_adamw_updates_bit_for_bit_as_one_parameter_at_a_time(correct_bias):
    """Parameters of several shapes, one without a gradient for its first three steps (its step count lags), weight
    decay on: after eight steps every parameter and moment equals the per-parameter loop's exactly."""
    from defsent_plus.training.optimizers import TransformersAdamW

    generator = torch.Generator().manual_seed(0)
    shapes = [(7, 5), (5,), (3, 2, 4), (1,)]
    start = [torch.randn(shape, generator=generator) for shape in shapes]
    grads = [[torch.randn(shape, generator=generator) for shape in shapes] for _ in range(8)]
    results = []
    for make in (TransformersAdamW, PerParameterAdamW):
        params = [torch.nn.Parameter(value.clone()) for value in start]
        optimizer = make(params, lr=1e-2, eps=1e-6, weight_decay=0.01, correct_bias=correct_bias)
        for step, step_grads in enumerate(grads):
            for i, (param, grad) in enumerate(zip(params, step_grads, strict=True)):
                param.grad = None if (i == 3 and step < 3) else grad.clone()
            optimizer.step()
        results.append((params, optimizer.state))
    (new, new_state), (old, old_state) = results
    for a, b in zip(new, old, strict=True):
        assert torch.equal(a, b)
        assert new_state[a]["step"] == old_state[b]["step"]
        assert torch.equal(new_state[a]["exp_avg_sq"], old_state[b]["exp_avg_sq"])
