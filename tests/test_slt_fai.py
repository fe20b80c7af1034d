"""SLT-FAI (004): frequency labels, gradient reversal, incomplete sentences, warm-up and the combined loss."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from defsent_plus.encoders.models import load_encoder
from defsent_plus.errors import DefSentError
from defsent_plus.methods import method_of
from defsent_plus.methods.slt_fai.objective import (
    RATE_KEY,
    Discriminator,
    SltFai,
    frequency_labels,
    incomplete_input_ids,
    reverse_gradient,
    special_token_mask,
)

CORPUS = ["the the the the", "dog dog dog", "cat cat", "bird"]  # counts: the 4, dog 3, cat 2, bird 1
SENTENCES = ["the giraffe is a long necked african animal", "a lion is a large animal", "the dog"]


class HiddenSquare(nn.Module):
    """Stand-in R_USRL: a fixed differentiable loss of the hidden states."""

    def forward(self, batch) -> tuple[torch.Tensor, dict[str, float]]:
        loss = batch.hidden.pow(2).mean()
        return loss, {"square": loss.item()}


@pytest.fixture(scope="module")
def encoder(tiny_bert):
    return load_encoder(tiny_bert)


def ids_of(tokenizer, words: str) -> list[int]:
    return tokenizer.convert_tokens_to_ids(words.split())


def make_batch(encoder, sentences=SENTENCES, progress: float | None = None) -> SimpleNamespace:
    features = encoder.tokenizer(sentences, padding=True, return_tensors="pt")
    encoder.model.train()
    hidden = encoder.model(**features).last_hidden_state
    batch = SimpleNamespace(hidden=hidden.float(), attention_mask=features["attention_mask"],
                            input_ids=features["input_ids"], entry_ids=torch.zeros(len(sentences), dtype=torch.long),
                            mask_for_model=features["attention_mask"])
    if progress is not None:
        batch.progress = progress
    return batch


def slt_fai(encoder, **options) -> SltFai:
    labels = frequency_labels(encoder.tokenizer, SENTENCES + CORPUS, rate=0.5)
    return SltFai(encoder, HiddenSquare(), labels, **options)


# --- frequency labels -------------------------------------------------------------------------------------------


def test_frequency_labels_split_the_counted_vocabulary_at_rate(encoder):
    tok = encoder.tokenizer
    labels = frequency_labels(tok, CORPUS, rate=0.5)
    the, dog, cat, bird, lion = ids_of(tok, "the dog cat bird lion")
    assert labels.dtype == torch.bool and labels.shape == (len(tok),)
    assert labels[[cat, bird]].all() and not labels[[the, dog]].any()  # least frequent half of the 4 seen types
    assert labels[lion]  # never seen: low-frequency, as in the public code
    assert frequency_labels(tok, CORPUS, rate=0.75)[dog]  # floor(0.75 * 4) = 3 low types
    assert not frequency_labels(tok, CORPUS, rate=0.25)[cat]  # floor(0.25 * 4) = 1 low type: bird


def test_frequency_label_ties_are_broken_by_token_id(encoder):
    tok = encoder.tokenizer
    cat, dog = sorted(ids_of(tok, "cat dog"))
    labels = frequency_labels(tok, ["cat dog", "dog cat"], rate=0.5)
    assert labels[cat] and not labels[dog]


def test_frequency_labels_do_not_count_special_tokens(encoder):
    labels = frequency_labels(encoder.tokenizer, CORPUS, rate=0.5)
    assert labels[encoder.tokenizer.cls_token_id] and labels[encoder.tokenizer.sep_token_id]  # count 0


@pytest.mark.parametrize("corpus", [[], ["", "   "]])
def test_empty_corpus_is_an_error(encoder, corpus):
    with pytest.raises(DefSentError, match="empty corpus") as err:
        frequency_labels(encoder.tokenizer, corpus, where="data/corpus.txt")
    assert err.value.where == "data/corpus.txt"


def test_corpus_without_low_frequency_token_is_an_error(encoder):
    with pytest.raises(DefSentError, match="no low-frequency token") as err:
        frequency_labels(encoder.tokenizer, ["dog dog dog"], rate=0.5)
    assert err.value.where == RATE_KEY


@pytest.mark.parametrize("rate", [0.0, 1.0, -0.2, 1.5])
def test_rate_outside_the_open_unit_interval_is_an_error(encoder, rate):
    with pytest.raises(DefSentError) as err:
        frequency_labels(encoder.tokenizer, CORPUS, rate=rate)
    assert err.value.where == RATE_KEY


# --- gradient reversal -------------------------------------------------------------------------------------------


def discriminator_grads(x: torch.Tensor, reverse: bool, coefficient: float = 1.0):
    disc = Discriminator(8, torch.Generator().manual_seed(0))
    x = x.clone().requires_grad_(True)
    inputs = reverse_gradient(x, coefficient) if reverse else x
    loss = F.cross_entropy(disc(inputs), torch.tensor([0, 1, 1, 0]))
    loss.backward()
    return x.grad, [p.grad.clone() for p in disc.parameters()], loss.item()


def test_gradient_reversal_flips_the_input_gradient_only():
    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(1))
    plain, plain_params, plain_loss = discriminator_grads(x, reverse=False)
    reversed_, reversed_params, reversed_loss = discriminator_grads(x, reverse=True)
    assert plain.abs().sum() > 0
    torch.testing.assert_close(reversed_, -plain)
    assert reversed_loss == plain_loss  # identity forward
    for a, b in zip(plain_params, reversed_params, strict=True):
        torch.testing.assert_close(a, b)  # the discriminator still minimises its loss
    scaled, _, _ = discriminator_grads(x, reverse=True, coefficient=0.5)
    torch.testing.assert_close(scaled, -0.5 * plain)


def test_discriminator_is_seeded_and_sized_by_width():
    a, b = (Discriminator(32, torch.Generator().manual_seed(3)) for _ in range(2))
    c = Discriminator(32, torch.Generator().manual_seed(4))
    assert a.net[0].in_features == 32 and a.net[0].out_features == 32 and a.net[2].out_features == 2
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))
    assert not torch.equal(a.net[0].weight, c.net[0].weight)


def test_slt_fai_reverses_the_adversarial_gradient_reaching_the_encoder(encoder):
    objective = slt_fai(encoder)
    batch = make_batch(encoder)
    batch.hidden = batch.hidden.detach().requires_grad_(True)
    objective.adversarial_loss(batch).backward()
    through_grl = batch.hidden.grad.clone()
    batch.hidden.grad = None
    valid = batch.attention_mask.bool() & ~objective.special[batch.input_ids]
    labels = objective.low_frequency[batch.input_ids].long()
    ce = F.cross_entropy(objective.token_discriminator(batch.hidden).transpose(1, 2), labels, reduction="none")
    ((ce * valid).sum(1) / valid.sum(1)).mean().backward()  # Eq. 4 without the reversal layer
    assert through_grl.abs().sum() > 0
    torch.testing.assert_close(through_grl, -batch.hidden.grad)
    assert through_grl[~valid].abs().sum() == 0  # padding and special tokens are not discriminated


# --- incomplete sentences ----------------------------------------------------------------------------------------


def masking_batch(encoder):
    tok = encoder.tokenizer
    sentences = [" ".join(["giraffe"] * 10 + ["the"] * 3), "lion lion the", "the the", "giraffe"]
    features = tok(sentences, padding=True, return_tensors="pt")
    low = torch.zeros(len(tok), dtype=torch.bool)
    low[ids_of(tok, "giraffe lion")] = True
    low[tok.all_special_ids] = True  # unseen tokens are low-frequency: specials and padding must still stay
    return features["input_ids"], features["attention_mask"], low, special_token_mask(tok, len(tok))


@pytest.mark.parametrize(("ratio", "expected"), [
    (0.2, [2, 1, 0, 1]), (0.25, [3, 1, 0, 1]), (0.5, [5, 1, 0, 1]), (1.0, [10, 2, 0, 1]),
])
def test_incomplete_sentences_mask_low_frequency_tokens_at_the_ratio(encoder, ratio, expected):
    ids, mask, low, special = masking_batch(encoder)
    mask_id = encoder.tokenizer.mask_token_id
    out = incomplete_input_ids(ids, mask, low, ratio, mask_id, torch.Generator().manual_seed(0), special)
    changed = out != ids
    assert changed.sum(1).tolist() == expected  # max(1, round(ratio * n)) of each sentence's n low tokens
    assert (out[changed] == mask_id).all()
    assert low[ids[changed]].all() and not special[ids[changed]].any()
    assert (out[mask == 0] == ids[mask == 0]).all()


def test_incomplete_sentences_are_deterministic_for_a_seed(encoder):
    ids, mask, low, special = masking_batch(encoder)
    mask_id = encoder.tokenizer.mask_token_id

    def draw(seed: int) -> torch.Tensor:
        return incomplete_input_ids(ids, mask, low, 0.2, mask_id, torch.Generator().manual_seed(seed), special)

    assert torch.equal(draw(7), draw(7))
    assert len({tuple(draw(seed)[0].tolist()) for seed in range(8)}) > 1  # the positions are random


def test_incomplete_sentences_without_special_mask_still_skip_padding(encoder):
    ids, mask, low, _ = masking_batch(encoder)
    out = incomplete_input_ids(ids, mask, low, 1.0, encoder.tokenizer.mask_token_id, torch.Generator(), None)
    assert (out[mask == 0] == ids[mask == 0]).all()


# --- the objective ---------------------------------------------------------------------------------------------


def discriminator_grads_of(objective: SltFai) -> list[torch.Tensor | None]:
    modules = (objective.token_discriminator, objective.sentence_discriminator)
    return [p.grad for module in modules for p in module.parameters()]


def test_warm_up_trains_usrl_alone(encoder):
    objective = slt_fai(encoder, warmup=0.1)
    batch = make_batch(encoder, progress=0.05)
    usrl, _ = HiddenSquare()(batch)
    loss, parts = objective(batch)
    assert loss.item() == usrl.item()
    assert parts["usrl"] == usrl.item() and parts["adversarial"] == 0.0 and parts["incomplete"] == 0.0
    assert parts["square"] == usrl.item()  # R_USRL's own parts pass through
    loss.backward()
    assert all(grad is None for grad in discriminator_grads_of(objective))


def test_after_warm_up_the_loss_adds_both_discriminators(encoder):
    encoder.model.zero_grad(set_to_none=True)
    objective = slt_fai(encoder, alpha=2.0, beta=3.0, warmup=0.1)
    assert objective.token_discriminator.net[0].in_features == encoder.hidden_size == 32  # no hard-coded 768
    batch = make_batch(encoder, progress=0.5)
    loss, parts = objective(batch)
    assert parts["adversarial"] > 0 and parts["incomplete"] > 0
    expected = float(parts["usrl"] + 2.0 * parts["adversarial"] + 3.0 * parts["incomplete"])
    assert loss.item() == pytest.approx(expected, rel=1e-5)
    loss.backward()
    grads = discriminator_grads_of(objective)
    assert all(grad is not None and grad.abs().sum() > 0 for grad in grads)
    embeddings = encoder.model.embeddings.word_embeddings.weight.grad
    assert embeddings[encoder.tokenizer.mask_token_id].abs().sum() > 0  # the incomplete pass reached the encoder


def test_batch_without_progress_is_past_the_warm_up(encoder):
    loss, parts = slt_fai(encoder, warmup=0.1)(make_batch(encoder))
    assert parts["adversarial"] > 0 and loss.item() > parts["usrl"]


def test_sentences_without_low_frequency_tokens_skip_incomplete_filtering(encoder):
    labels = torch.zeros(len(encoder.tokenizer), dtype=torch.bool)
    objective = SltFai(encoder, HiddenSquare(), labels)
    batch = make_batch(encoder)
    assert objective.incomplete_loss(batch).item() == 0.0


@pytest.mark.parametrize(("option", "value", "key"), [
    ("epsilon", 0.0, "epsilon"), ("epsilon", 1.5, "epsilon"), ("warmup", -0.1, "warmup"), ("alpha", -1.0, "alpha"),
    ("warmup", float("nan"), "warmup"),
])
def test_bad_options_name_their_config_key(encoder, option, value, key):
    with pytest.raises(DefSentError) as err:
        slt_fai(encoder, **{option: value})
    assert err.value.where == f"config: methods.slt_fai.{key}"


# --- the released code's discriminators and L_AT over both views -------------------------------------------------


def test_discriminators_are_the_released_codes_by_default_and_the_papers_by_option(encoder):
    """Released (losses/AdvCLSoftmaxLoss.py, --high_rank 2): token h -> 2h -> 2h -> h -> 2, sentence h -> h -> 2,
    no activation between the layers and a ReLU after the last; paper: Linear -> ReLU -> Linear."""
    released = slt_fai(encoder)
    h = encoder.hidden_size
    shapes = [(m.in_features, m.out_features) for m in released.token_discriminator.net if isinstance(m, nn.Linear)]
    assert shapes == [(h, 2 * h), (2 * h, 2 * h), (2 * h, h), (h, 2)]
    assert [type(m) for m in released.sentence_discriminator.net] == [nn.Linear, nn.Linear, nn.ReLU]
    assert isinstance(released.token_discriminator.net[-1], nn.ReLU)
    assert (released.token_discriminator(torch.randn(5, h)) >= 0).all()  # the ReLU after the logits
    paper = slt_fai(encoder, reading="paper")
    assert [type(m) for m in paper.token_discriminator.net] == [nn.Linear, nn.ReLU, nn.Linear]
    assert method_of("slt_fai").options["discriminators"]["default"] == "released"
    assert method_of("slt_fai").options["at_views"]["default"] == "both"


class TwoViews(HiddenSquare):
    """Stand-in R_USRL that exposes a second view's token states, as the contrastive objective does."""

    def forward(self, batch):
        self.second_hidden = batch.hidden.flip(0)  # another view: the batch's states in reverse row order
        return super().forward(batch)


