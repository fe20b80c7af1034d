"""Unsupervised contrastive objectives: SimCSE (Gao et al. 2021) and ConSERT's augmentations (Yan et al. 2021).

Each sentence is encoded twice; the two views are pooled, passed through a training-only MLP and contrasted with
InfoNCE against the other sentences of the batch (in-batch negatives). The first view is the training loop's own
forward pass; the second is a fresh forward pass here, so dropout draws a different mask (SimCSE). ConSERT's
augmentations change the second view further: token or feature cutoff zero rows or columns of the embedding layer's
output (word + position + type embeddings after LayerNorm and dropout), token shuffle permutes the word order of
the non-special tokens while positions stay.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext

import torch
import torch.nn.functional as F
from torch import nn

from defsent_plus.encoders.encoding import get_pooling
from defsent_plus.encoders.models import Encoder
from defsent_plus.encoders.runtime import autocast_for
from defsent_plus.errors import DefSentError
from defsent_plus.names import TRAINING_POOLINGS
from defsent_plus.training.corpus import training_corpus
from defsent_plus.training.task import Batch, TaskInputs, TrainingTask, unused_targets

AUGMENTATIONS = ("dropout", "token_cutoff", "feature_cutoff", "token_shuffle")
CUTOFFS = ("token_cutoff", "feature_cutoff")
COSINE_EPS = 1e-8  # torch.nn.CosineSimilarity's default, as SimCSE's Similarity uses it
_SHARE_EPS = 1e-9  # share * count rounding guard: 0.29 * 100 is 28.999999999999996 in floating point


def cosine_matrix(z1: torch.Tensor, z2: torch.Tensor) -> torch.Tensor:
    """Pairwise cosine similarities ``[len(z1), len(z2)]`` in float32."""
    z1, z2 = z1.float(), z2.float()
    norms = z1.norm(dim=-1, keepdim=True) * z2.norm(dim=-1, keepdim=True).T
    return (z1 @ z2.T) / norms.clamp_min(COSINE_EPS)


def info_nce(z1: torch.Tensor, z2: torch.Tensor, temperature: float) -> torch.Tensor:
    """InfoNCE with in-batch negatives: cross-entropy of cos(z1_i, z2_j) / temperature against j = i."""
    with torch.autocast(device_type=z1.device.type, enabled=False):
        logits = cosine_matrix(z1, z2) / temperature
        labels = torch.arange(len(z1), device=z1.device)
        return F.cross_entropy(logits, labels)


def share_count(totals: torch.Tensor, rate: float) -> torch.Tensor:
    """How many of each row's ``totals`` items a cutoff ``rate`` removes (rounded down, as ConSERT does)."""
    return torch.floor(totals.double() * rate + _SHARE_EPS).long()


