"""Tiny random BERT and RoBERTa encoders built in code (small vocab), saved as local HF directories."""

from __future__ import annotations

import json
from pathlib import Path

import torch
from tokenizers import ByteLevelBPETokenizer
from transformers import (
    BertConfig,
    BertModel,
    BertTokenizerFast,
    RobertaConfig,
    RobertaForMaskedLM,
    RobertaTokenizerFast,
)

from defsent_plus.pipeline.model_architectures import TINY_DIMS  # the rehearsals' own
from defsent_plus.rehearsal.models import vary_layer_norms

WORDS = (
    "a an the of to in and or is are be for with as by on that this it its not from at which one "
    "animal long necked african large small bird water tree plant person act state quality made "
    "used having giraffe lion dog cat run walk fast slow big city new york sentence means house "
    "feeling color red blue green food eat drink light dark time day night make take give game "
    "team play hit ball kind something someone place thing part body move good bad old young"
).split()
SPECIAL_BERT = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
PUNCT = list(".,;:()\"'-!?") + list("abcdefghijklmnopqrstuvwxyz0123456789")


def build_tiny_bert(out_dir: str | Path, seed: int = 0, with_pooler: bool = True) -> Path:
    """A 2-layer BERT with a word-level WordPiece vocab; ``with_pooler=False`` drops the pooler weights."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    vocab = SPECIAL_BERT + list(dict.fromkeys(WORDS + PUNCT)) + [f"##{c}" for c in "abcdefghijklmnopqrstuvwxyz"]
    tokenizer = BertTokenizerFast(vocab={token: i for i, token in enumerate(vocab)}, do_lower_case=True)
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=len(vocab), max_position_embeddings=128, **TINY_DIMS)
    model = BertModel(config, add_pooling_layer=with_pooler)
    vary_layer_norms(model, seed)
    model.save_pretrained(out_dir, safe_serialization=True)
    tokenizer.save_pretrained(out_dir)
    return out_dir


def build_tiny_roberta(out_dir: str | Path, seed: int = 0) -> Path:
    """A 2-layer RoBERTa with MLM head (so the pooler can take its dense layer) and a tiny BPE vocab."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        [" ".join(WORDS)] * 4, vocab_size=400, min_frequency=1,
        special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"], show_progress=False,
    )
    bpe.save_model(str(out_dir))
    merges = [tuple(line.split()) for line in (out_dir / "merges.txt").read_text(encoding="utf-8").splitlines()[1:]]
    vocab = json.loads((out_dir / "vocab.json").read_text(encoding="utf-8"))
    tokenizer = RobertaTokenizerFast(vocab=vocab, merges=merges)
    torch.manual_seed(seed)
    config = RobertaConfig(
        vocab_size=tokenizer.vocab_size, max_position_embeddings=130, pad_token_id=1,
        bos_token_id=0, eos_token_id=2, **TINY_DIMS,
    )
    model = RobertaForMaskedLM(config)
    vary_layer_norms(model, seed)
    model.save_pretrained(out_dir, safe_serialization=True)
    tokenizer.save_pretrained(out_dir)
    return out_dir
