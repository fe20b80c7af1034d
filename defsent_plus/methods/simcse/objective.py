"""Unsupervised contrastive objectives: SimCSE (Gao et al. 2021) and ConSERT (Yan et al. 2021).

Each sentence is encoded twice; the two views are pooled, passed through a training-only MLP (SimCSE) and contrasted
against the other sentences of the batch (in-batch negatives). The first view is the training loop's own forward
pass (``first_augmentation`` may augment it: the loop asks :meth:`UnsupervisedContrastive.first_view`); the second is
a fresh forward pass here, so dropout draws a different mask (SimCSE). ConSERT's augmentations change a view
further: token or feature cutoff zero rows or columns of the embedding layer's output (word + position + type
embeddings after LayerNorm and dropout), token shuffle permutes the position ids of every non-padding token, [CLS]
and [SEP] included, as ConSERT's code does (its ``_replace_position_ids``). ConSERT's own runs switch dropout off
(``dropout: false``: its ``--no_dropout``) and contrast the two views with its NT-Xent (``loss: nt_xent``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext

import torch
import torch.nn.functional as F
from torch import nn

from defsent_plus.encoders.encoding import autocast_for, get_pooling
from defsent_plus.encoders.models import Encoder, family_of
from defsent_plus.errors import DefSentError
from defsent_plus.names import CONTRASTIVE_LOSS_NAMES, require_same_names
from defsent_plus.training.corpus import corpus_record, named_corpus
from defsent_plus.training.task import Batch, TaskInputs, TrainingTask, unused_targets

CUTOFFS = ("token_cutoff", "feature_cutoff")
LARGE_NUM = 1e9  # ConSERT's mask of a view's similarity to itself in NT-Xent
COSINE_EPS = 1e-8  # torch.nn.CosineSimilarity's default, as SimCSE's Similarity uses it
_SHARE_EPS = 1e-9  # share * count rounding guard: 0.29 * 100 is 28.999999999999996 in floating point


def info_nce(z1: torch.Tensor, z2: torch.Tensor, temperature: float) -> torch.Tensor:
    """InfoNCE with in-batch negatives: cross-entropy of cos(z1_i, z2_j) / temperature against j = i (float32)."""
    with torch.autocast(device_type=z1.device.type, enabled=False):
        z1, z2 = z1.float(), z2.float()
        norms = z1.norm(dim=-1, keepdim=True) * z2.norm(dim=-1, keepdim=True).T
        logits = (z1 @ z2.T) / norms.clamp_min(COSINE_EPS) / temperature
        labels = torch.arange(len(z1), device=z1.device)
        return F.cross_entropy(logits, labels)


def nt_xent(z1: torch.Tensor, z2: torch.Tensor, temperature: float) -> torch.Tensor:
    """ConSERT's NT-Xent (SimCLR's, as its ``_contrastive_loss_forward`` computes it): with unit vectors, each view
    of sentence i against the other view of every sentence and the same view of every other sentence; the
    cross-entropies of both directions are summed (not averaged)."""
    with torch.autocast(device_type=z1.device.type, enabled=False):
        a, b = F.normalize(z1.float(), dim=-1), F.normalize(z2.float(), dim=-1)
        self_mask = torch.eye(len(a), device=a.device) * LARGE_NUM
        labels = torch.arange(len(a), device=a.device)
        ab, ba = a @ b.T / temperature, b @ a.T / temperature
        aa, bb = a @ a.T / temperature - self_mask, b @ b.T / temperature - self_mask
        return F.cross_entropy(torch.cat([ab, aa], 1), labels) + F.cross_entropy(torch.cat([ba, bb], 1), labels)


CONTRASTIVE_LOSSES = {"info_nce": info_nce, "nt_xent": nt_xent}  # (z1, z2, temperature) -> loss
require_same_names(CONTRASTIVE_LOSSES, CONTRASTIVE_LOSS_NAMES, "contrastive.CONTRASTIVE_LOSSES")


def without_dropout(model: nn.Module) -> None:
    """Switch every dropout of ``model`` off (p = 0; attention dropout reads its module's p too), as ConSERT's
    ``--no_dropout`` builds the model with zero dropout probabilities."""
    for module in model.modules():
        if isinstance(module, nn.Dropout):
            module.p = 0.0


def random_pick(eligible: torch.Tensor, counts: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Boolean mask choosing ``counts[i]`` uniformly random eligible items of each row ``i``."""
    scores = torch.rand(eligible.shape, generator=generator).to(eligible.device)
    scores = scores.masked_fill(~eligible, 2.0)  # ineligible items rank after every eligible one
    ranks = scores.argsort(dim=1).argsort(dim=1)
    return ranks < counts.unsqueeze(1)


def token_cutoff_mask(attention_mask: torch.Tensor, rate: float, generator: torch.Generator) -> torch.Tensor:
    """``[batch, tokens]``: True at the ``rate`` share of each sentence's non-padding positions to zero (their
    number rounded down, as ConSERT does)."""
    present = attention_mask.bool()
    return random_pick(present, torch.floor(present.sum(1).double() * rate + _SHARE_EPS).long(), generator)


def feature_cutoff_mask(attention_mask: torch.Tensor, hidden_size: int, rate: float,
                        generator: torch.Generator) -> torch.Tensor:
    """``[batch, tokens, hidden]``: True at the ``rate`` share of each sentence's dimensions, on its non-padding
    positions (one choice of dimensions per sentence)."""
    rows = len(attention_mask)
    every_dim = torch.ones(rows, hidden_size, dtype=torch.bool, device=attention_mask.device)
    counts = torch.full((rows,), math.floor(hidden_size * rate + _SHARE_EPS), device=attention_mask.device)
    dims = random_pick(every_dim, counts, generator)
    return dims.unsqueeze(1) & attention_mask.bool().unsqueeze(2)


def shuffled_positions(attention_mask: torch.Tensor, first: int, generator: torch.Generator) -> torch.Tensor:
    """``[batch, tokens]`` position ids ``first, first + 1, ...`` with each row's non-padding positions in a random
    order and the padding's in place (ConSERT: a random permutation of range(num_tokens), then the rest)."""
    present = attention_mask.bool()
    scores = torch.rand(present.shape, generator=generator).to(present.device).masked_fill(~present, 2.0)
    order = scores.argsort(dim=1, stable=True)  # the present slots in a random order, then the padding ascending
    slots = (~present).to(torch.uint8).argsort(dim=1, stable=True)  # the present slots ascending, then the padding
    positions = torch.arange(present.shape[1], device=present.device).expand_as(order)
    return first + torch.empty_like(order).scatter_(1, slots, positions.gather(1, order))


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
    """The module's objective. The encoder is referenced, not registered: the loop optimises its parameters itself,
    this module owns only the training MLP (never saved, so evaluation uses the pooled vector before it: SimCSE's
    ``cls_before_pooler``)."""

    def __init__(self, encoder: Encoder, pooling: str = "cls", temperature: float = 0.05, mlp: bool | None = None,
                 augmentation: str = "dropout", cutoff_rate: float = 0.1, seed: int = 0,
                 config_key: str = "config: methods", loss: str = "info_nce", first_augmentation: str = "none",
                 first_cutoff_rate: float | None = None, dropout: bool = True, shuffled_positions: str = "model"):
        super().__init__()
        check_options(temperature, cutoff_rate, first_augmentation, augmentation, dropout, config_key)
        self.encoder = encoder
        self.pooling = get_pooling(pooling)
        self.temperature = temperature
        self.loss = loss
        self.augmentation, self.first_augmentation = augmentation, first_augmentation
        self.cutoff_rate = cutoff_rate
        self.first_cutoff_rate = cutoff_rate if first_cutoff_rate is None else first_cutoff_rate
        if {augmentation, first_augmentation} & set(CUTOFFS):
            embedding_layer(encoder, config_key)  # fail now, not at the first batch
        if not dropout:
            without_dropout(encoder.model)
        std = getattr(encoder.model.config, "initializer_range", 0.02)
        self.mlp = training_mlp(encoder.hidden_size, seed, std) if applies_mlp(mlp, pooling) else nn.Identity()
        self.generator = torch.Generator().manual_seed(seed)
        self.first_position = 0 if shuffled_positions == "zero" else family_of(
            encoder.model.config.model_type).first_position(encoder.model.config)
        self.second_hidden: torch.Tensor | None = None

    def sentence_vectors(self, hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Pooled, MLP-projected sentence vectors of one view."""
        return self.mlp(self.pooling.pool(hidden.float(), attention_mask, None))

    def view(self, augmentation: str, rate: float, attention_mask: torch.Tensor) -> tuple[dict, AbstractContextManager]:
        """What a forward pass needs to be augmented: extra model inputs (shuffled position ids) and a context
        (the embedding layer's cutoff) for the batch's ``attention_mask``."""
        shuffled = {"position_ids": shuffled_positions(attention_mask, self.first_position, self.generator)} \
            if augmentation == "token_shuffle" else {}
        keep = self.cutoff_keep(augmentation, rate, attention_mask)
        cutoff = nullcontext() if keep is None else edited_output(embedding_layer(self.encoder, ""), keep)
        return shuffled, cutoff

    def first_view(self, attention_mask: torch.Tensor) -> tuple[dict, AbstractContextManager]:
        """How the training loop's own forward pass is augmented (``first_augmentation``)."""
        return self.view(self.first_augmentation, self.first_cutoff_rate, attention_mask)

    def second_view(self, batch: Batch) -> torch.Tensor:
        """Last hidden states of a second forward pass of the encoder as it is (train mode: new dropout unless it
        is off), augmented as configured."""
        input_ids, attention_mask = batch.input_ids, batch.attention_mask
        extra, augmented = self.view(self.augmentation, self.cutoff_rate, attention_mask)
        with augmented, autocast_for(input_ids.device):
            output = self.encoder.model(input_ids=input_ids, attention_mask=batch.mask_for_model, **extra)
        return output.last_hidden_state.float()

    def cutoff_keep(self, augmentation: str, rate: float, attention_mask: torch.Tensor) -> torch.Tensor | None:
        """Where the embedding layer's output survives a cutoff ``augmentation`` at ``rate`` (None: no cutoff)."""
        if augmentation == "token_cutoff":
            return ~token_cutoff_mask(attention_mask, rate, self.generator).unsqueeze(2)
        if augmentation == "feature_cutoff":
            return ~feature_cutoff_mask(attention_mask, self.encoder.hidden_size, rate, self.generator)
        return None

    def forward(self, batch: Batch) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        z1 = self.sentence_vectors(batch.hidden, batch.attention_mask)
        self.second_hidden = self.second_view(batch)  # the second view's token states (SLT-FAI's L_AT reads them)
        z2 = self.sentence_vectors(self.second_hidden, batch.attention_mask)
        loss = CONTRASTIVE_LOSSES[self.loss](z1, z2, self.temperature)
        return loss, {self.loss: loss.detach()}


def applies_mlp(mlp: bool | None, pooling: str) -> bool:
    """SimCSE's rule (simcse/models.py: the MLP runs for ``cls`` only): with ``mlp`` None the training MLP is used
    with CLS pooling and not with mean or max; True or False forces it either way."""
    return pooling == "cls" if mlp is None else bool(mlp)


def mlp_card(mlp: bool | None, pooling: str) -> dict:
    """What a training card records about the MLP, and the deviation when a run forces it where SimCSE has none."""
    card = {"training_mlp": applies_mlp(mlp, pooling)}
    if mlp is True and pooling != "cls":
        card["run_deviations"] = [f"the training MLP is applied with {pooling} pooling (methods.*.mlp: true); SimCSE "
                                  "applies it with CLS pooling only (simcse/models.py)"]
    return card


def embedding_layer(encoder: Encoder, config_key: str) -> nn.Module:
    """The module whose output (word + position + type embeddings) ConSERT's cutoff edits."""
    layer = getattr(encoder.model, "embeddings", None)
    if not isinstance(layer, nn.Module):
        raise DefSentError(f"{config_key}.augmentation", f"cutoff needs an embedding layer `embeddings`, which "
                                                     f"{type(encoder.model).__name__} does not have")
    return layer


def check_options(temperature: float, cutoff_rate: float, first_augmentation: str, augmentation: str, dropout: bool,
                  config_key: str) -> None:
    """Fail with the config key to fix for an out-of-range number (NaN included, which the config schema lets
    through) or for two views that are the same pass (no dropout and neither view augmented)."""
    if not temperature > 0:
        raise DefSentError(f"{config_key}.temperature", f"temperature must be > 0, got {temperature!r}")
    if not 0 < cutoff_rate < 1:
        raise DefSentError(f"{config_key}.cutoff_rate", f"cutoff rate must lie in (0, 1), got {cutoff_rate!r}")
    if not dropout and first_augmentation == "none" and augmentation == "dropout":
        raise DefSentError(f"{config_key}.dropout", "without dropout and without an augmentation the two views are "
                                                    "the same forward pass; set augmentation or first_augmentation")


OBJECTIVE_OPTIONS = ("temperature", "mlp", "augmentation", "cutoff_rate", "loss", "first_augmentation",
                     "first_cutoff_rate", "dropout", "shuffled_positions")  # passed on to the objective as they are


def contrastive_objective(inputs: TaskInputs) -> UnsupervisedContrastive:
    """The contrastive objective with the method's options (errors name the method's config)."""
    return UnsupervisedContrastive(inputs.encoder, pooling=inputs.pooling, seed=inputs.seed,
                                   config_key=inputs.config_key, **{k: inputs.options[k] for k in OBJECTIVE_OPTIONS})


def contrastive_corpus(inputs: TaskInputs) -> list[str]:
    """The unlabeled training sentences: the run's training definitions, ``corpus_file`` or ConSERT's ``stssick``
    sentences (``corpus``), then a seeded sample of ``max_sentences``."""
    options = inputs.options
    return named_corpus(options["corpus"], inputs.texts, options["corpus_file"], options["max_sentences"],
                        inputs.seed, inputs.where, inputs.senteval_dir, f"{inputs.config_key}.corpus")


def corpus_card(corpus: list[str], options: dict, pooling: str) -> dict:
    return {**corpus_record(options["corpus"], options["corpus_file"]), "sentences": len(corpus),
            "views": [options["first_augmentation"], options["augmentation"]], "dropout": options["dropout"],
            "loss": options["loss"], "temperature": options["temperature"], **mlp_card(options["mlp"], pooling)}


def build_task(inputs: TaskInputs) -> TrainingTask:
    """Unsupervised SimCSE: two views of each corpus sentence against the batch's other sentences."""
    corpus = contrastive_corpus(inputs)
    card = {**corpus_card(corpus, inputs.options, inputs.pooling), "classes": inputs.batch_size}  # chance: ln(batch)
    return TrainingTask(contrastive_objective(inputs), corpus, unused_targets(corpus), card=card)
