"""Prompt pooling for sentence-transformers: the sentence wrapped in PromptBERT's template, read at its mask token.

sentence-transformers' prompts are prefixes and its poolings know no mask position, so ``export --pooling prompt``
saves these two modules beside the model (as ``defsent_prompt.py``; this file imports nothing of defsent_plus, so
the exported model loads without it): :class:`PromptTransformer` wraps each input text in ``TEMPLATE`` before
tokenising, :class:`MaskPooling` takes the last hidden state at the (first) mask token. sentence-transformers >= 6
loads modules from outside its own package only with ``SentenceTransformer(path, trust_remote_code=True)``.
"""

from __future__ import annotations

from typing import Any

import torch

try:  # sentence-transformers >= 6
    from sentence_transformers.base.modules import Module, Transformer
except ImportError:  # pragma: no cover - older releases
    from sentence_transformers.models import Module, Transformer

TEMPLATE = 'This sentence : "{sentence}" means {mask} .'  # equals defsent_plus.names.PROMPT_TEMPLATE (tested)


class PromptTransformer(Transformer):
    """A Transformer that wraps every text input in ``TEMPLATE`` (with its tokenizer's mask token) first."""

    def preprocess(self, inputs, prompt: str | None = None, **kwargs) -> dict[str, Any]:
        mask = self.tokenizer.mask_token
        wrapped = [TEMPLATE.format(sentence=text, mask=mask) if isinstance(text, str) else text for text in inputs]
        return super().preprocess(wrapped, prompt=prompt, **kwargs)


class MaskPooling(Module):
    """The sentence embedding is the last hidden state at the first mask token of each input."""

    config_keys = ["mask_token_id", "embedding_dimension"]

    def __init__(self, mask_token_id: int, embedding_dimension: int):
        super().__init__()
        self.mask_token_id = mask_token_id
        self.embedding_dimension = embedding_dimension

    def forward(self, features: dict[str, Any], **kwargs) -> dict[str, Any]:
        is_mask = features["input_ids"] == self.mask_token_id
        if not bool(is_mask.any(1).all()):
            raise ValueError("prompt pooling: an input lost its mask token to truncation (raise max_seq_length)")
        hidden = features["token_embeddings"]
        positions = is_mask.int().argmax(1)
        features["sentence_embedding"] = hidden[torch.arange(hidden.shape[0], device=hidden.device), positions]
        return features

    def get_embedding_dimension(self) -> int:
        return self.embedding_dimension

    get_sentence_embedding_dimension = get_embedding_dimension  # the name before sentence-transformers 6

    def save(self, output_path: str, *args, **kwargs) -> None:
        self.save_config(output_path)
