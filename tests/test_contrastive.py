"""Unsupervised contrastive objective: InfoNCE, SimCSE's two dropout views and MLP, ConSERT's augmentations."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from defsent_plus.encoders.encoding import mean_pool
from defsent_plus.encoders.models import family_of, load_encoder
from defsent_plus.errors import DefSentError
from defsent_plus.methods import method_of
from defsent_plus.methods.simcse.objective import (
    UnsupervisedContrastive,
    feature_cutoff_mask,
    info_nce,
    shuffled_positions,
    token_cutoff_mask,
)
from defsent_plus.names import AUGMENTATIONS
from defsent_plus.training.options import OPTIMISATION_OPTIONS
from defsent_plus.training.task import Batch, TaskInputs
from defsent_plus.training.trainer import TrainConfig, train_epoch

TEXTS = [
    "a long necked african animal with a small head",
    "the dog is a good animal",
    "a red bird",
    "someone who plays the game for the team and makes the ball move fast in the city",
]
AUGMENTED = tuple(a for a in AUGMENTATIONS if a != "dropout")


def make_batch(encoder, texts=TEXTS) -> Batch:
    """A Batch as the training loop builds it: the encoder's forward pass (in its current mode) on padded texts."""
    features = encoder.tokenizer(texts, padding=True, return_tensors="pt")
    hidden = encoder.model(**features).last_hidden_state
    return Batch(hidden.float(), features["attention_mask"], features["input_ids"],
                 torch.zeros(len(texts), dtype=torch.long), progress=0.0)


def embedding_outputs(encoder, run) -> list[torch.Tensor]:
    """What the transformer layers received (the embedding layer's output, after any edit) during ``run()``."""
    seen = []

    def record(_module, args, kwargs):
        seen.append((args[0] if args else kwargs["hidden_states"]).detach().clone())

    handle = encoder.model.encoder.register_forward_pre_hook(record, with_kwargs=True)
    try:
        run()
    finally:
        handle.remove()
    return seen


@pytest.fixture
def encoder(model_dir):
    return load_encoder(model_dir)


def test_info_nce_equals_hand_computation():
    z1 = [[1.0, 0.0, 2.0], [0.5, -1.0, 0.0], [0.0, 3.0, 1.0], [-1.0, 1.0, 1.0]]
    z2 = [[0.8, 0.2, 1.5], [0.0, -2.0, 0.5], [1.0, 1.0, 1.0], [-2.0, 0.5, 0.0]]
    t = 0.1

    def cos(a, b):
        return sum(x * y for x, y in zip(a, b, strict=True)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))

    expected = 0.0
    for i, row in enumerate(z1):
        sims = [cos(row, other) / t for other in z2]
        expected += -math.log(math.exp(sims[i]) / sum(math.exp(s) for s in sims))
    expected /= len(z1)
    loss = info_nce(torch.tensor(z1), torch.tensor(z2), t)
    assert loss.item() == pytest.approx(expected, rel=1e-6)
    # with the labels on the diagonal, swapping the pairs' partners changes the loss
    assert info_nce(torch.tensor(z1), torch.tensor(z2[::-1]), t).item() != pytest.approx(expected, rel=1e-3)


def test_info_nce_is_float32_under_autocast():
    generator = torch.Generator().manual_seed(0)
    z1 = torch.randn(16, 64, generator=generator).bfloat16()
    z2 = (z1.float() + 0.3 * torch.randn(16, 64, generator=generator)).bfloat16()
    exact = info_nce(z1.double(), z2.double(), 0.05)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = info_nce(z1, z2, 0.05)
    assert loss.dtype == torch.float32
    assert loss.item() == pytest.approx(exact.item(), abs=1e-5)  # bf16 similarities would be ~1e-2 off


def test_second_view_has_new_dropout_in_train_mode_only(encoder):
    objective = UnsupervisedContrastive(encoder)
    encoder.model.train()
    torch.manual_seed(0)
    batch = make_batch(encoder)
    assert not torch.allclose(objective.second_view(batch), batch.hidden, atol=1e-4)
    encoder.model.eval()
    batch = make_batch(encoder)
    assert torch.equal(objective.second_view(batch), batch.hidden)


