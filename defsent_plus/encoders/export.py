"""Export a trained encoder as a Hugging Face directory and as a sentence-transformers model."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from defsent_plus.encoders.models import check_encoder_dir
from defsent_plus.errors import DefSentError
from defsent_plus.io import atomic_path

log = logging.getLogger(__name__)
ST_POOLING_MODES = {"cls": "cls", "mean": "mean"}


def export_huggingface(model_dir: str | Path, out_dir: str | Path) -> Path:
    """Copy the encoder (safetensors + config + tokenizer) to ``out_dir``; loadable with ``AutoModel``."""
    model_dir = check_encoder_dir(model_dir)
    with atomic_path(out_dir) as tmp:
        shutil.copytree(model_dir, tmp)
    return Path(out_dir)


def export_sentence_transformers(model_dir: str | Path, out_dir: str | Path, pooling: str, max_length: int = 128
                                 ) -> Path:
    """A sentence-transformers directory whose ``encode`` gives this workflow's ``pooling`` vectors."""
    from sentence_transformers import SentenceTransformer

    try:  # sentence-transformers >= 6 moved the modules
        from sentence_transformers.sentence_transformer import modules as models
    except ImportError:
        from sentence_transformers import models

    if pooling not in ST_POOLING_MODES:
        raise DefSentError("pooling", f"sentence-transformers export supports {sorted(ST_POOLING_MODES)}, "
                                      f"not {pooling!r}")
    model_dir = check_encoder_dir(model_dir)
    from transformers import AutoConfig

    transformer = models.Transformer(str(model_dir), max_seq_length=max_length)
    hidden = AutoConfig.from_pretrained(str(model_dir)).hidden_size
    pool = models.Pooling(hidden, pooling_mode=ST_POOLING_MODES[pooling])
    with atomic_path(out_dir) as tmp:
        SentenceTransformer(modules=[transformer, pool], device="cpu").save(str(tmp))
    log.info("exported %s as sentence-transformers (%s pooling) to %s", model_dir, pooling, out_dir)
    return Path(out_dir)
