"""SLT-FAI (004): frequency-induced adversarial tuning and incomplete sentence filtering around a USRL objective.

The objective adds two discriminators to any unsupervised sentence objective ``R_USRL`` (004, Eq. 2):

* **adversarial tuning** (L_AT, 004 §3.2, Eq. 4): a token-level discriminator predicts each token's frequency
  label from its last hidden state; a gradient reversal layer between encoder and discriminator makes the encoder
  maximise what the discriminator minimises, so the hidden space becomes frequency-invariant;
* **incomplete sentence filtering** (L_ISF, §3.3, Eq. 6-7): a sentence-level discriminator (no reversal) tells a
  pooled sentence from the pooled version with some of its low-frequency tokens masked.

Readings of paper and public code (github.com/wangbing1416/SLT-FAI) that this module commits to:

* frequency labels (§3.5) count the tokenizer's tokens of a corpus (the paper: BookCorpus; here whatever corpus the
  caller passes) without special tokens (:func:`frequency_labels`). The code's threshold ``count < count_at_rank``
  leaves ties on the high side; here ties are broken by token id so the low share is exactly ``floor(rate * seen)``.
* incomplete sentences (§3.3) mask low-frequency tokens at the paper's sampling ratio ε
  (:func:`incomplete_input_ids`). The public code instead masks each *high*-frequency token with probability 0.5
  (its ``--mask_rate`` is unused); we follow the paper. Sentences with no low-frequency token have no incomplete
  version and are left out of L_ISF (their "pair" would be identical).
* the sentence discriminator sees the pooled original from the loop's forward pass (the code: its first augmented
  view's sentence embedding) and the pooled incomplete sentence from a second forward pass in train mode; L_ISF is
  the sum of the two cross-entropies (Eq. 6).
* the gradient reversal coefficient is a constant 1 (the code's GRL is never given a schedule); α = β = 1.
* L_AT (Eq. 4) averages over each sentence's non-padding, non-special tokens, then over sentences (the code averages
  over all positions, padding included); ``at_views`` picks both views, as the released code, or the first only.
* discriminators (``discriminators``): the released code's or the paper's (:data:`DISCRIMINATORS`), both at the
  model's width (the code hard-codes 768).
* warm-up: the discriminators join the loss as the released code's ``fit`` sets its flag
  (:func:`discriminators_on`); until then the loss is R_USRL alone and neither discriminator is run (their
  sub-losses are logged as 0.0), where the code computes them and drops them from the loss.
* R_USRL is weighted by ``usrl_weight`` (ConSERT's ``--cl_rate``: 0.15 in the ConSERT variant's scripts).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from defsent_plus.encoders.encoding import autocast_for, get_pooling
from defsent_plus.encoders.models import Encoder
from defsent_plus.errors import DefSentError
from defsent_plus.methods.simcse.objective import contrastive_corpus, contrastive_objective, corpus_card, random_pick
from defsent_plus.training.corpus import read_corpus_file
from defsent_plus.training.task import TaskInputs, TrainingTask, unused_targets

RATE_KEY = "config: methods.slt_fai.frequency_rate"
TOKENIZE_CHUNK = 4096


def frequency_labels(tokenizer, sentences: Sequence[str], rate: float = 0.5,
                     where: str = "frequency corpus") -> torch.Tensor:
    """Bool ``[len(tokenizer)]``: True for the ``floor(rate * seen)`` least frequent token types of ``sentences``
    (004 §3.5, λ = ``rate``; ties as the module says) and for types that never occur (the public code's choice)."""
    if not 0.0 < rate < 1.0:
        raise DefSentError(RATE_KEY, f"frequency rate must lie in (0, 1), got {rate}")
    counts, texts = np.zeros(len(tokenizer), dtype=np.int64), list(sentences)
    for start in range(0, len(texts), TOKENIZE_CHUNK):  # token counts without special tokens
        ids = tokenizer(texts[start : start + TOKENIZE_CHUNK], add_special_tokens=False)["input_ids"]
        flat = np.fromiter((i for sentence in ids for i in sentence), dtype=np.int64)
        counts += np.bincount(flat, minlength=len(tokenizer))[: len(tokenizer)]
    seen = np.flatnonzero(counts)
    if len(seen) == 0:
        raise DefSentError(where, "empty corpus: no tokens to count frequencies from")
    n_low = int(rate * len(seen))
    if n_low == 0:
        raise DefSentError(RATE_KEY, f"no low-frequency token: {len(seen)} token type(s) in the corpus, rate {rate} "
                                     "labels none of them low-frequency")
    order = seen[np.lexsort((seen, counts[seen]))]  # ascending count, then token id
    labels = counts == 0
    labels[order[:n_low]] = True
    return torch.from_numpy(labels)


def reverse_gradient(x: torch.Tensor, coefficient: float = 1.0) -> torch.Tensor:
    """``x`` unchanged, with its gradient multiplied by ``-coefficient`` on the way back (the gradient reversal
    layer of Ganin & Lempitsky)."""
    y = x.view_as(x)
    if y.requires_grad:
        y.register_hook(lambda grad: -coefficient * grad)
    return y


DISCRIMINATORS = {  # hidden widths (multiples of the model's) and where the ReLU goes, per reading
    # 004 §4.1: "two linear layers and a ReLU activation function"
    "paper": {"token": (1,), "sentence": (1,), "relu": "between"},
    # the released code (losses/AdvCLSoftmaxLoss.py): freqDiscrim with its default --high_rank 2 is
    # h -> 2h -> 2h -> h -> 2, maskDiscrim h -> h -> 2, no activation between the layers, a ReLU after the last
    "released": {"token": (2, 2, 1), "sentence": (1,), "relu": "after"},
}


class Discriminator(nn.Module):
    """Linear layers ``width → hidden[0]·width → … → classes`` with a ReLU between them (``relu="between"``) or
    only after the last (``"after"``, the released code's), initialised from ``generator``."""

    def __init__(self, width: int, generator: torch.Generator, classes: int = 2, hidden: Sequence[int] = (1,),
                 relu: str = "between"):
        super().__init__()
        sizes = [width, *(h * width for h in hidden), classes]
        linears = [nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:], strict=True)]
        if relu == "between":
            layers = [m for linear in linears[:-1] for m in (linear, nn.ReLU())] + [linears[-1]]
        else:
            layers = [*linears, nn.ReLU()]
        self.net = nn.Sequential(*layers)
        with torch.no_grad():
            for layer in linears:
                bound = 1.0 / math.sqrt(layer.in_features)  # nn.Linear's default range, drawn from the generator
                for param in (layer.weight, layer.bias):
                    param.copy_((torch.rand(param.shape, generator=generator) * 2 - 1) * bound)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def incomplete_input_ids(input_ids: torch.Tensor, attention_mask: torch.Tensor, low_frequency: torch.Tensor,
                         ratio: float, mask_token_id: int, generator: torch.Generator,
                         special: torch.Tensor | None = None) -> torch.Tensor:
    """Each sentence with ``max(1, round(ratio · n))`` of its ``n`` eligible tokens (non-padding, low-frequency, not
    ``special``: bool per token id) replaced by the mask token, drawn from ``generator`` (on the CPU, so the choice
    does not depend on the device)."""
    eligible = low_frequency.to(input_ids.device)[input_ids] & attention_mask.bool()
    if special is not None:
        eligible &= ~special.to(input_ids.device)[input_ids]
    n = eligible.sum(1)
    k = torch.minimum(torch.floor(ratio * n + 0.5).long().clamp(min=1), n)  # n = 0 gives k = 0
    return input_ids.masked_fill(eligible & random_pick(eligible, k, generator), mask_token_id)