def test_loss_without_dropout_is_info_nce_of_a_view_with_itself(encoder):
    objective = UnsupervisedContrastive(encoder, temperature=0.05)
    encoder.model.eval()
    batch = make_batch(encoder)
    z = objective.mlp(batch.hidden[:, 0])  # cls pooling + SimCSE's MLP
    loss, parts = objective(batch)
    assert loss.item() == pytest.approx(info_nce(z, z, 0.05).item(), rel=1e-6)
    assert parts == {"info_nce": loss.item()}
    encoder.model.train()
    torch.manual_seed(0)
    assert objective(make_batch(encoder))[0].item() != pytest.approx(loss.item(), rel=1e-3)


@pytest.mark.parametrize("augmentation", AUGMENTATIONS)
def test_training_mlp_is_a_seeded_new_tanh_layer_outside_the_encoder(encoder, augmentation):
    objective = UnsupervisedContrastive(encoder, seed=3, augmentation=augmentation)
    dense, activation = objective.mlp
    assert isinstance(activation, torch.nn.Tanh)
    assert dense.weight.shape == (encoder.hidden_size, encoder.hidden_size)
    assert torch.equal(dense.bias, torch.zeros(encoder.hidden_size))
    assert dense.weight.std().item() == pytest.approx(encoder.model.config.initializer_range, rel=0.2)
    assert torch.equal(dense.weight, UnsupervisedContrastive(encoder, seed=3).mlp[0].weight)
    assert not torch.equal(dense.weight, UnsupervisedContrastive(encoder, seed=4).mlp[0].weight)
    # the loop optimises the encoder itself: the objective owns only the MLP, and saves nothing
    assert {id(p) for p in objective.parameters()} == {id(dense.weight), id(dense.bias)}
    assert set(objective.state_dict()) == {"mlp.0.weight", "mlp.0.bias"}


def test_pooling_without_mlp_is_the_plain_pooled_vector(encoder):
    encoder.model.eval()
    batch = make_batch(encoder)
    cls = UnsupervisedContrastive(encoder, mlp=False)
    mean = UnsupervisedContrastive(encoder, pooling="mean", mlp=False)
    assert list(cls.parameters()) == []
    assert torch.equal(cls.sentence_vectors(batch.hidden, batch.attention_mask), batch.hidden[:, 0])
    assert torch.equal(mean.sentence_vectors(batch.hidden, batch.attention_mask),
                       mean_pool(batch.hidden, batch.attention_mask, None))


def test_simcse_applies_its_training_mlp_with_cls_pooling_only_unless_a_run_forces_it(encoder):
    """SimCSE's rule (simcse/models.py): the MLP runs for CLS, not for mean or max; ``mlp: true`` forces it and the
    training card records that as a deviation."""
    from defsent_plus.methods.simcse.objective import mlp_card

    encoder.model.eval()
    batch = make_batch(encoder)
    assert isinstance(UnsupervisedContrastive(encoder).mlp, torch.nn.Sequential)
    for pooling in ("mean", "max"):
        default = UnsupervisedContrastive(encoder, pooling=pooling)
        assert isinstance(default.mlp, torch.nn.Identity) and list(default.parameters()) == []
        forced = UnsupervisedContrastive(encoder, pooling=pooling, mlp=True)
        assert isinstance(forced.mlp, torch.nn.Sequential)
        assert mlp_card(True, pooling)["run_deviations"][0].startswith(f"the training MLP is applied with {pooling}")
        assert mlp_card(None, pooling) == {"training_mlp": False}
    mean = UnsupervisedContrastive(encoder, pooling="mean")
    assert torch.equal(mean.sentence_vectors(batch.hidden, batch.attention_mask),
                       mean_pool(batch.hidden, batch.attention_mask, None))
    assert mlp_card(None, "cls") == {"training_mlp": True} and mlp_card(False, "cls") == {"training_mlp": False}


ATTENTION = torch.tensor([[1] * 8 + [0] * 4, [1] * 5 + [0] * 7, [1] * 12])


def test_token_cutoff_zeroes_the_share_of_non_padding_positions_deterministically():
    masks = [token_cutoff_mask(ATTENTION, 0.25, torch.Generator().manual_seed(seed)) for seed in (0, 0, 1, 2)]
    for mask in masks:
        assert mask.sum(1).tolist() == [2, 1, 3]  # floor(0.25 * 8), floor(0.25 * 5), floor(0.25 * 12)
        assert not mask[ATTENTION == 0].any()
    assert torch.equal(masks[0], masks[1])
    assert not (torch.equal(masks[0], masks[2]) and torch.equal(masks[0], masks[3]))


