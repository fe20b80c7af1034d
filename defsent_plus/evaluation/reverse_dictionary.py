"""The reverse dictionary's shared protocol parts (001, Table 2's task on 000's held-out entries): a run's held-out
queries, ranks and per-split metrics, the like-for-like ``cosine`` protocol (every model's mean-pooled query
against the same AMP entry embeddings), intervals and paired tests, provenance. Each method's own protocol
(DefSent+'s entry ranking, DefSent's vocabulary ranking) is in its package (``defsent_plus.methods.<name>``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from defsent_plus.dictionary import read_dataset
from defsent_plus.encoders.encoding import batching_for, device_for_run
from defsent_plus.encoders.models import Encoder, load_encoder
from defsent_plus.errors import DefSentError
from defsent_plus.evaluation.embeddings import training_provenance, training_seeds
from defsent_plus.evaluation.ranking import ranking_bootstrap, ranking_metrics, ranks_of_targets
from defsent_plus.names import HELDOUT_SPLITS
from defsent_plus.provenance import provenance, with_training
from defsent_plus.spaces.entry_matrix import load_space

QUERY_COLUMNS = ("entry_id", "entry", "definition", "split")


def read_queries(path: str | Path, frame: pd.DataFrame) -> pd.DataFrame:
    """A queries parquet of the subset stage, checked against the dataset it was held out of."""
    path = Path(path)
    if not path.is_file():
        raise DefSentError(path, "queries file not found")
    queries = pd.read_parquet(path)
    missing = set(QUERY_COLUMNS) - set(queries.columns)
    if missing:
        raise DefSentError(path, f"not a queries file: missing columns {sorted(missing)}")
    ids = queries["entry_id"].to_numpy()
    if len(ids) and (ids.min() < 0 or ids.max() >= len(frame)):
        raise DefSentError(path, f"entry id out of range [0, {len(frame)})")
    wrong = queries["entry"].to_numpy() != frame["entry"].to_numpy()[ids]
    if wrong.any():
        row = queries.iloc[int(np.argmax(wrong))]
        raise DefSentError(path, f"query for {row.entry!r} points to entry {row.entry_id}, which is "
                                 f"{frame['entry'].iloc[row.entry_id]!r}: not the dataset it was held out of")
    for split in HELDOUT_SPLITS:
        if not (queries["split"] == split).any():
            raise DefSentError(path, f"no {split} queries")
    return queries


def query_ranks(vectors: np.ndarray | torch.Tensor, scores: Callable, targets: np.ndarray, chunk: int = 128
                ) -> np.ndarray:
    """1-based rank of each query's target (its column of the scores); ``vectors`` are the queries' encodings
    (encoded at once, so batched by length), ``scores`` maps ``chunk`` of them to ``[chunk, n_candidates]``
    (chunked for memory)."""
    ranks = [ranks_of_targets(scores(vectors[i : i + chunk]), targets[i : i + chunk])
             for i in range(0, len(vectors), chunk)]
    return np.concatenate(ranks) if ranks else np.empty(0, dtype=np.int64)


def split_metrics(ranks: np.ndarray, queries: pd.DataFrame, frame: pd.DataFrame) -> dict[str, dict]:
    """MRR, top-1/3/10 and counts per held-out split: queries, held-out entries and those without a query."""
    result = {}
    for split in HELDOUT_SPLITS:
        in_split = (queries["split"] == split).to_numpy()
        entries = int((frame["split"] == split).sum()) if "split" in frame.columns else 0
        result[split] = {**ranking_metrics(ranks[in_split]), "entries": entries,
                         "without_query": entries - int(in_split.sum())}
    return result


def unit_rows(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def cosine_ranks(encoder: Encoder, space: np.ndarray, queries: pd.DataFrame, batch_size: int = 128,
                 max_length: int = 128) -> np.ndarray:
    """Each query's entry rank by cosine of the encoder's mean-pooled query to ``space`` (the ``cosine`` protocol:
    no pooler, no head; the same entry embeddings for every model), every query encoded at once as
    :func:`batching_for` picks for the device (``batch_size`` queries scored at a time)."""
    space = unit_rows(space)
    vectors = unit_rows(encoded_queries(encoder, list(queries["definition"]), "mean", batch_size, max_length))
    return query_ranks(vectors, lambda chunk: chunk @ space.T, queries["entry_id"].to_numpy(), batch_size)


def encoded_queries(encoder: Encoder, sentences: Sequence[str], pooling: str, batch_size: int = 128,
                    max_length: int = 128) -> np.ndarray:
    """``sentences`` pooled by ``pooling`` on the run's device, all at once: sorted by length into the batches
    :func:`batching_for` picks for the device (a chunk of unsorted queries pads to its longest)."""
    encoder.to(device_for_run())
    batch, max_tokens = batching_for(encoder.device, batch_size)
    return encoder.encode(sentences, pooling, batch_size=batch, max_length=max_length, max_tokens=max_tokens)


def evaluate_baseline(base_model: str | Path, space_path: str | Path, dataset_path: str | Path,
                      queries_path: str | Path, batch_size: int = 128, max_length: int = 128) -> dict:
    """The untrained reference: the run's starting model's mean-pooled query against its own AMP entry space (the
    average mean-pooled definition of every entry) by cosine; no pooler, no training."""
    frame = read_dataset(dataset_path)
    queries = read_queries(queries_path, frame)
    ranks = cosine_ranks(load_encoder(base_model), load_space(space_path, len(frame)), queries, batch_size, max_length)
    return {"model": str(base_model), "entry_space": str(space_path), "pooling": "mean", "scoring": "cosine",
            "candidates": len(frame), **split_metrics(ranks, queries, frame)}


def cosine_splits(ranks: np.ndarray, queries: pd.DataFrame) -> dict[str, dict]:
    return {split: ranking_metrics(ranks[(queries["split"] == split).to_numpy()]) for split in HELDOUT_SPLITS}


def ranks_by_split(ranks: np.ndarray, queries: pd.DataFrame) -> dict[str, np.ndarray]:
    return {split: ranks[(queries["split"] == split).to_numpy()] for split in HELDOUT_SPLITS}


def uncertainty(ranks: dict[str, dict[str, dict[str, np.ndarray]]], like_for_like: Sequence[str],
                options: dict) -> tuple[dict[str, dict], dict[str, dict]]:
    """``ranks[label][protocol][split]``: ranks of the same queries by ``trained`` and ``base``. Per label the
    percentile intervals of every metric, ``{protocol: {split: {metric: [low, high]}}}``, and for the protocols
    both models are scored by alike (``like_for_like``) the paired test trained − base, ``{protocol: {split:
    {metric: {difference, low, high, p}}}}`` (queries resampled together: :func:`ranking_bootstrap`)."""
    intervals: dict[str, dict] = {label: {} for label in ranks}
    paired: dict[str, dict] = {}
    for protocol, splits in ranks["trained"].items():
        for split, trained in splits.items():
            resampled = ranking_bootstrap([trained, ranks["base"][protocol][split]], options)
            for m, label in enumerate(("trained", "base")):
                intervals[label].setdefault(protocol, {})[split] = {
                    metric: [i.low, i.high] for metric, i in resampled.intervals(m).items()}
            if protocol in like_for_like:
                paired.setdefault(protocol, {})[split] = {
                    metric: {"difference": t.difference.value, "low": t.difference.low, "high": t.difference.high,
                             "p": t.p_value} for metric, t in resampled.paired(0, 1).items()}
    return intervals, paired


def with_uncertainty(results: dict[str, dict], ranks: dict, like_for_like: Sequence[str],
                     options: dict | None) -> dict:
    """The results with their ``intervals`` and the ``paired`` tests (none without ``options``)."""
    if options is None:
        return results
    intervals, paired = uncertainty(ranks, like_for_like, options)
    return {**{label: {**model, "intervals": intervals[label]} for label, model in results.items()},
            "paired": paired, "bootstrap": dict(options)}


def ranking_provenance(model_dir: str | Path, bootstrap: dict | None, **seeds: int) -> dict:
    """What a run's reverse-dictionary numbers were computed with (:func:`defsent_plus.provenance.provenance`: versions,
    device, precision, threads) and their seeds: the trained model's training seed, the bootstrap's and ``seeds``
    (e.g. an initialised head's); with the trained model's own training provenance (``trained_with``)."""
    drawn = {**training_seeds(model_dir), **seeds, **({"bootstrap": bootstrap["seed"]} if bootstrap else {})}
    record = provenance(str(device_for_run()), torch.get_num_threads(), drawn)
    return with_training(record, training_provenance(model_dir))


def only(paths: Sequence[str | Path]) -> str | Path:
    """The one file of a rule input that lists exactly one."""
    if isinstance(paths, str | Path):
        return paths
    if len(paths) != 1:
        raise DefSentError("reverse dictionary", f"expected one starting-model entry space, got {list(paths)}")
    return paths[0]

