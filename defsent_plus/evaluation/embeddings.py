"""Stored sentence embeddings: the ``embed`` job encodes one named sentence set with one encoder and pooling
(float32 npy beside a JSON record of the sentences' count and fingerprint, the model and the options), and every
evaluator of that set reads them instead of encoding again.

Reading checks the record against the sentences the reader loads, so vectors never meet the wrong sentences.
Writing needs torch; reading does not.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from defsent_plus.errors import DefSentError
from defsent_plus.evaluation.sentence_sets import sentences_of_set
from defsent_plus.io import read_json, read_npy, sentences_digest, write_json, write_npy
from defsent_plus.provenance import provenance, with_training
from defsent_plus.sts import Embed

log = logging.getLogger(__name__)


def write_sentence_embeddings(*, model_dir: str | Path, senteval_dir: str | Path, sentence_set: str, pooling: str,
                              batch_size: int, max_length: int, out_npy: str | Path, out_json: str | Path,
                              label: str) -> dict:
    """Encode ``sentence_set`` with the encoder at ``model_dir`` and one pooling; write the vectors and their
    record (:func:`write_embeddings`)."""
    import torch

    from defsent_plus.encoders.encoding import batching_for, device_for_run
    from defsent_plus.encoders.models import load_encoder

    sentences = sentences_of_set(sentence_set, senteval_dir)
    device = device_for_run()
    encoder = load_encoder(model_dir).to(device)
    batch, max_tokens = batching_for(device, batch_size)
    start = time.perf_counter()
    vectors = encoder.encode(sentences, pooling, batch_size=batch, max_length=max_length, progress=True,
                             desc=f"{label} {sentence_set}", max_tokens=max_tokens)
    seconds = time.perf_counter() - start
    record = write_embeddings(
        vectors, sentences, out_npy, out_json, label=label, model_dir=model_dir, sentence_set=sentence_set,
        pooling=pooling, batch_size=batch_size, max_length=max_length,
        batching={"batch_size": batch, "max_tokens": max_tokens},
        provenance=with_training(provenance(str(device), torch.get_num_threads(), training_seeds(model_dir)),
                                 training_provenance(model_dir)))
    log.info("%s: %d sentences of %s (%s pooling) in %.1f s (%.0f/s)", label, len(sentences), sentence_set, pooling,
             seconds, len(sentences) / max(seconds, 1e-9))
    return record


def write_embeddings(vectors: np.ndarray, sentences: Sequence[str], out_npy: str | Path, out_json: str | Path, *,
                     label: str, model_dir: str | Path, sentence_set: str, pooling: str, **details) -> dict:
    """Write one sentence set's vectors and their record (the record last, so a killed job never leaves a
    complete-looking pair); ``details``: how they were computed."""
    write_npy(out_npy, vectors.astype(np.float32, copy=False))
    record = {"encoder": label, "model_dir": str(model_dir), "sentence_set": sentence_set, "pooling": pooling,
              "sentences": len(sentences), "digest": sentences_digest(sentences), "dim": int(vectors.shape[1]),
              **details}
    write_json(out_json, record)
    return record


def training_card(model_dir: str | Path) -> dict:
    """A trained model's training card, empty for a model this workflow did not train."""
    from defsent_plus.names import TRAINING_CARD

    card = Path(model_dir) / TRAINING_CARD
    return read_json(card) if card.is_file() else {}


def training_seeds(model_dir: str | Path) -> dict:
    """The seed a trained model was trained with (its training card), empty for a model this workflow did not train."""
    seed = training_card(model_dir).get("seed")
    return {} if seed is None else {"training": seed}


def training_provenance(model_dir: str | Path) -> dict:
    """What a trained model was trained with (its training card's ``provenance``: versions, device, precision,
    threads, seed), empty for a model this workflow did not train or a card written before it was recorded."""
    return training_card(model_dir).get("provenance") or {}


def read_sentence_embeddings(npy: str | Path, record_json: str | Path,
                             sentences: Sequence[str]) -> tuple[dict[str, np.ndarray], dict]:
    """Stored vectors by sentence, checked against ``sentences`` (the set the reader loads), and their record."""
    record = read_json(record_json)
    if record["sentences"] != len(sentences) or record["digest"] != sentences_digest(sentences):
        raise DefSentError(record_json, f"encodes {record['sentences']} sentences (fingerprint {record['digest']}), "
                                        f"but the {record['sentence_set']!r} set now has {len(sentences)} "
                                        f"(fingerprint {sentences_digest(sentences)}): the data changed; re-run "
                                        "its embed job")
    vectors = read_npy(npy)
    if vectors.shape != (len(sentences), record["dim"]):
        raise DefSentError(npy, f"has shape {vectors.shape}, its record says ({len(sentences)}, {record['dim']})")
    return dict(zip(sentences, vectors, strict=True)), record


def stored_embed(vectors: dict[str, np.ndarray]) -> Embed:
    """An ``embed`` callable that looks sentences up in stored vectors (an evaluator's sentence outside the stored
    set is an error naming it, never a silent re-encoding)."""

    def embed(sentences: list[str]) -> np.ndarray:
        missing = [s for s in sentences if s not in vectors]
        if missing:
            raise DefSentError("stored embeddings", f"{len(missing)} sentences were not encoded, e.g. {missing[0]!r}")
        return np.stack([vectors[s] for s in sentences])

    return embed
