"""Loading encoders and their poolers, with one small adapter per model family.

Where BERT and RoBERTa differ (which weights the pooler starts from, its activation) is data in
:data:`FAMILIES`; every other piece of code asks the adapter instead of branching on the family.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from safetensors import safe_open
from torch import nn
from transformers import AutoConfig, AutoModel, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from defsent_plus.encoders.encoding import encode
from defsent_plus.errors import DefSentError

POOLER_CONFIG_KEY = "defsent_pooler_activation"
ACTIVATIONS = {"tanh": nn.Tanh, "gelu": nn.GELU}


@dataclass(frozen=True)
class ModelFamily:
    """What differs between encoder families, as data."""

    name: str
    model_types: tuple[str, ...]
    pooler_activation: str
    pooler_init_from: str | None = None  # checkpoint key prefix whose dense weights seed the pooler
    positions_after_padding: bool = False  # position ids start at pad_token_id + 1 (RoBERTa), else at 0

    def first_position(self, config) -> int:
        """The position id of a sequence's first token."""
        return config.pad_token_id + 1 if self.positions_after_padding else 0


FAMILIES = (
    ModelFamily("bert", ("bert", "distilbert", "electra", "mpnet"), "tanh"),
    # 000, end of Section 3.2: RobertaPooler takes the MLM head's dense layer and a GELU.
    ModelFamily("roberta", ("roberta", "xlm-roberta", "camembert"), "gelu", "lm_head.dense", True),
)


def family_of(model_type: str) -> ModelFamily:
    """The adapter for a Hugging Face ``config.model_type``; unknown types get BERT's conventions."""
    for family in FAMILIES:
        if model_type in family.model_types:
            return family
    return ModelFamily(model_type, (model_type,), "tanh")


def check_encoder_dir(path: str | Path) -> Path:
    """Fail with a clear message unless ``path`` is a local Hugging Face encoder directory."""
    path = Path(path)
    if is_hub_id(path):
        return path
    if not path.is_dir():
        raise DefSentError(path, "encoder directory not found (expected a local Hugging Face model directory)")
    if not (path / "config.json").is_file():
        raise DefSentError(path, "not an encoder directory: config.json is missing")
    if not _safetensors_files(path):
        raise DefSentError(path, "no *.safetensors weights found (pickle checkpoints are not loaded)")
    return path


def is_hub_id(path: str | Path) -> bool:
    """True for ``hub:<id>`` model names (online users; transformers downloads them)."""
    return str(path).startswith("hub:")


def hf_name(path: str | Path) -> str:
    """What to pass to ``from_pretrained``: the hub id without its prefix, or the local path."""
    return str(path).removeprefix("hub:")


def _safetensors_files(path: Path) -> list[Path]:
    if is_hub_id(path):  # online users: the file transformers downloaded (or has cached)
        from transformers.utils import cached_file

        found = cached_file(hf_name(path), "model.safetensors", _raise_exceptions_for_missing_entries=False)
        return [Path(found)] if found else []
    return sorted(path.glob("*.safetensors"))


def _checkpoint_tensor(path: Path, key: str) -> torch.Tensor | None:
    for file in _safetensors_files(path):
        with safe_open(str(file), framework="pt") as handle:
            if key in handle.keys():
                return handle.get_tensor(key)
    return None


class Pooler(nn.Module):
    """Dense layer + activation applied to the pooled sentence vector (BERT's and RoBERTa's pooler shape)."""

    def __init__(self, dense: nn.Linear, activation: str):
        super().__init__()
        self.dense = dense
        self.activation_name = activation
        self.activation = ACTIVATIONS[activation]()

    def forward(self, pooled: torch.Tensor) -> torch.Tensor:
        return self.activation(self.dense(pooled))


