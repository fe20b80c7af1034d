"""SLT-FAI's two published variants (004 §4.1) and what the ConSERT one needs: ConSERT's NT-Xent at 0.1 weighted
0.15, feature-cutoff and shuffle views without dropout, the released warm-up flag, several epochs with early stopping,
AdamW without bias correction and weight decay except biases and LayerNorm, the transductive stssick corpus."""

from __future__ import annotations

import math
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from defsent_plus.encoders.encoding import tokenise
from defsent_plus.encoders.models import load_encoder
from defsent_plus.errors import DefSentError
from defsent_plus.methods import method_of
from defsent_plus.methods.simcse.objective import UnsupervisedContrastive, nt_xent
from defsent_plus.methods.slt_fai.objective import SltFai, discriminators_on, frequency_labels
from defsent_plus.pipeline.config_schema import validated_config
from defsent_plus.pipeline.plan import Plan
from defsent_plus.training.corpus import named_corpus, stssick_sentences
from defsent_plus.training.optimizers import TransformersAdamW
from defsent_plus.training.task import Batch
from defsent_plus.training.trainer import BestWeights, TrainConfig, parameter_groups

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
SENTEVAL = Path(__file__).parent / "fixtures" / "senteval"
TEXTS = ["a long necked african animal", "the dog is a good animal", "a red bird", "someone who plays the game"]


@pytest.fixture(scope="module")
def encoder(tiny_bert):
    return load_encoder(tiny_bert)


def test_nt_xent_equals_consert_formula_by_hand():
    z1 = torch.tensor([[1.0, 0.0], [0.6, 0.8], [0.0, 2.0]])
    z2 = torch.tensor([[0.8, 0.6], [0.0, 1.0], [-1.0, 1.0]])
    t = 0.1
    a = [row / row.norm() for row in z1]
    b = [row / row.norm() for row in z2]

    def direction(x, y):  # each x_i against y_j (all j) and x_k (k != i); the positive is y_i
        total = 0.0
        for i in range(3):
            logits = [float(x[i] @ y[j]) / t for j in range(3)] + [float(x[i] @ x[k]) / t for k in range(3) if k != i]
            total += -logits[i] + math.log(sum(math.exp(v) for v in logits))
        return total / 3

    expected = direction(a, b) + direction(b, a)
    assert nt_xent(z1, z2, t).item() == pytest.approx(expected, rel=1e-5)
    assert nt_xent(z1, z2, t).item() != pytest.approx(direction(a, b), rel=1e-3)  # both directions are summed


def batch_of(encoder, texts=TEXTS, epoch=0, progress=1.0, view=None) -> Batch:
    features = encoder.tokenizer(texts, padding=True, return_tensors="pt")
    extra, context = view(features["attention_mask"]) if view else ({}, nullcontext())
    with context:
        hidden = encoder.model(**features, **extra).last_hidden_state
    return Batch(hidden.float(), features["attention_mask"], features["input_ids"], torch.zeros(len(texts)),
                 progress, epoch)


def test_consert_views_without_dropout_cut_features_in_the_first_pass_and_shuffle_the_second(tiny_bert):
    encoder = load_encoder(tiny_bert)
    objective = UnsupervisedContrastive(encoder, pooling="mean", temperature=0.1, mlp=False,
                                        augmentation="token_shuffle", first_augmentation="feature_cutoff",
                                        first_cutoff_rate=0.2, dropout=False, loss="nt_xent")
    encoder.model.train()
    features = encoder.tokenizer(TEXTS, padding=True, return_tensors="pt")
    plain = [encoder.model(**features).last_hidden_state for _ in range(2)]
    assert torch.equal(plain[0], plain[1])  # no dropout: two passes in train mode agree
    seen = {}
    # what the transformer layers receive: the embedding layer's output after the cutoff
    handle = encoder.model.encoder.register_forward_pre_hook(lambda m, args: seen.setdefault("out", args[0]))
    extra, context = objective.first_view(features["attention_mask"])
    with context:
        encoder.model(**features, **extra)
    handle.remove()
    zero_columns = (seen["out"][0, :int(features["attention_mask"][0].sum())] == 0).all(0).sum().item()
    assert extra == {} and zero_columns == math.floor(encoder.hidden_size * 0.2)
    batch = batch_of(encoder, view=objective.first_view)
    loss, parts = objective(batch)
    assert "nt_xent" in parts and not torch.equal(objective.second_hidden, batch.hidden)


def test_no_dropout_and_no_augmentation_is_refused(encoder):
    with pytest.raises(DefSentError, match="dropout"):
        UnsupervisedContrastive(encoder, augmentation="dropout", first_augmentation="none", dropout=False)