def random_pick(eligible: torch.Tensor, counts: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Boolean mask choosing ``counts[i]`` uniformly random eligible items of each row ``i``."""
    scores = torch.rand(eligible.shape, generator=generator).to(eligible.device)
    scores = scores.masked_fill(~eligible, 2.0)  # ineligible items rank after every eligible one
    ranks = scores.argsort(dim=1).argsort(dim=1)
    return ranks < counts.unsqueeze(1)


def token_cutoff_mask(attention_mask: torch.Tensor, rate: float, generator: torch.Generator) -> torch.Tensor:
    """``[batch, tokens]``: True at the ``rate`` share of each sentence's non-padding positions to zero."""
    present = attention_mask.bool()
    return random_pick(present, share_count(present.sum(1), rate), generator)


def feature_cutoff_mask(attention_mask: torch.Tensor, hidden_size: int, rate: float,
                        generator: torch.Generator) -> torch.Tensor:
    """``[batch, tokens, hidden]``: True at the ``rate`` share of each sentence's dimensions, on its non-padding
    positions (one choice of dimensions per sentence)."""
    rows = len(attention_mask)
    every_dim = torch.ones(rows, hidden_size, dtype=torch.bool, device=attention_mask.device)
    counts = torch.full((rows,), math.floor(hidden_size * rate + _SHARE_EPS), device=attention_mask.device)
    dims = random_pick(every_dim, counts, generator)
    return dims.unsqueeze(1) & attention_mask.bool().unsqueeze(2)


def shuffle_tokens(input_ids: torch.Tensor, movable: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """``input_ids`` with each row's ``movable`` tokens in a random order; every other token stays in place."""
    scores = torch.rand(movable.shape, generator=generator).to(movable.device).masked_fill(~movable, 2.0)
    # Both orders list the movable positions first (k of them) and then the fixed ones in ascending order, so
    # scattering the randomly ordered sources into the ascending slots permutes the movable tokens only.
    sources = scores.argsort(dim=1, stable=True)
    slots = (~movable).to(torch.uint8).argsort(dim=1, stable=True)
    return input_ids.scatter(1, slots, input_ids.gather(1, sources))


def training_mlp(hidden_size: int, seed: int, std: float) -> nn.Sequential:
    """SimCSE's training-only head: Linear(hidden, hidden) + Tanh, weights N(0, std), zero bias (BERT's init)."""
    dense = nn.Linear(hidden_size, hidden_size)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        dense.weight.copy_(torch.randn(hidden_size, hidden_size, generator=generator) * std)
        dense.bias.zero_()
    return nn.Sequential(dense, nn.Tanh())


@contextmanager
def edited_output(module: nn.Module, keep: torch.Tensor) -> Iterator[None]:
    """While open, ``module``'s output is multiplied by ``keep`` (0 where cut off)."""

    def hook(_module: nn.Module, _inputs: tuple, output: torch.Tensor) -> torch.Tensor:
        return output * keep.to(output.dtype)

    handle = module.register_forward_hook(hook)
    try:
        yield
    finally:
        handle.remove()


class UnsupervisedContrastive(nn.Module):
    """SimCSE's unsupervised objective with an optional ConSERT augmentation of the second view.

    The encoder is referenced, not registered: the loop optimises its parameters itself, this module owns only
    the training MLP (never saved, so evaluation uses the pooled vector before it: SimCSE's ``cls_before_pooler``).
    """

    def __init__(self, encoder: Encoder, pooling: str = "cls", temperature: float = 0.05, mlp: bool = True,
                 augmentation: str = "dropout", cutoff_rate: float = 0.1, seed: int = 0,
                 config_key: str = "config: methods"):
        super().__init__()
        check_options(pooling, temperature, augmentation, cutoff_rate, config_key)
        self.encoder = encoder
        self.pooling = get_pooling(pooling)
        self.temperature = temperature
        self.augmentation = augmentation
        self.cutoff_rate = cutoff_rate
        if augmentation in CUTOFFS:
            embedding_layer(encoder, config_key)  # fail now, not at the first batch
        std = getattr(encoder.model.config, "initializer_range", 0.02)
        self.mlp = training_mlp(encoder.hidden_size, seed, std) if mlp else nn.Identity()
        self.generator = torch.Generator().manual_seed(seed)
        special_ids = torch.tensor(sorted(set(encoder.tokenizer.all_special_ids)), dtype=torch.long)
        self.register_buffer("special_ids", special_ids, persistent=False)

    def sentence_vectors(self, hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Pooled, MLP-projected sentence vectors of one view."""
        return self.mlp(self.pooling.pool(hidden.float(), attention_mask, None))

    def second_view(self, batch: Batch) -> torch.Tensor:
        """Last hidden states of a second forward pass of the encoder as it is (train mode: new dropout),
        augmented as configured."""
        input_ids, attention_mask = batch.input_ids, batch.attention_mask
        if self.augmentation == "token_shuffle":
            input_ids = shuffle_tokens(input_ids, self.movable(input_ids, attention_mask), self.generator)
        keep = self.cutoff_keep(attention_mask)
        cutoff = nullcontext() if keep is None else edited_output(embedding_layer(self.encoder, ""), keep)
        with cutoff, autocast_for(input_ids.device):
            hidden = self.encoder.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        return hidden.float()

    def movable(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Positions token shuffle may permute: non-padding, non-special tokens."""
        special = torch.isin(input_ids, self.special_ids.to(input_ids.device))
        return attention_mask.bool() & ~special

    def cutoff_keep(self, attention_mask: torch.Tensor) -> torch.Tensor | None:
        """Where the embedding layer's output survives the configured cutoff (None: no cutoff)."""
        if self.augmentation == "token_cutoff":
            return ~token_cutoff_mask(attention_mask, self.cutoff_rate, self.generator).unsqueeze(2)
        if self.augmentation == "feature_cutoff":
            return ~feature_cutoff_mask(attention_mask, self.encoder.hidden_size, self.cutoff_rate, self.generator)
        return None

    def forward(self, batch: Batch) -> tuple[torch.Tensor, dict[str, float]]:
        z1 = self.sentence_vectors(batch.hidden, batch.attention_mask)
        z2 = self.sentence_vectors(self.second_view(batch), batch.attention_mask)
        loss = info_nce(z1, z2, self.temperature)
        return loss, {"info_nce": loss.item()}


def embedding_layer(encoder: Encoder, config_key: str) -> nn.Module:
    """The module whose output (word + position + type embeddings) ConSERT's cutoff edits."""
    layer = getattr(encoder.model, "embeddings", None)
    if not isinstance(layer, nn.Module):
        raise DefSentError(f"{config_key}.augmentation", f"cutoff needs an embedding layer `embeddings`, which "
                                                     f"{type(encoder.model).__name__} does not have")
    return layer


def check_options(pooling: str, temperature: float, augmentation: str, cutoff_rate: float, config_key: str) -> None:
    """Fail with the config key to fix for an unknown pooling or augmentation, or an out-of-range number."""
    if pooling not in TRAINING_POOLINGS:
        raise DefSentError(f"{config_key}.pooling", f"unknown pooling {pooling!r}; expected one of "
                                                f"{list(TRAINING_POOLINGS)}")
    if augmentation not in AUGMENTATIONS:
        raise DefSentError(f"{config_key}.augmentation", f"unknown augmentation {augmentation!r}; expected one of "
                                                     f"{list(AUGMENTATIONS)}")
    if not temperature > 0:
        raise DefSentError(f"{config_key}.temperature", f"temperature must be > 0, got {temperature!r}")
    if not 0 < cutoff_rate < 1:
        raise DefSentError(f"{config_key}.cutoff_rate", f"cutoff rate must lie in (0, 1), got {cutoff_rate!r}")


def contrastive_objective(inputs: TaskInputs) -> UnsupervisedContrastive:
    """InfoNCE with the method's temperature, training MLP and augmentation (errors name the method's config)."""
    options = inputs.options
    return UnsupervisedContrastive(inputs.encoder, pooling=inputs.pooling, temperature=options["temperature"],
                                   mlp=options["mlp"], augmentation=options["augmentation"],
                                   cutoff_rate=options["cutoff_rate"], seed=inputs.seed,
                                   config_key=inputs.config_key)


def contrastive_corpus(inputs: TaskInputs) -> list[str]:
    """The unlabeled training sentences: the run's training definitions or ``corpus_file`` (seeded sample)."""
    options = inputs.options
    return training_corpus(inputs.texts, options["corpus_file"], options["max_sentences"], inputs.seed, inputs.where)


def corpus_card(corpus: list[str], options: dict) -> dict:
    return {"corpus": options["corpus_file"] or "run dataset's training definitions", "sentences": len(corpus),
            "augmentation": options["augmentation"], "temperature": options["temperature"]}


def build_task(inputs: TaskInputs) -> TrainingTask:
    """Unsupervised SimCSE: two views of each corpus sentence against the batch's other sentences."""
    corpus = contrastive_corpus(inputs)
    return TrainingTask(contrastive_objective(inputs), corpus, unused_targets(corpus),
                        card={**corpus_card(corpus, inputs.options), "classes": inputs.batch_size})  # chance: ln(batch)
