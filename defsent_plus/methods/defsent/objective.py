"""DefSent (001/002): predict a definition's headword through the model's own frozen masked-LM head.

The pooled definition goes through the pre-trained masked-LM head (its transform, then the decoder tied to the
input word embeddings, plus the output bias) to logits over the whole vocabulary; cross-entropy against the
headword's token id trains the encoder only. Where the head lives in a checkpoint is data in
:data:`HEAD_LAYOUTS`, found by checkpoint key prefix; a checkpoint without head weights (e.g. a
sentence-transformers export) gets a seeded initialisation of the head transform, recorded in the info dict.

Freezing follows DefSent's code (``freeze_prediction_layer`` and ``freeze_token_embeddings``, both true): the head,
and through the tie the word embeddings, never change; by default the rest of the embedding block (position and
token-type embeddings, embedding LayerNorm) is frozen too, as ``model.embeddings`` is in DefSent.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from safetensors import safe_open
from safetensors.torch import load_file, save_file
from torch import nn
from transformers.models.bert.modeling_bert import BertOnlyMLMHead
from transformers.models.roberta.modeling_roberta import RobertaLMHead

from defsent_plus.dictionary.datasets import single_token_ids
from defsent_plus.encoders.encoding import device_for_run, get_pooling
from defsent_plus.encoders.models import Encoder, _checkpoint_tensor, _safetensors_files, is_hub_id, load_encoder
from defsent_plus.errors import DefSentError
from defsent_plus.io import read_json
from defsent_plus.names import TRAINING_CARD, TRAINING_POOLING_KEY, TRAINING_POOLINGS
from defsent_plus.training.task import Batch, TaskInputs, TrainingTask

log = logging.getLogger(__name__)
HEAD_FILE = "defsent_head.safetensors"  # saved next to a DefSent-trained encoder: the head it was trained with


@dataclass(frozen=True)
class HeadLayout:
    """Where a family's masked-LM head lives in a checkpoint and which transformers class builds it."""

    name: str
    prefix: str  # checkpoint key prefix of the head module (its state-dict keys follow)
    head_class: type[nn.Module]  # built from the encoder's config
    decoder_owner: str  # attribute of the head holding ``decoder`` and the output ``bias`` ("" = the head itself)
    model_types: tuple[str, ...]  # checkpoints of these types without head weights get this layout, initialised


HEAD_LAYOUTS = (
    HeadLayout("bert", "cls.", BertOnlyMLMHead, "predictions", ("bert",)),
    HeadLayout("roberta", "lm_head.", RobertaLMHead, "", ("roberta", "xlm-roberta", "camembert")),
)


def _owner_prefix(layout: HeadLayout) -> str:
    return f"{layout.decoder_owner}." if layout.decoder_owner else ""


def own_keys(head: nn.Module, layout: HeadLayout) -> list[str]:
    """The head's own state-dict keys (transform and output bias), without the decoder (tied to the embeddings and
    the bias)."""
    tied = {f"{_owner_prefix(layout)}decoder.{name}" for name in ("weight", "bias")}
    return [key for key in head.state_dict() if key not in tied]


def masked_lm_head(encoder: Encoder, seed: int) -> tuple[nn.Module, dict]:
    """The encoder's pre-trained masked-LM head from its ``*.safetensors`` files; weights they lack (all, or a
    partial head's) get :func:`initialise_head`'s. A stored decoder weight is not read: the decoder is always the
    input word embeddings (DefSent ties them whenever head and embeddings are frozen). Returns the head and
    ``{"head": "pretrained"|"initialised"|"partial", "layout", "missing", "seed"}``."""
    keys: set[str] = set()
    for file in _safetensors_files(encoder.path):
        with safe_open(str(file), framework="pt") as handle:
            keys.update(handle.keys())
    layout = _layout_from_keys(keys, encoder.model.config) or _layout_from_type(encoder)
    head = _tied_head(layout, encoder)
    initialise_head(head, layout, seed, encoder.model.config)
    wanted = own_keys(head, layout)
    found = _checkpoint_head(encoder.path, keys, layout, wanted)
    _fill(head, found, encoder.path, layout.prefix)
    missing = [layout.prefix + key for key in wanted if key not in found]
    state = "pretrained" if not missing else "initialised" if not found else "partial"
    info = {"head": state, "layout": layout.name, "missing": missing, "seed": seed}
    log.info("%s: masked-LM head (%s layout) %s%s", encoder.path, layout.name, state,
             f" with seed {seed}, missing {missing}" if missing else "")
    return head, info