@pytest.mark.parametrize(("warmup", "epoch", "progress", "on"), [
    (0.1, 0, 0.05, False), (0.1, 0, 0.1, True), (0.5, 0, 0.49, False), (0.5, 0, 0.5, True),
    (0.5, 1, 0.2, False),  # the released flag: the first half of every later epoch is R_USRL alone again
    (0.5, 1, 0.7, True), (1.0, 0, 0.99, False), (1.0, 1, 0.0, True), (0.0, 0, 0.0, True),
])
def test_discriminators_join_as_the_released_fit_sets_its_flag(warmup, epoch, progress, on):
    assert discriminators_on(epoch, progress, warmup) is on


def floats(loss: torch.Tensor, parts: dict) -> tuple[torch.Tensor, dict[str, float]]:
    """An objective's loss and its parts read as numbers (the loop reads them so at a logging step)."""
    return loss, {name: float(value) for name, value in parts.items()}


def test_usrl_is_weighted_and_the_discriminators_wait_for_the_warmup(encoder):
    usrl = UnsupervisedContrastive(encoder, pooling="mean", temperature=0.1, mlp=False, augmentation="token_shuffle",
                                   first_augmentation="feature_cutoff", dropout=False, loss="nt_xent")
    labels = frequency_labels(encoder.tokenizer, TEXTS, 0.5)
    objective = SltFai(encoder, usrl, labels, pooling="mean", warmup=0.5, usrl_weight=0.15)
    torch.manual_seed(0)
    early, parts = floats(*objective(batch_of(encoder, progress=0.2, view=objective.first_view)))
    assert parts["adversarial"] == 0.0 and early.item() == pytest.approx(0.15 * parts["nt_xent"], rel=1e-6)
    late, parts = floats(*objective(batch_of(encoder, progress=0.6, view=objective.first_view)))
    assert parts["adversarial"] > 0 and late.item() == pytest.approx(
        parts["usrl"] + parts["adversarial"] + parts["incomplete"], rel=1e-5)
    assert parts["usrl"] == pytest.approx(0.15 * parts["nt_xent"], rel=1e-6)


@pytest.mark.parametrize("correct_bias", [False, True])
def test_transformers_adamw_by_hand(correct_bias):
    p = torch.nn.Parameter(torch.tensor([1.0, -2.0]))
    optimizer = TransformersAdamW([p], lr=0.1, eps=1e-3, weight_decay=0.01, correct_bias=correct_bias)
    m = np.zeros(2)
    v = np.zeros(2)
    expected = np.array([1.0, -2.0])
    for t, grad in enumerate(([0.5, -1.0], [0.2, 0.3]), start=1):
        p.grad = torch.tensor(grad)
        optimizer.step()
        g = np.array(grad)
        m, v = 0.9 * m + 0.1 * g, 0.999 * v + 0.001 * g * g
        size = 0.1 * math.sqrt(1 - 0.999**t) / (1 - 0.9**t) if correct_bias else 0.1
        expected = expected - size * m / (np.sqrt(v) + 1e-3)  # eps before the bias correction
        expected = expected - 0.1 * 0.01 * expected
    assert np.allclose(p.detach().numpy(), expected, atol=1e-6)


def test_uncorrected_adamw_takes_larger_first_steps_than_torchs():
    first = {}
    for name, make in (("uncorrected", lambda *a, **k: TransformersAdamW(*a, **k, correct_bias=False)),
                       ("torch", torch.optim.AdamW)):
        q = torch.nn.Parameter(torch.tensor([1.0]))
        step = make([q], lr=0.1, eps=1e-6, weight_decay=0.0)
        q.grad = torch.tensor([0.5])
        step.step()
        first[name] = 1.0 - q.item()
    assert first["torch"] == pytest.approx(0.1, rel=1e-4)  # bias-corrected: lr at step 1
    assert first["uncorrected"] == pytest.approx(0.1 * math.sqrt(1000) / 10, rel=1e-4)  # 0.1 / sqrt(0.001) = 3.16 lr


def test_no_decay_parameters_get_no_weight_decay(encoder):
    named = list(encoder.model.named_parameters())
    groups = parameter_groups(named, TrainConfig(weight_decay=0.01, no_decay=("bias", "LayerNorm.weight")))
    decayed, exempt = groups
    assert "weight_decay" not in decayed and exempt["weight_decay"] == 0.0
    names = {id(p): n for n, p in named}
    assert all("bias" in names[id(p)] or "LayerNorm.weight" in names[id(p)] for p in exempt["params"])
    assert not any("bias" in names[id(p)] for p in decayed["params"]) and decayed["params"]
    assert parameter_groups(named, TrainConfig()) == [p for _, p in named]


