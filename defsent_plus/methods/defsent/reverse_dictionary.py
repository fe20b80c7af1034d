"""DefSent's reverse dictionary (001, Table 2): each definition ranks the whole token vocabulary through the model's
masked-LM head (the ``vocabulary`` protocol), per split over every definition of its entries and over the held-out
queries, beside every model's like-for-like ``cosine`` protocol. Light at import (the declaration reads its
results with :func:`headword_ranking_splits`); ranking loads torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from defsent_plus.dictionary.table import definition_pairs, read_dataset
from defsent_plus.errors import DefSentError
from defsent_plus.evaluation.reverse_dictionary import (
    cosine_ranks,
    encoded_queries,
    metrics_by_split,
    only,
    query_ranks,
    ranking_page,
    ranks_by_split,
    read_queries,
    write_ranking,
)
from defsent_plus.names import COSINE, HELDOUT_SPLITS
from defsent_plus.spaces.entry_matrix import load_space

if TYPE_CHECKING:
    import torch

    from defsent_plus.encoders.models import Encoder

HEADWORD_PROTOCOLS = ("all_definitions", "heldout_queries")  # DefSent's: every definition; DefSent+'s queries


def headword_ranking_splits(model: dict) -> dict[str, dict]:
    """One model's part of a ``vocabulary``-protocol JSON as {protocol: {split: metrics}} (comparison tables)."""
    return {protocol: model[protocol] for protocol in (*HEADWORD_PROTOCOLS, COSINE) if protocol in model}


def headword_examples(frame: pd.DataFrame, queries: pd.DataFrame, token_ids: list[int | None]
                      ) -> dict[str, tuple[list[str], np.ndarray]]:
    """DefSent's protocol (001, Table 2): per split, EVERY definition of the split's entries (for dev/test: the
    ones left in the dictionary plus the held-out query) with its headword's token id as the target."""
    texts, entry_ids = definition_pairs(frame)
    splits = frame["split"].to_numpy()[entry_ids]
    examples = {}
    for split in ("train", *HELDOUT_SPLITS):
        chosen = [(t, e) for t, e, s in zip(texts, entry_ids, splits, strict=True) if s == split]
        chosen += [(q.definition, q.entry_id) for q in queries.itertuples() if q.split == split]
        chosen = [(t, token_ids[e]) for t, e in chosen if token_ids[e] is not None]
        examples[split] = ([t for t, _ in chosen], np.array([i for _, i in chosen], dtype=np.int64))
    return examples


def heldout_frame(dataset_path: str | Path) -> pd.DataFrame:
    """A dataset with a held-out split (DefSent's reverse dictionary ranks per split)."""
    frame = read_dataset(dataset_path)
    if "split" not in frame.columns:
        raise DefSentError(dataset_path, "no held-out split: DefSent's reverse dictionary needs a subset with "
                                         "heldout (config subsets.<name>.heldout)")
    return frame


def headword_model(encoder: Encoder, head: torch.nn.Module, pooling: str, frame: pd.DataFrame,
                   queries: pd.DataFrame, space: np.ndarray, batch_size: int = 128, max_length: int = 128
                   ) -> tuple[dict[str, dict[str, np.ndarray]], dict]:
    """One model's ranks ``{protocol: {split: ranks}}`` and its part of a ``vocabulary``-protocol JSON: its rank of
    each example's headword token among the WHOLE vocabulary per :data:`HEADWORD_PROTOCOLS` (``heldout_queries``:
    those with a single-token headword), then the ``cosine`` protocol against ``space``."""
    import torch

    from defsent_plus.dictionary.datasets import single_token_ids
    from defsent_plus.methods.defsent.objective import check_pooling, head_logits

    token_ids = single_token_ids(encoder.tokenizer, list(frame["entry"]))  # dataset c's rule
    check_pooling(pooling)

    def ranked(texts: list[str], targets: np.ndarray) -> np.ndarray:
        pooled = torch.from_numpy(encoded_queries(encoder, texts, pooling, batch_size))  # at once: batched by length
        return query_ranks(pooled, lambda chunk: head_logits(head, chunk), targets, batch_size)

    examples = headword_examples(frame, queries, token_ids)
    heldout = queries[[token_ids[e] is not None for e in queries["entry_id"]]]
    ranks = {
        "all_definitions": {split: ranked(*examples[split]) for split in examples},
        "heldout_queries": {split: ranked(list(heldout.definition[heldout.split == split]),
                                          np.array([token_ids[e] for e in heldout.entry_id[heldout.split == split]]))
                            for split in HELDOUT_SPLITS},
        COSINE: ranks_by_split(cosine_ranks(encoder, space, queries, batch_size, max_length), queries),
    }
    return ranks, {"pooling": pooling, "scoring": "vocabulary (masked-LM head)",
                   "candidates": int(encoder.model.config.vocab_size),
                   "not_single_token": int(sum(t is None for t in token_ids)),
                   **{protocol: metrics_by_split(splits) for protocol, splits in ranks.items()},
                   "cosine_candidates": len(frame)}


def write_headword_ranking(*, method: str, model_dir: str | Path, dataset: str | Path, queries: str | Path,
                           base_model: str | Path, base_space: Sequence[str | Path], pooling: str,
                           out_json: str | Path, out_tsv: str | Path, out_md: str | Path, batch_size: int = 128,
                           max_length: int = 128, title: str = "", bootstrap: dict | None = None,
                           description: str = "", **_unused) -> dict:
    """DefSent's reverse dictionary (the ``vocabulary`` protocol) for a run's final model (its trained head) and its
    starting model (its own masked-LM head, seeded initialisation where it has none), and both by the ``cosine``
    protocol against the starting model's AMP space (``base_space``), written by :func:`write_ranking`."""
    from defsent_plus.encoders.encoding import device_for_run
    from defsent_plus.encoders.models import load_encoder  # torch
    from defsent_plus.methods.defsent.objective import load_defsent_model, masked_lm_head

    frame = heldout_frame(dataset)
    held_out = read_queries(queries, frame)
    space = load_space(only(base_space), len(frame))
    trained_encoder, trained_head = load_defsent_model(model_dir)
    base_encoder = load_encoder(base_model).to(device_for_run())
    base_head, info = masked_lm_head(base_encoder, seed=0)
    ranks, results = {}, {}
    for label, model, encoder, head, extra in (
            ("trained", model_dir, trained_encoder, trained_head, {}),
            ("base", base_model, base_encoder, base_head.to(device_for_run()).eval(), {"head": info})):
        ranks[label], result = headword_model(encoder, head, pooling, frame, held_out, space, batch_size, max_length)
        results[label] = {"model": str(model), **extra, **result}
    return write_ranking(method, results, ranks, (*HEADWORD_PROTOCOLS, COSINE), headword_ranking_splits,
                         lambda results, table: ranking_page(title, description, table, results), model_dir=model_dir,
                         bootstrap=bootstrap, out_json=out_json, out_tsv=out_tsv, out_md=out_md, base_head=info["seed"])