def test_feature_cutoff_zeroes_the_share_of_dimensions_per_sentence():
    masks = [feature_cutoff_mask(ATTENTION, 32, 0.25, torch.Generator().manual_seed(seed)) for seed in (0, 0, 1)]
    for mask in masks:
        assert not mask[ATTENTION == 0].any()
        for row, length in enumerate(ATTENTION.sum(1).tolist()):
            dims = mask[row, 0]
            assert dims.sum().item() == 8  # 0.25 * 32
            assert torch.equal(mask[row, :length], dims.expand(length, -1))  # same dimensions at every token
    assert torch.equal(masks[0], masks[1])
    assert not torch.equal(masks[0], masks[2])
    assert not torch.equal(masks[0][0, 0], masks[0][1, 0])  # each sentence draws its own dimensions


def test_shuffle_permutes_the_position_ids_of_every_non_padding_token():
    """ConSERT (transformers/modeling_bert.py, _replace_position_ids): a permutation of range(num_tokens), [CLS] and
    [SEP] included, then the padding's positions in place; RoBERTa's start at pad_token_id + 1."""
    attention = torch.tensor([[1] * 8 + [0] * 4, [1] * 12])
    shuffled = [shuffled_positions(attention, 0, torch.Generator().manual_seed(seed)) for seed in (0, 0, 1)]
    for out in shuffled:
        assert sorted(out[0, :8].tolist()) == list(range(8)) and out[0, 8:].tolist() == list(range(8, 12))
        assert sorted(out[1].tolist()) == list(range(12))
        assert out[0, 0] != 0 or out[1, 0] != 0  # the [CLS] slot moves too (seeded: both rows keep it only by chance)
    assert torch.equal(shuffled[0], shuffled[1]) and not torch.equal(shuffled[0], shuffled[2])
    assert torch.equal(shuffled_positions(attention, 2, torch.Generator().manual_seed(0)), shuffled[0] + 2)
    assert family_of("roberta").first_position(type("C", (), {"pad_token_id": 1})()) == 2
    assert family_of("bert").first_position(None) == 0