def _checkpoint_head(path: Path, keys: set[str], layout: HeadLayout, wanted: list[str]) -> dict[str, torch.Tensor]:
    """The head weights the checkpoint has, by head state-dict key (the output bias may be stored as the
    decoder's bias instead)."""
    owner = _owner_prefix(layout)
    aliases = {f"{owner}bias": f"{owner}decoder.bias"}
    found = {}
    for key in wanted:
        stored = next((k for k in (key, aliases.get(key)) if k and layout.prefix + k in keys), None)
        if stored is not None:
            found[key] = _checkpoint_tensor(path, layout.prefix + stored)
    return found


def _meta_head(layout: HeadLayout, config) -> nn.Module | None:
    """A weightless head of ``layout`` for ``config``; None when the config lacks what the head class needs."""
    try:
        with torch.device("meta"):
            return layout.head_class(config)
    except (AttributeError, TypeError, KeyError):
        return None


def _layout_from_keys(keys: set[str], config) -> HeadLayout | None:
    """The first layout with at least one of its own head weights in the checkpoint."""
    for layout in HEAD_LAYOUTS:
        probe = _meta_head(layout, config)
        if probe is not None and any(layout.prefix + key in keys for key in own_keys(probe, layout)):
            return layout
    return None


def _layout_from_type(encoder: Encoder) -> HeadLayout:
    model_type = encoder.model.config.model_type
    for layout in HEAD_LAYOUTS:
        if model_type in layout.model_types:
            return layout
    expected = ", ".join(f"{lay.prefix}* weights or model type {'/'.join(lay.model_types)}" for lay in HEAD_LAYOUTS)
    raise DefSentError(encoder.path, f"cannot build a masked-LM head for model type {model_type!r}: the "
                                     f"checkpoint has no head weights of a known layout (expected {expected})")


def _tied_head(layout: HeadLayout, encoder: Encoder) -> nn.Module:
    """An unfilled head of ``layout`` whose decoder shares the encoder's input word embeddings and the head bias."""
    embeddings = encoder.model.get_input_embeddings().weight
    config = encoder.model.config
    head = _meta_head(layout, config)
    if head is None:
        raise DefSentError(encoder.path, f"cannot build the {layout.name} masked-LM head from this model's config "
                                         f"({config.model_type})")
    head.to_empty(device=embeddings.device)
    owner = head.get_submodule(layout.decoder_owner)
    if owner.decoder.weight.shape != embeddings.shape:
        raise DefSentError(encoder.path, f"input word embeddings have shape {tuple(embeddings.shape)}, the masked-LM "
                                         f"head expects {tuple(owner.decoder.weight.shape)} (vocab_size x hidden_size)")
    owner.decoder.weight = embeddings
    owner.decoder.bias = owner.bias
    return head


def initialise_head(head: nn.Module, layout: HeadLayout, seed: int, config) -> None:
    """Seeded initialisation of the head's own weights (transformers' scheme): Linear weights normal with std
    ``initializer_range`` and zero bias, LayerNorm 1/0, output bias 0; the tied decoder is left alone."""
    generator = torch.Generator().manual_seed(seed)
    std = getattr(config, "initializer_range", 0.02)
    owner = head.get_submodule(layout.decoder_owner)
    with torch.no_grad():
        for module in head.modules():
            if isinstance(module, nn.Linear) and module is not owner.decoder:
                module.weight.copy_(torch.randn(module.weight.shape, generator=generator) * std)
                module.bias.zero_()
            elif isinstance(module, nn.LayerNorm):
                module.weight.fill_(1.0)
                module.bias.zero_()
        owner.bias.zero_()


def _fill(head: nn.Module, tensors: dict[str, torch.Tensor], where: str | Path, prefix: str) -> None:
    """Copy ``tensors`` (head state-dict keys; ``prefix`` + key in the file) into ``head``; a shape mismatch is the
    user's error."""
    state = head.state_dict()
    with torch.no_grad():
        for key, tensor in tensors.items():
            if tensor.shape != state[key].shape:
                raise DefSentError(where, f"masked-LM head weight {prefix}{key} has shape {tuple(tensor.shape)}, "
                                          f"expected {tuple(state[key].shape)} for this encoder's width and vocabulary")
            state[key].copy_(tensor)


