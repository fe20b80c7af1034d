"""Stored sentence embeddings: the named sentence sets the evaluators read, the ``embed`` job that encodes one set with
one encoder and pooling (float32 npy beside a JSON record of the sentences' count and fingerprint, the model and the
options), and the ``score`` jobs, which score those vectors with one evaluator instead of encoding again.

A set is every distinct sentence of its benchmark in first-seen order, normalised as its loader reads it; reading
checks the record against the sentences the reader loads. Writing needs torch; reading and scoring do not.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

from defsent_plus.errors import DefSentError
from defsent_plus.evaluation.evaluators import evaluator_of
from defsent_plus.evaluation.sts import STS_TASKS, Embed, load_sts_parts
from defsent_plus.io import atomic_path, read_json, read_npy, sentences_digest, write_json, write_npy
from defsent_plus.names import SENTENCE_SETS as SENTENCE_SET_NAMES
from defsent_plus.names import require_same_names
from defsent_plus.provenance import provenance, with_training

log = logging.getLogger(__name__)


def distinct(sentences: Iterable[str]) -> list[str]:
    """Every distinct sentence once, in first-seen order."""
    return list(dict.fromkeys(sentences))


def sts_sentences(senteval_dir: str | Path, tasks: Sequence[str] = STS_TASKS) -> list[str]:
    """The sentences of STS ``tasks``: by default the seven (STS12-16 with every subset, STS-B test, SICK-R test)."""
    return distinct(s for task in tasks for pairs in load_sts_parts(senteval_dir, task)
                    for s in (*pairs.sentences1, *pairs.sentences2))


def transfer_sentences(senteval_dir: str | Path) -> list[str]:
    """Every split of the seven SentEval transfer tasks."""
    from defsent_plus.evaluation.senteval import TRANSFER_TASKS, load_transfer_task, sentences_of  # scikit-learn

    return distinct(s for task in TRANSFER_TASKS for data in load_transfer_task(senteval_dir, task).values()
                    for s in sentences_of(data))


SENTENCE_SETS: dict[str, Callable[[str | Path], list[str]]] = {
    "sts": sts_sentences,
    "stsb-dev": lambda senteval_dir: sts_sentences(senteval_dir, ("STSB-dev",)),  # the selection score's
    "senteval": transfer_sentences,
}
"""Sentence-set name -> its sentences from SentEval's data directory."""
require_same_names(SENTENCE_SETS, SENTENCE_SET_NAMES, "embeddings.SENTENCE_SETS")

def sentences_of_set(name: str, senteval_dir: str | Path) -> list[str]:
    if name not in SENTENCE_SETS:
        raise DefSentError("sentence set", f"unknown sentence set {name!r}; expected one of {list(SENTENCE_SETS)}")
    return SENTENCE_SETS[name](senteval_dir)


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
    """:func:`training_card`'s ``provenance`` (versions, device, precision, threads, seed), else empty."""
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


def write_scores(*, evaluator: str, embeddings: str | Path, record: str | Path, senteval_dir: str | Path,
                 out_json: str | Path, options: dict, out_pairs: str | Path | None = None, label: str | None = None,
                 threads: int = 1) -> dict:
    """Score stored embeddings with the registered ``evaluator`` and its ``options`` (config-derived, the job's
    params); write its score file and, for a paired evaluator, the per-pair similarities to ``out_pairs``."""
    declared = evaluator_of(evaluator, where="rule score: evaluator")
    if declared.score is None:
        raise DefSentError("rule score", f"evaluator {evaluator!r} scores no stored embeddings")
    start = time.perf_counter()
    sentences = sentences_of_set(declared.sentence_set, senteval_dir)
    vectors, stored = read_sentence_embeddings(embeddings, record, sentences)
    scored = declared.score(vectors, Path(senteval_dir), options, threads)
    if "avg" not in scored.scores:
        raise DefSentError(f"evaluator {evaluator}", f"scored {sorted(scored.scores)}; a score needs 'avg' (its "
                                                     "tables' headline and plot)")
    if declared.paired:
        with atomic_path(out_pairs) as tmp:
            scored.pairs.to_parquet(tmp, index=False)
    result = {"model": label or stored["encoder"], "model_dir": stored["model_dir"], "pooling": stored["pooling"],
              "benchmark": evaluator, "scores": scored.scores, **scored.fields, "embeddings": stored}
    log.info("%s %s %s: %s in %.1f s", evaluator, result["model"], stored["pooling"],
             {k: round(v, 2) for k, v in scored.scores.items()}, time.perf_counter() - start)
    write_json(out_json, result)
    return result