def test_adversarial_loss_averages_both_views_as_the_released_code(encoder):
    labels = frequency_labels(encoder.tokenizer, SENTENCES + CORPUS, rate=0.5)
    batch = make_batch(encoder)
    both = SltFai(encoder, TwoViews(), labels)
    one = SltFai(encoder, TwoViews(), labels, at_views="one")
    both.usrl(batch)
    one.usrl(batch)
    first = both._token_loss(batch.hidden, batch)
    second = both._token_loss(both.usrl.second_hidden, batch)
    assert both.adversarial_loss(batch).item() == pytest.approx((first.item() + second.item()) / 2, rel=1e-6)
    assert first.item() != pytest.approx(second.item())  # the views differ, so averaging them matters
    assert one.adversarial_loss(batch).item() == pytest.approx(one._token_loss(batch.hidden, batch).item())


def test_the_contrastive_objective_exposes_its_second_view_to_l_at(encoder):
    from defsent_plus.methods.simcse.objective import UnsupervisedContrastive

    labels = frequency_labels(encoder.tokenizer, SENTENCES + CORPUS, rate=0.5)
    objective = SltFai(encoder, UnsupervisedContrastive(encoder, augmentation="token_shuffle"), labels)
    batch = make_batch(encoder, progress=0.5)
    objective(batch)
    second = objective.usrl.second_hidden
    assert second is not None and second.shape == batch.hidden.shape and not torch.equal(second, batch.hidden)
