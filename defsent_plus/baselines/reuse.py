"""The embedding stage's vectors read from a baselines cache instead of a second forward pass.

A template-``none`` pass sorts and batches the STS sentences of its evaluation split exactly as rule ``embed`` does,
and its ``cls``, ``mean`` and ``max`` aggregations are ``embed``'s pooling functions; where it keeps the last layer
alone with one of them (:func:`defsent_plus.baselines.spec.caches_last_layer`), its rows are ``embed``'s vectors bit
for bit. The plan (:meth:`defsent_plus.pipeline.plan.Plan.embedding_job`) then sends that ``embed`` job here.
STS-B dev keeps its own pass: most of its sentences are STS sentences too, so in the cache they are no block of their
own that could be batched as ``embed`` batches the dev set.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from defsent_plus.baselines.sentences import evaluation_set
from defsent_plus.baselines.spec import ENCODER, INDEX, cache_file
from defsent_plus.errors import DefSentError
from defsent_plus.evaluation.embeddings import sentences_of_set, training_provenance, write_embeddings
from defsent_plus.evaluation.sts import STS_TASKS
from defsent_plus.io import read_json, read_npy, sentences_digest
from defsent_plus.provenance import with_training

log = logging.getLogger(__name__)
EVALUATION_SPLIT = "eval"


def last_layer_name(index: dict, root: Path) -> str:
    """The cache's name of the layer set that is the last layer alone."""
    last = [index["n_layers"]]
    names = [name for name, layers in index["layers"].items() if layers == last]
    if not names:
        raise DefSentError(root / INDEX, f"caches no layer set of the last layer ({index['n_layers']}) alone")
    return names[0]


def cached_vectors(root: Path, index: dict, evaluation: Sequence[str], sentences: Sequence[str],
                   aggregation: str) -> tuple[np.ndarray, Path]:
    """float32 rows of ``sentences`` (each one of the cache's evaluation sentences) from the cached last layer with
    ``aggregation``, and the file they come from."""
    if index["eval_digest"] != sentences_digest(evaluation):
        raise DefSentError(root, "was built from other evaluation sentences (the STS data or baselines.alignment "
                                 "changed): re-run its baseline_embed job")
    position = {sentence: row for row, sentence in enumerate(evaluation)}
    missing = [s for s in sentences if s not in position]
    if missing:
        raise DefSentError(root, f"{len(missing)} sentences are not in its evaluation split, e.g. {missing[0]!r}")
    path = cache_file(root, last_layer_name(index, root), ENCODER, aggregation, EVALUATION_SPLIT)
    vectors = read_npy(path)
    return np.ascontiguousarray(vectors[[position[s] for s in sentences]], dtype=np.float32), path


def write_cached_sentence_embeddings(*, cache_dir: str | Path, model_dir: str | Path, senteval_dir: str | Path,
                                     sentence_set: str, pooling: str, source: dict, out_npy: str | Path,
                                     out_json: str | Path, label: str) -> dict:
    """The embed job's vectors and record for a set the baselines cache ``cache_dir`` holds (``source``: the plan's
    aggregation, batch size, max_length and alignment options); the record names the cache file and carries the
    provenance of the forward pass that computed it."""
    start = time.perf_counter()
    root = Path(cache_dir)
    index = read_json(root / INDEX)
    sentences = sentences_of_set(sentence_set, senteval_dir)
    evaluation = evaluation_set(senteval_dir, STS_TASKS, source["alignment"]).sentences
    vectors, path = cached_vectors(root, index, evaluation, sentences, source["aggregation"])
    seconds = time.perf_counter() - start
    record = write_embeddings(
        vectors, sentences, out_npy, out_json, label=label, model_dir=model_dir, sentence_set=sentence_set,
        pooling=pooling, batch_size=source["batch_size"], max_length=source["max_length"], source=str(path),
        provenance=with_training(index.get("provenance", {}), training_provenance(model_dir)))
    log.info("%s: %d sentences of %s (%s pooling) read from %s in %.1f s (no forward pass)", label, len(sentences),
             sentence_set, pooling, path, seconds)
    return record