def special_token_mask(tokenizer, size: int) -> torch.Tensor:
    """Bool ``[size]``: True at the tokenizer's special token ids."""
    special = torch.zeros(size, dtype=torch.bool)
    special[[i for i in tokenizer.all_special_ids if i < size]] = True
    return special


def discriminators_on(epoch: int, progress: float, warmup: float) -> bool:
    """Whether the discriminators train at a batch of ``epoch`` (0-based) after ``progress`` of it: the released
    code's flag, ``epoch >= int(warmup) and batch_idx >= steps_per_epoch * (warmup - int(warmup))``."""
    whole = math.floor(warmup)
    return epoch >= whole and progress >= warmup - whole


def _check_options(alpha: float, beta: float, epsilon: float, warmup: float) -> None:
    """Fail with the config key to fix for an out-of-range number (the config schema allows only known readings,
    views and training poolings)."""
    for name, value in (("alpha", alpha), ("beta", beta)):
        if value < 0:
            raise DefSentError(f"config: methods.slt_fai.{name}", f"must be >= 0, got {value}")
    if not 0.0 < epsilon <= 1.0:
        raise DefSentError("config: methods.slt_fai.epsilon", f"masking ratio must lie in (0, 1], got {epsilon}")
    if not warmup >= 0.0:
        raise DefSentError("config: methods.slt_fai.warmup", f"warm-up must be a number of epochs >= 0, got {warmup}")


