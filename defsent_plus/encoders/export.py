"""Export a trained encoder as a Hugging Face directory and as a sentence-transformers model."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

from defsent_plus.encoders.models import check_encoder_dir
from defsent_plus.errors import DefSentError
from defsent_plus.io import atomic_path
from defsent_plus.names import POOLINGS

log = logging.getLogger(__name__)
PROMPT_MODULE = "defsent_prompt"  # the exported file of the prompt pooling's modules


def export_huggingface(model_dir: str | Path, out_dir: str | Path) -> Path:
    """Copy the encoder (safetensors + config + tokenizer) to ``out_dir``; loadable with ``AutoModel``."""
    model_dir = check_encoder_dir(model_dir)
    with atomic_path(out_dir) as tmp:
        shutil.copytree(model_dir, tmp)
    return Path(out_dir)


def export_sentence_transformers(model_dir: str | Path, out_dir: str | Path, pooling: str, max_length: int = 128,
                                 card: str | None = None) -> Path:
    """A sentence-transformers directory whose ``encode`` gives this workflow's ``pooling`` vectors (``prompt``:
    :mod:`.st_prompt`'s modules, saved beside the model), with ``card`` as its README.md."""
    from sentence_transformers import SentenceTransformer

    if pooling not in POOLINGS:
        raise DefSentError("pooling", f"expected one of {list(POOLINGS)}, got {pooling!r}")
    model_dir = check_encoder_dir(model_dir)
    modules = st_modules(model_dir, pooling, max_length)
    with atomic_path(out_dir) as tmp:
        SentenceTransformer(modules=modules, device="cpu").save(str(tmp))
        if pooling == "prompt":
            install_prompt_code(tmp)
        if card is not None:
            (tmp / "README.md").write_text(card)
    log.info("exported %s as sentence-transformers (%s pooling) to %s", model_dir, pooling, out_dir)
    return Path(out_dir)


def st_modules(model_dir: Path, pooling: str, max_length: int) -> list:
    """The sentence-transformers modules giving ``pooling``'s vectors: for ``prompt``, the template-wrapping
    Transformer and the mask-position pooling of :mod:`.st_prompt`; else sentence-transformers' own Transformer and
    Pooling, whose cls, mean and max (same names) equal this workflow's."""
    if pooling == "prompt":
        from defsent_plus.encoders.st_prompt import MaskPooling, PromptTransformer

        transformer = PromptTransformer(str(model_dir), max_seq_length=max_length)
        return [transformer, MaskPooling(transformer.tokenizer.mask_token_id, transformer.get_embedding_dimension())]
    from sentence_transformers.base.modules import Transformer
    from sentence_transformers.sentence_transformer.modules import Pooling

    transformer = Transformer(str(model_dir), max_seq_length=max_length)
    return [transformer, Pooling(transformer.get_embedding_dimension(), pooling_mode=pooling)]


def install_prompt_code(out_dir: Path) -> None:
    """Copy :mod:`.st_prompt` into the export as ``defsent_prompt.py`` and point modules.json at it, so the model
    loads without defsent_plus installed."""
    from defsent_plus.encoders import st_prompt

    shutil.copyfile(st_prompt.__file__, out_dir / f"{PROMPT_MODULE}.py")
    modules = json.loads((out_dir / "modules.json").read_text())
    for module in modules:
        module["type"] = module["type"].replace(st_prompt.__name__, PROMPT_MODULE)
    (out_dir / "modules.json").write_text(json.dumps(modules, indent=2))


def push_to_hub(folder: Path, repo_id: str) -> str:
    """Upload an exported directory to a Hugging Face Hub model repository (created if missing); its URL."""
    from huggingface_hub import HfApi

    api = HfApi()
    api.create_repo(repo_id, exist_ok=True)
    return str(api.upload_folder(folder_path=str(folder), repo_id=repo_id, repo_type="model"))