def save_head(head: nn.Module, out_dir: str | Path, info: dict | None = None) -> Path:
    """Save the head's own weights (not the tied decoder) under its checkpoint key prefix to ``HEAD_FILE``."""
    layout = next(layout for layout in HEAD_LAYOUTS if type(head) is layout.head_class)  # heads are built here
    state = head.state_dict()
    tensors = {layout.prefix + key: state[key].detach().cpu().contiguous() for key in own_keys(head, layout)}
    info = {"layout": layout.name, **{k: str(v) for k, v in (info or {}).items()}}
    path = Path(out_dir) / HEAD_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(path), metadata={HEAD_INFO: json.dumps(info, sort_keys=True)})
    return path


HEAD_INFO = "defsent_head"  # the head's one metadata key: safetensors writes several keys in a random order


def head_info(metadata: dict | None) -> dict:
    """What :func:`save_head` recorded (its layout, ...); a head saved with one key each (before the single key)
    is read as well."""
    metadata = metadata or {}
    return json.loads(metadata[HEAD_INFO]) if HEAD_INFO in metadata else metadata


def load_head(encoder: Encoder) -> nn.Module:
    """The head saved with a DefSent-trained encoder (``HEAD_FILE``), tied to the encoder's word embeddings."""
    path = Path(encoder.path) / HEAD_FILE
    if is_hub_id(encoder.path) or not path.is_file():
        raise DefSentError(encoder.path, f"no {HEAD_FILE}: not a DefSent-trained model directory (its masked-LM "
                                         f"head is saved there by training)")
    with safe_open(str(path), framework="pt") as handle:
        name = head_info(handle.metadata()).get("layout", "")
    layouts = {layout.name: layout for layout in HEAD_LAYOUTS}
    if name not in layouts:
        raise DefSentError(path, f"unknown masked-LM head layout {name!r}; expected one of {list(layouts)}")
    layout = layouts[name]
    head = _tied_head(layout, encoder)
    saved = {key.removeprefix(layout.prefix): tensor for key, tensor in load_file(str(path)).items()}
    missing = sorted(set(own_keys(head, layout)) - set(saved))
    if missing:
        raise DefSentError(path, f"incomplete masked-LM head: missing {[layout.prefix + k for k in missing]}")
    _fill(head, {key: saved[key] for key in own_keys(head, layout)}, path, layout.prefix)
    return head.requires_grad_(False).eval()


def check_pooling(pooling: str) -> None:
    """001, Section 2.3: CLS, mean or max over all tokens, special tokens included (as in defsent)."""
    if pooling not in TRAINING_POOLINGS:
        raise DefSentError(TRAINING_POOLING_KEY,
                           f"DefSent pools with one of {list(TRAINING_POOLINGS)}, not {pooling!r}")