class SltFai(nn.Module):
    """``R_USRL + α·L_AT + β·L_ISF`` after a warm-up of ``warmup`` epochs trained with ``R_USRL`` alone (004, Eq. 2)."""

    def __init__(self, encoder: Encoder, usrl: nn.Module, low_frequency: torch.Tensor, pooling: str = "cls",
                 alpha: float = 1.0, beta: float = 1.0, epsilon: float = 0.2, warmup: float = 0.1, seed: int = 0,
                 reading: str = "released", at_views: str = "both", usrl_weight: float = 1.0):
        super().__init__()
        _check_options(alpha, beta, epsilon, warmup)
        self.at_views = at_views
        tokenizer = encoder.tokenizer
        if tokenizer.mask_token_id is None:
            raise DefSentError("config: methods.slt_fai", "the tokenizer has no mask token for incomplete sentences")
        if low_frequency.dim() != 1 or len(low_frequency) < len(tokenizer):
            raise DefSentError("config: methods.slt_fai", f"frequency labels cover {len(low_frequency)} token ids, "
                                                          f"the tokenizer has {len(tokenizer)}")
        self.encoder_model = [encoder.model]  # a list: the encoder's parameters are not this module's
        self.usrl = usrl
        self.first_view = getattr(usrl, "first_view", None)  # the loop's forward pass is R_USRL's first view
        self.pooling = get_pooling(pooling)
        self.alpha, self.beta, self.epsilon, self.warmup = alpha, beta, epsilon, warmup
        self.usrl_weight = usrl_weight
        self.mask_token_id = tokenizer.mask_token_id
        self.register_buffer("low_frequency", low_frequency.bool().clone(), persistent=False)
        self.register_buffer("special", special_token_mask(tokenizer, len(low_frequency)), persistent=False)
        init = torch.Generator().manual_seed(seed)
        spec, width = DISCRIMINATORS[reading], encoder.hidden_size  # the token discriminator's weights drawn first
        self.token_discriminator = Discriminator(width, init, hidden=spec["token"], relu=spec["relu"])
        self.sentence_discriminator = Discriminator(width, init, hidden=spec["sentence"], relu=spec["relu"])
        self.mask_generator = torch.Generator().manual_seed(seed)

    def adversarial_loss(self, batch) -> torch.Tensor:
        """L_AT (Eq. 4, averaged as the module says): the token discriminator's frequency-label cross-entropy behind a
        gradient reversal layer; with ``at_views: both`` its mean over the two views (the released code's
        ``(CE(view 1) + CE(view 2)) / 2``), where the contrastive objective exposes ``second_hidden``."""
        views = [batch.hidden]
        second = getattr(self.usrl, "second_hidden", None)
        if self.at_views == "both" and second is not None:
            views.append(second)
        return torch.stack([self._token_loss(hidden, batch) for hidden in views]).mean()

    def _token_loss(self, hidden: torch.Tensor, batch) -> torch.Tensor:
        valid = batch.attention_mask.bool() & ~self.special[batch.input_ids]
        logits = self.token_discriminator(reverse_gradient(hidden.float()))
        labels = self.low_frequency[batch.input_ids].long()
        ce = F.cross_entropy(logits.transpose(1, 2), labels, reduction="none") * valid
        tokens = valid.sum(1)
        has_tokens = tokens > 0
        if not has_tokens.any():
            return logits.sum() * 0.0
        return (ce.sum(1)[has_tokens] / tokens[has_tokens]).mean()

    def incomplete_loss(self, batch) -> torch.Tensor:
        """L_ISF (Eq. 6): the sentence discriminator's cross-entropy on pooled originals (label 0) plus that on
        their incomplete versions (label 1), over the sentences that have a low-frequency token to mask."""
        masked_ids = incomplete_input_ids(batch.input_ids, batch.attention_mask, self.low_frequency, self.epsilon,
                                          self.mask_token_id, self.mask_generator, self.special)
        rows = (masked_ids != batch.input_ids).any(1)
        if not rows.any():
            return batch.hidden.sum() * 0.0
        original = self.pooling.pool(batch.hidden[rows].float(), batch.attention_mask[rows], None)
        mask = batch.attention_mask[rows]
        with autocast_for(masked_ids.device):
            hidden = self.encoder_model[0](input_ids=masked_ids[rows], attention_mask=mask).last_hidden_state
        incomplete = self.pooling.pool(hidden.float(), mask, None)
        zeros = torch.zeros(len(original), dtype=torch.long, device=original.device)
        return (F.cross_entropy(self.sentence_discriminator(original), zeros)
                + F.cross_entropy(self.sentence_discriminator(incomplete), zeros + 1))

    def forward(self, batch) -> tuple[torch.Tensor, dict[str, torch.Tensor | float]]:
        usrl_loss, usrl_parts = self.usrl(batch)
        usrl_loss = self.usrl_weight * usrl_loss
        parts = {**usrl_parts, "usrl": usrl_loss.detach(), "adversarial": 0.0, "incomplete": 0.0}
        if not discriminators_on(getattr(batch, "epoch", 0), getattr(batch, "progress", 1.0), self.warmup):
            return usrl_loss, parts
        adversarial = self.adversarial_loss(batch)
        incomplete = self.incomplete_loss(batch)
        parts.update(adversarial=adversarial.detach(), incomplete=incomplete.detach())
        return usrl_loss + self.alpha * adversarial + self.beta * incomplete, parts


def build_task(inputs: TaskInputs) -> TrainingTask:
    """SLT-FAI's task: its discriminators around the contrastive objective (SimCSE, or a ConSERT view); frequency
    labels from the training corpus or ``frequency_corpus``, tokenised with the model's tokenizer."""
    options, encoder = inputs.options, inputs.encoder
    corpus = contrastive_corpus(inputs)
    counted = read_corpus_file(options["frequency_corpus"]) if options["frequency_corpus"] else corpus
    low_frequency = frequency_labels(encoder.tokenizer, counted, options["frequency_rate"])
    chosen = {k: options[k] for k in ("alpha", "beta", "epsilon", "warmup", "at_views", "usrl_weight")}
    objective = SltFai(encoder, contrastive_objective(inputs), low_frequency, pooling=inputs.pooling, seed=inputs.seed,
                       reading=options["discriminators"], **chosen)
    card = {**corpus_card(corpus, options, inputs.pooling),
            "frequency_corpus": options["frequency_corpus"] or "training corpus",
            "low_frequency_types": int(low_frequency.sum())}
    return TrainingTask(objective, corpus, unused_targets(corpus), card=card)