def test_early_stopping_after_patience_scores_without_a_new_best(encoder):
    scores = iter([80.0, 81.0, 80.5, 80.9, 81.0, 90.0])
    keeper = BestWeights(encoder, lambda _: next(scores), every=2, patience=3)
    done = 0
    for step in range(100):
        done += 1
        keeper.after(step % 10, 10, done)
        if keeper.stopped:
            break
    assert keeper.curve == [(2, 80.0), (4, 81.0), (6, 80.5), (8, 80.9), (10, 81.0)]  # 81.0 again is no new best
    assert keeper.restore()["selection"]["best_step"] == 4
    with pytest.raises(DefSentError, match="patience"):
        BestWeights(encoder, lambda _: 0.0, every=0, patience=2)


# sentence-transformers' fit() as the released ConSERT and SLT-FAI scripts run it (SentenceTransformer.py: an
# evaluation when a per-epoch step count is a multiple of evaluation_steps, another after every epoch; a score not
# above the best costs a unit of patience, and patience 0 returns): (epoch, step) of each evaluation and the stop,
# for 4 steps an epoch, evaluation_steps 2, patience 2 and these dev scores
RELEASED_FIT = {"scores": [1.0, 2.0, 2.0, 1.5, 1.8], "evaluations": [2, 4, 4, 6], "stops_after": 6}


def run_fit(keeper: BestWeights, steps_per_epoch: int, epochs: int) -> int:
    """The training loop's calls of the keeper; returns the steps trained until it stopped."""
    done = 0
    for _epoch in range(epochs):
        for step in range(steps_per_epoch):
            done += 1
            keeper.after(step, steps_per_epoch, done)
            if keeper.stopped:
                return done
    return done


def test_an_epoch_ending_on_an_evaluation_step_is_scored_twice_as_the_released_fit_does(encoder):
    scores = iter(RELEASED_FIT["scores"])
    keeper = BestWeights(encoder, lambda _: next(scores), every=2, patience=2, rescore_at_epoch_end=True)
    assert run_fit(keeper, steps_per_epoch=4, epochs=3) == RELEASED_FIT["stops_after"]
    assert [step for step, _ in keeper.curve] == RELEASED_FIT["evaluations"]
    scores = iter(RELEASED_FIT["scores"])
    once = BestWeights(encoder, lambda _: next(scores), every=2, patience=2)  # SimCSE's selection: once
    assert run_fit(once, steps_per_epoch=4, epochs=3) == 8 and [s for s, _ in once.curve] == [2, 4, 6, 8]
    scores = iter([1.0, 2.0, 3.0])
    odd = BestWeights(encoder, lambda _: next(scores), every=2, patience=2, rescore_at_epoch_end=True)
    run_fit(odd, steps_per_epoch=3, epochs=1)  # an epoch not ending on an every-N step: scored once at its end
    assert [step for step, _ in odd.curve] == [2, 3]


# ConSERT's Transformer.get_sentence_features: prepare_for_model(word pieces, max_length=min(longest, 64) + 3,
# truncation=True) adds [CLS] and [SEP] after truncating: word pieces kept of a sentence of n, max_seq_length 64
RELEASED_KEPT_WORD_PIECES = {10: 10, 62: 62, 64: 64, 65: 65, 66: 65, 84: 65}


@pytest.mark.parametrize(("pieces", "kept"), sorted(RELEASED_KEPT_WORD_PIECES.items()))
def test_the_consert_variant_keeps_as_many_word_pieces_as_the_released_code(encoder, pieces, kept):
    options = method_of("slt_fai").resolved_options({"variant": "consert"})
    cfg = TrainConfig(max_length=options["max_length"], extra_tokens=options["extra_tokens"])
    sentence = " ".join(["animal"] * pieces)
    assert len(encoder.tokenizer.tokenize(sentence)) == pieces
    ids = tokenise(encoder.tokenizer, [sentence], cfg.kept_tokens).fields["input_ids"]
    assert ids[0] == encoder.tokenizer.cls_token_id and ids[-1] == encoder.tokenizer.sep_token_id
    assert len(ids) - 2 == kept


def test_the_consert_variant_shuffles_positions_from_zero_as_the_released_modeling_roberta(tiny_roberta):
    roberta = load_encoder(tiny_roberta)
    consert = method_of("slt_fai").resolved_options({"variant": "consert"})
    simcse = method_of("simcse").options_in_force({})
    assert (consert["shuffled_positions"], simcse["shuffled_positions"]) == ("zero", "model")
    batch = roberta.tokenizer(TEXTS, padding=True, return_tensors="pt")
    for option, first in (("zero", 0), ("model", roberta.model.config.pad_token_id + 1)):
        objective = UnsupervisedContrastive(roberta, augmentation="token_shuffle", shuffled_positions=option)
        assert objective.first_position == first
        extra, _ = objective.view("token_shuffle", 0.1, batch["attention_mask"])
        for row, mask in zip(extra["position_ids"], batch["attention_mask"], strict=True):
            n = int(mask.sum())
            assert sorted(row[:n].tolist()) == list(range(first, first + n))  # released: range(num_tokens)