@dataclass
class Encoder:
    """A transformer encoder, its tokenizer, and the pooler used by the training objective."""

    model: PreTrainedModel
    tokenizer: PreTrainedTokenizerBase
    pooler: Pooler
    family: ModelFamily
    path: Path

    @property
    def hidden_size(self) -> int:
        return self.model.config.hidden_size

    @property
    def device(self) -> torch.device:
        """Where the model's weights are (where it encodes)."""
        return next(self.model.parameters()).device

    def to(self, device: torch.device) -> Encoder:
        self.model.to(device)
        self.pooler.to(device)
        return self

    def encode(self, texts: Sequence[str], pooling: str | Sequence[str], *, batch_size: int = 128,
               max_length: int = 128, progress: bool = False, desc: str | None = None,
               max_tokens: int | None = None) -> np.ndarray | dict[str, np.ndarray]:
        """Embed ``texts`` on the model's device (:func:`defsent_plus.encoders.encoding.encode`): one pooling name
        gives float32 ``[n, hidden]``, a list of names a dict of them."""
        poolings = (pooling,) if isinstance(pooling, str) else tuple(pooling)
        vectors = encode(self.model, self.tokenizer, texts, poolings, batch_size, max_length, progress,
                         desc or "+".join(poolings), max_tokens=max_tokens)
        return vectors[pooling] if isinstance(pooling, str) else vectors

    def save(self, out_dir: str | Path) -> None:
        """Save encoder + pooler as one safetensors checkpoint loadable with ``AutoModel.from_pretrained``."""
        out_dir = Path(out_dir)
        if getattr(self.model, "pooler", None) is not None:
            self.model.pooler.dense.load_state_dict(self.pooler.dense.state_dict())
        setattr(self.model.config, POOLER_CONFIG_KEY, self.pooler.activation_name)
        self.model.save_pretrained(out_dir, safe_serialization=True)
        self.tokenizer.save_pretrained(out_dir)


def load_tokenizer(path: str | Path) -> PreTrainedTokenizerBase:
    """The tokenizer saved with an encoder directory."""
    path = check_encoder_dir(path)
    try:
        return AutoTokenizer.from_pretrained(hf_name(path))
    except (OSError, ValueError) as err:
        raise DefSentError(path, f"cannot load a tokenizer from this directory: {err}") from err


def load_encoder(path: str | Path, pooler_seed: int = 0) -> Encoder:
    """Load a local encoder directory with its tokenizer and the pooler its family prescribes.

    Pooler weights come from, in order: a pooler saved by this workflow (its activation in config),
    the family's source layer (RoBERTa: the MLM head's dense), the checkpoint's own pooler, or a seeded
    normal initialisation (std = ``initializer_range``) when the checkpoint has none.
    """
    path = check_encoder_dir(path)
    config = AutoConfig.from_pretrained(hf_name(path))
    family = family_of(config.model_type)
    tokenizer = load_tokenizer(path)
    model, info = AutoModel.from_pretrained(hf_name(path), use_safetensors=True, output_loading_info=True)
    if tokenizer.vocab_size > model.config.vocab_size:
        raise DefSentError(
            path,
            f"tokenizer has {tokenizer.vocab_size} tokens but the model's embedding has "
            f"{model.config.vocab_size}: model and tokenizer do not match",
        )
    pooler = _build_pooler(path, model, family, info.get("missing_keys", []), pooler_seed)
    return Encoder(model=model, tokenizer=tokenizer, pooler=pooler, family=family, path=path)


def _build_pooler(path: Path, model: PreTrainedModel, family: ModelFamily, missing: list[str], seed: int) -> Pooler:
    hidden = model.config.hidden_size
    dense = nn.Linear(hidden, hidden)
    saved_activation = getattr(model.config, POOLER_CONFIG_KEY, None)
    own = getattr(model, "pooler", None)
    own_loaded = own is not None and not any("pooler" in key for key in missing)
    if saved_activation is not None and own_loaded:
        dense.load_state_dict(own.dense.state_dict())
        return Pooler(dense, saved_activation)
    prefix = family.pooler_init_from  # the family's source layer, where the checkpoint has its weight and bias
    weight, bias = (_checkpoint_tensor(path, f"{prefix}.{name}") if prefix else None for name in ("weight", "bias"))
    if weight is not None and bias is not None:
        dense.weight.data.copy_(weight)
        dense.bias.data.copy_(bias)
    elif own_loaded:
        dense.load_state_dict(own.dense.state_dict())
    else:
        generator = torch.Generator().manual_seed(seed)
        std = getattr(model.config, "initializer_range", 0.02)
        dense.weight.data.copy_(torch.randn(hidden, hidden, generator=generator) * std)
        dense.bias.data.zero_()
    return Pooler(dense, family.pooler_activation)