class HeadwordPrediction(nn.Module):
    """The module's objective on a batch (targets: ``batch.entry_ids``, headword token ids); it freezes the head."""

    def __init__(self, head: nn.Module, pooling: str, info: dict | None = None):
        super().__init__()
        check_pooling(pooling)
        self.head = head.requires_grad_(False)
        self.pooling = get_pooling(pooling)
        self.head_info = dict(info or {})

    def logits(self, hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        pooled = self.pooling.pool(hidden, attention_mask, None)
        with torch.autocast(device_type=pooled.device.type, enabled=False):
            return self.head(pooled.float())

    def forward(self, batch: Batch) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        loss = F.cross_entropy(self.logits(batch.hidden, batch.attention_mask), batch.entry_ids)
        return loss, {"headword_ce": loss.detach()}


def defsent_objective(encoder: Encoder, pooling: str, seed: int, freeze_embedding_block: bool = True
                      ) -> HeadwordPrediction:
    """DefSent's objective for ``encoder``: its masked-LM head (``head_info``: pretrained or initialised), frozen
    with the embeddings as in the module doc (``freeze_embedding_block``: DefSent's ``freeze_token_embeddings``)."""
    head, info = masked_lm_head(encoder, seed)
    if freeze_embedding_block:  # word, position, token-type embeddings and LayerNorm; else the word embeddings
        block = getattr(encoder.model, "embeddings", None)
        (block if isinstance(block, nn.Module) else encoder.model.get_input_embeddings()).requires_grad_(False)
    return HeadwordPrediction(head, pooling, info)


def build_task(inputs: TaskInputs) -> TrainingTask:
    """DefSent's training task: every definition of an entry whose headword is one token, that token its class.
    Definitions of other entries (possible when the dataset was built with another model's tokenizer) are
    dropped, counted and logged; none left is an error naming the dataset."""
    encoder, where = inputs.encoder, inputs.where
    token_ids = single_token_ids(encoder.tokenizer, list(inputs.frame["entry"]))  # dataset c's rule: its entries
    per_example = [token_ids[i] for i in inputs.entry_ids]
    keep = np.array([t is not None for t in per_example], dtype=bool)
    dropped = int((~keep).sum())
    if not keep.any():
        raise DefSentError(where, f"no training entry is a single token of {encoder.path}'s vocabulary (DefSent "
                                  "needs dataset c of this model's tokenizer, e.g. a subset of dataset c)")
    if dropped:
        log.warning("%s: %d of %d definitions dropped: their headword is not one token of %s's vocabulary", where,
                    dropped, len(keep), encoder.path)
    objective = defsent_objective(encoder, inputs.pooling, inputs.seed)
    card = {"classes": encoder.model.config.vocab_size, "targets": "headword token id (dataset c rule)",
            "head": objective.head_info, "dropped_not_single_token": dropped}
    return TrainingTask(objective, [t for t, k in zip(inputs.texts, keep, strict=True) if k],
                        np.array([t for t in per_example if t is not None], dtype=np.int64), card,
                        save=lambda out_dir: save_head(objective.head, out_dir, objective.head_info))


def load_defsent_model(model_dir: str | Path) -> tuple[Encoder, nn.Module]:
    """A DefSent-trained encoder with the head it was trained with (on the run's device, in eval mode)."""
    encoder = load_encoder(model_dir)
    head = load_head(encoder)
    device = device_for_run()
    encoder.to(device)
    encoder.model.eval()
    return encoder, head.to(device)


@torch.inference_mode()
def word_logits(encoder: Encoder, head: nn.Module, definitions: Sequence[str], pooling: str,
                batch_size: int = 128) -> torch.Tensor:
    """``[n, vocab]`` float32 logits of the head over the pooled definitions (DefSent's training logits)."""
    check_pooling(pooling)
    pooled = torch.from_numpy(encoder.encode(list(definitions), pooling, batch_size=batch_size))
    return torch.cat([head_logits(head, chunk) for chunk in pooled.split(batch_size)]) \
        if len(pooled) else torch.empty(0, encoder.model.config.vocab_size)


@torch.inference_mode()
def head_logits(head: nn.Module, pooled: torch.Tensor) -> torch.Tensor:
    """``[n, vocab]`` float32 logits of the head over pooled definitions, on the host."""
    return head(pooled.to(next(head.parameters()).device)).float().cpu()


def predict_words(encoder_dir: str | Path, definitions: Sequence[str], k: int = 10, pooling: str | None = None
                  ) -> list[list[tuple[str, float]]]:
    """Top-``k`` words with softmax probabilities for each definition, from a DefSent-trained model directory
    (``pooling``: default the one in its training card)."""
    encoder, head = load_defsent_model(encoder_dir)
    card = Path(encoder_dir) / TRAINING_CARD
    if pooling is None and not card.is_file():
        raise DefSentError(encoder_dir, f"no {TRAINING_CARD}: pass the pooling explicitly")
    pooling = pooling or read_json(card)["pooling"]
    probabilities = word_logits(encoder, head, definitions, pooling).softmax(-1)
    top = probabilities.topk(min(k, probabilities.shape[-1]), dim=-1)
    tokenizer = encoder.tokenizer
    return [[(tokenizer.decode([i]).strip(), float(p)) for p, i in zip(ps.tolist(), ids.tolist(), strict=True)]
            for ps, ids in zip(top.values, top.indices, strict=True)]