def base_config(**slt_fai) -> dict:
    config = yaml.safe_load((REPO / "configs" / "contrastive-minilm.yaml").read_text(encoding="utf-8"))
    config["methods"]["slt_fai"] = slt_fai
    return validated_config(config, SCHEMA)


@pytest.mark.parametrize(("variant", "expected"), [
    ("consert", {"loss": "nt_xent", "temperature": 0.1, "usrl_weight": 0.15, "first_augmentation": "feature_cutoff",
                 "first_cutoff_rate": 0.2, "augmentation": "token_shuffle", "dropout": False, "warmup": 0.5,
                 "corpus": "stssick", "epochs": 10, "patience": 10, "optimizer": "adamw_uncorrected",
                 "weight_decay": 0.01, "max_length": 64, "select_every": 200}),
    ("simcse", {"loss": "info_nce", "temperature": 0.05, "usrl_weight": 1.0, "first_augmentation": "none",
                "augmentation": "dropout", "dropout": True, "warmup": 0.1, "corpus": "definitions", "epochs": 1,
                "max_length": 32, "optimizer": "adamw", "select_every": 125}),
])
def test_each_variants_defaults_come_from_the_config(variant, expected):
    config = base_config(variant=variant)
    resolved = method_of("slt_fai").resolved_options(config["methods"]["slt_fai"])
    assert {k: resolved[k] for k in expected} == expected
    overridden = method_of("slt_fai").resolved_options({**config["methods"]["slt_fai"], "temperature": 0.2})
    assert overridden["temperature"] == 0.2


def test_a_run_names_its_variant_and_its_departures_are_recorded():
    config = base_config(max_sentences=5000, select_every=40)
    plan = Plan(config, selection=lambda run, step: None)
    consert, simcse = plan.method_options("slt_fai_consert"), plan.method_options("slt_fai")
    method = method_of("slt_fai")
    assert method.resolved_options(consert)["corpus"] == "stssick"
    assert method.resolved_options(simcse)["corpus"] == "definitions"
    assert plan.transductive("slt_fai_consert") and plan.transductive("slt_fai_consert_defsent_plus")
    assert not plan.transductive("slt_fai") and not plan.transductive("simcse")
    departures = method.run_deviations(method.resolved_options(consert), lr=5e-7, batch_size=32, pooling="cls")
    assert any(d.startswith("pooling 'cls'") for d in departures)
    assert any(d.startswith("epochs 1") for d in departures) and any("max_sentences 5000" in d for d in departures)
    assert not any(d.startswith("lr") for d in departures)
    config["runs"]["slt_fai"]["options"] = {"variant": "bert"}
    with pytest.raises(DefSentError, match="runs.slt_fai.options.variant"):
        Plan(config, selection=lambda run, step: None)


def test_stssick_is_every_sts_and_sick_sentence_with_duplicates(tmp_path):
    sentences = stssick_sentences(SENTEVAL)
    lines = 0
    for path in sorted((SENTEVAL / "STS").glob("STS1*-en-test/STS.input.*.txt")):
        lines += sum(len([f for f in line.rstrip("\n").split("\t")[:2] if f.strip()])
                     for line in path.read_text(encoding="utf-8").splitlines())
    stsb = sum(len((SENTEVAL / "STS" / "STSBenchmark" / f"sts-{s}.csv").read_text(encoding="utf-8").splitlines())
               for s in ("train", "dev", "test"))
    sick = len((SENTEVAL / "SICK" / "SICK_test_annotated.txt").read_text(encoding="utf-8").splitlines()) - 1
    assert len(sentences) == lines + 2 * stsb + 2 * sick
    sample = named_corpus("stssick", [], None, 10, 0, "run", SENTEVAL, "config: methods.slt_fai.corpus")
    assert len(sample) == 10 and set(sample) <= set(sentences)
    with pytest.raises(DefSentError, match="needs SentEval"):
        named_corpus("stssick", [], None, None, 0, "run", None, "config: methods.slt_fai.corpus")
    with pytest.raises(DefSentError, match="both set"):
        named_corpus("stssick", [], str(tmp_path / "x.txt"), None, 0, "run", SENTEVAL, "k")


def test_several_epochs_train_every_example_each_epoch(tiny_bert):
    from defsent_plus.training.trainer import train_epoch

    encoder = load_encoder(tiny_bert)
    objective = UnsupervisedContrastive(encoder, pooling="mean", mlp=False)
    summary = train_epoch(encoder, TEXTS, np.zeros(len(TEXTS), dtype=np.int64), objective,
                          TrainConfig(batch_size=2, epochs=3, lr=1e-4), progress=False)
    assert summary["steps"] == 6 and summary["examples"] == 3 * len(TEXTS) and summary["sentences_per_second"] > 0