@pytest.mark.parametrize("augmentation", ["token_cutoff", "feature_cutoff"])
def test_cutoff_edits_the_embedding_output_of_the_second_view_only(encoder, augmentation):
    encoder.model.eval()  # no dropout: only the augmentation changes the second view
    batch = make_batch(encoder)
    objective = UnsupervisedContrastive(encoder, augmentation=augmentation, cutoff_rate=0.25)
    (plain,) = embedding_outputs(encoder, lambda: encoder.model(input_ids=batch.input_ids,
                                                                attention_mask=batch.attention_mask))
    views = []
    (edited,) = embedding_outputs(encoder, lambda: views.append(objective.second_view(batch)))
    present = batch.attention_mask.bool()
    assert torch.equal(edited[~present], plain[~present])  # padding untouched
    zeroed = (edited == 0) & (plain != 0)
    assert torch.equal(edited[~zeroed], plain[~zeroed])  # everything else untouched
    lengths = present.sum(1)
    if augmentation == "token_cutoff":
        rows = zeroed.all(2)
        assert rows.sum(1).tolist() == [math.floor(n * 0.25) for n in lengths.tolist()]
        assert torch.equal(zeroed, rows.unsqueeze(2).expand_as(zeroed))
    else:
        assert zeroed[present].sum(1).tolist() == [encoder.hidden_size // 4] * int(lengths.sum())
    assert not torch.allclose(views[0][present], batch.hidden[present], atol=1e-4)
    assert not encoder.model.embeddings._forward_hooks  # the edit does not outlive the second view
    assert torch.equal(make_batch(encoder).hidden, batch.hidden)


def test_token_shuffle_feeds_shuffled_position_ids_to_the_second_view(encoder):
    encoder.model.eval()
    batch = make_batch(encoder)
    objective = UnsupervisedContrastive(encoder, augmentation="token_shuffle")
    fed = []
    handle = encoder.model.register_forward_pre_hook(lambda _m, _a, kwargs: fed.append(kwargs), with_kwargs=True)
    view = objective.second_view(batch)
    handle.remove()
    assert torch.equal(fed[0]["input_ids"], batch.input_ids)  # the tokens stay, their positions move
    first = family_of(encoder.model.config.model_type).first_position(encoder.model.config)
    positions, present = fed[0]["position_ids"] - first, batch.attention_mask.bool()
    for row in range(len(positions)):
        n = int(present[row].sum())
        assert sorted(positions[row, :n].tolist()) == list(range(n))
    assert not torch.equal(positions, torch.arange(positions.shape[1]).expand_as(positions))
    assert not torch.allclose(view, batch.hidden, atol=1e-4)


@pytest.mark.parametrize("augmentation", AUGMENTED)
def test_augmentations_are_deterministic_for_a_seed(encoder, augmentation):
    encoder.model.eval()
    batch = make_batch(encoder)
    views = [UnsupervisedContrastive(encoder, augmentation=augmentation, cutoff_rate=0.25, seed=s).second_view(batch)
             for s in (5, 5, 6)]
    assert torch.equal(views[0], views[1])
    assert not torch.equal(views[0], views[2])


@pytest.mark.parametrize("augmentation", AUGMENTATIONS)
def test_gradients_reach_the_encoder_through_both_views(model_dir, augmentation):
    encoder = load_encoder(model_dir)
    objective = UnsupervisedContrastive(encoder, augmentation=augmentation, cutoff_rate=0.25)
    encoder.model.train()
    batch = make_batch(encoder)
    batch.hidden.retain_grad()
    objective(batch)[0].backward()
    assert batch.hidden.grad.abs().sum() > 0  # first view
    assert objective.mlp[0].weight.grad.abs().sum() > 0
    encoder.model.zero_grad()
    batch.hidden = batch.hidden.detach()  # now only the second view connects the loss to the encoder
    objective(batch)[0].backward()
    grads = [p.grad for p in encoder.model.parameters() if p.grad is not None]
    assert grads and sum(g.abs().sum() for g in grads) > 0
    assert encoder.model.get_input_embeddings().weight.grad.abs().sum() > 0


@pytest.mark.filterwarnings("error:optimizer contains a parameter group with duplicate parameters")
def test_trains_in_the_training_loop(tiny_bert):
    encoder = load_encoder(tiny_bert)
    before = [p.detach().clone() for p in encoder.model.parameters()]
    objective = UnsupervisedContrastive(encoder, augmentation="token_cutoff")
    texts = TEXTS * 4
    summary = train_epoch(encoder, texts, np.zeros(len(texts), dtype=np.int64), objective,
                          TrainConfig(batch_size=8, lr=1e-3), progress=False)  # fails on duplicate parameters
    assert summary["steps"] == 2 and all(math.isfinite(x) for x in summary["loss_curve"])
    assert any(not torch.equal(a, b) for a, b in zip(before, encoder.model.parameters(), strict=True))


@pytest.mark.parametrize(("kwargs", "key", "shown"), [
    ({"cutoff_rate": 0.0}, "cutoff_rate", "0.0"),
    ({"cutoff_rate": 1.0}, "cutoff_rate", "1.0"),
    ({"cutoff_rate": float("nan")}, "cutoff_rate", "nan"),
    ({"temperature": 0.0}, "temperature", "0.0"),
    ({"temperature": -0.05}, "temperature", "-0.05"),
])
@pytest.mark.parametrize("method", ["simcse", "slt_fai"])
def test_bad_options_name_the_config_key_of_the_method_that_has_them(tiny_bert, method, kwargs, key, shown):
    declared = method_of(method)
    options = {name: value for name, value in declared.options_in_force({}).items() if name not in OPTIMISATION_OPTIONS}
    options.update(kwargs)
    inputs = TaskInputs(load_encoder(tiny_bert), None, TEXTS, np.zeros(len(TEXTS), dtype=np.int64), "cls", 0, "toy",
                        options, 4, None, declared.config_key())
    with pytest.raises(DefSentError) as err:
        declared.build_task(inputs)
    assert err.value.where == f"config: methods.{method}.{key}"
    assert shown in err.value.message
