"""DefSent's reverse dictionary (001, Table 2): each definition ranks the whole token vocabulary through the model's
masked-LM head (the ``vocabulary`` protocol), per split over every definition of its entries and over the held-out
queries, beside every model's like-for-like ``cosine`` protocol.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from defsent_plus.dictionary import definition_pairs, read_dataset
from defsent_plus.encoders.encoding import device_for_run
from defsent_plus.encoders.models import Encoder, load_encoder
from defsent_plus.errors import DefSentError
from defsent_plus.evaluation.ranking import ranking_metrics
from defsent_plus.evaluation.ranking_tables import COSINE_DESCRIPTION, chance_note, interval_columns, paired_markdown
from defsent_plus.evaluation.reverse_dictionary import (
    cosine_ranks,
    encoded_queries,
    only,
    query_ranks,
    ranking_provenance,
    ranks_by_split,
    read_queries,
    with_uncertainty,
)
from defsent_plus.io import write_json, write_page, write_tsv
from defsent_plus.methods.defsent.objective import (
    check_pooling,
    head_logits,
    headword_token_ids,
    load_defsent_model,
    masked_lm_head,
)
from defsent_plus.methods.defsent.ranking import HEADWORD_PROTOCOLS
from defsent_plus.names import COSINE, HELDOUT_SPLITS, RANKING_METRICS
from defsent_plus.provenance import provenance_footer
from defsent_plus.spaces.entry_matrix import load_space

METRIC_COLUMNS = RANKING_METRICS


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


def headword_ranks(encoder: Encoder, head: torch.nn.Module, pooling: str, frame: pd.DataFrame,
                   queries: pd.DataFrame, batch_size: int = 128) -> dict[str, dict[str, np.ndarray]]:
    """A DefSent model's rank of each example's headword token among the WHOLE vocabulary, ``{protocol: {split:
    ranks}}``: per split over all the split's definitions (``all_definitions``, DefSent's protocol) and over the
    held-out queries with a single-token headword (``heldout_queries``, the queries DefSent+ ranks its entries for)."""
    token_ids = headword_token_ids(encoder.tokenizer, list(frame["entry"]))

    check_pooling(pooling)

    def ranks(texts: list[str], targets: np.ndarray) -> np.ndarray:
        pooled = torch.from_numpy(encoded_queries(encoder, texts, pooling, batch_size))  # at once: batched by length
        return query_ranks(pooled, lambda chunk: head_logits(head, chunk), targets, batch_size)

    examples = headword_examples(frame, queries, token_ids)
    heldout = queries[[token_ids[e] is not None for e in queries["entry_id"]]]
    return {
        "all_definitions": {split: ranks(*examples[split]) for split in examples},
        "heldout_queries": {split: ranks(list(heldout.definition[heldout.split == split]),
                                         np.array([token_ids[e] for e in heldout.entry_id[heldout.split == split]]))
                            for split in HELDOUT_SPLITS},
    }


def heldout_frame(dataset_path: str | Path) -> pd.DataFrame:
    """A dataset with a held-out split (DefSent's reverse dictionary ranks per split)."""
    frame = read_dataset(dataset_path)
    if "split" not in frame.columns:
        raise DefSentError(dataset_path, "no held-out split: DefSent's reverse dictionary needs a subset with "
                                         "heldout (config subsets.<name>.heldout)")
    return frame


def headword_result(encoder: Encoder, ranks: dict[str, dict[str, np.ndarray]], pooling: str,
                    frame: pd.DataFrame) -> dict:
    """One model's part of a ``vocabulary``-protocol JSON from its :func:`headword_ranks`."""
    token_ids = headword_token_ids(encoder.tokenizer, list(frame["entry"]))
    return {"pooling": pooling, "scoring": "vocabulary (masked-LM head)",
            "candidates": int(encoder.model.config.vocab_size),
            "not_single_token": int(sum(t is None for t in token_ids)),
            **{protocol: {split: ranking_metrics(r) for split, r in splits.items()}
               for protocol, splits in ranks.items()}}


def evaluate_headwords(encoder: Encoder, head: torch.nn.Module, pooling: str, dataset_path: str | Path,
                       queries_path: str | Path, batch_size: int = 128) -> dict:
    """A DefSent model ranks the whole vocabulary for each definition (:func:`headword_ranks`): MRR and top-k per
    protocol and split."""
    frame = heldout_frame(dataset_path)
    queries = read_queries(queries_path, frame)
    return headword_result(encoder, headword_ranks(encoder, head, pooling, frame, queries, batch_size), pooling, frame)


def write_headword_ranking(*, method: str, model_dir: str | Path, dataset: str | Path, queries: str | Path,
                           base_model: str | Path, base_space: Sequence[str | Path], pooling: str,
                           out_json: str | Path, out_tsv: str | Path, out_md: str | Path, batch_size: int = 128,
                           max_length: int = 128, title: str = "", bootstrap: dict | None = None,
                           description: str = "", **_unused) -> dict:
    """DefSent's reverse dictionary (the ``vocabulary`` protocol) for a run's final model (its trained head) and its
    starting model (its own masked-LM head, seeded initialisation where it has none), and both by the ``cosine``
    protocol against the starting model's AMP space (``base_space``); with ``bootstrap`` their intervals and paired
    tests; JSON (with its provenance), TSV and markdown (with a provenance footer)."""
    frame = heldout_frame(dataset)
    held_out = read_queries(queries, frame)
    space = load_space(only(base_space), len(frame))
    trained_encoder, trained_head = load_defsent_model(model_dir)
    base_encoder = load_encoder(base_model).to(device_for_run())
    base_head, info = masked_lm_head(base_encoder, seed=0)
    ranks = {
        "trained": headword_ranks(trained_encoder, trained_head, pooling, frame, held_out, batch_size),
        "base": headword_ranks(base_encoder, base_head.to(device_for_run()).eval(), pooling, frame, held_out,
                               batch_size),
    }
    results = {
        "trained": {"model": str(model_dir), **headword_result(trained_encoder, ranks["trained"], pooling, frame)},
        "base": {"model": str(base_model), "head": info, **headword_result(base_encoder, ranks["base"], pooling,
                                                                           frame)},
    }
    for label, encoder in (("trained", trained_encoder), ("base", base_encoder)):
        ranks[label][COSINE] = ranks_by_split(cosine_ranks(encoder, space, held_out, batch_size, max_length),
                                              held_out)
        results[label].update({COSINE: {split: ranking_metrics(r) for split, r in ranks[label][COSINE].items()},
                               "cosine_candidates": len(frame)})
    results = with_uncertainty(results, ranks, (*HEADWORD_PROTOCOLS, COSINE), bootstrap)
    results = {**results, "provenance": ranking_provenance(model_dir, bootstrap, base_head=info["seed"])}
    table = headword_table(results)
    write_json(out_json, {"method": method, **results})
    write_tsv(out_tsv, table, float_format="%.4f")
    write_page(out_md, f"# {title}\n\n{description}\n\n* {COSINE_DESCRIPTION}\n\n"
               + table.to_markdown(index=False, floatfmt=".3f") + "\n\n" + chance_note(table["candidates"]) + "\n"
               + paired_markdown(results)
               + provenance_footer([results["provenance"]]))
    return results


def headword_table(results: dict[str, dict]) -> pd.DataFrame:
    """One row per (model, protocol, split), with the intervals' bounds where computed."""
    return pd.DataFrame([{"model": label, "protocol": protocol, "split": split,
                          "candidates": r["candidates"] if protocol != COSINE else r["cosine_candidates"],
                          "queries": metrics["queries"], **{k: metrics[k] for k in METRIC_COLUMNS},
                          **interval_columns(results, label, protocol, split)}
                         for label in ("trained", "base") for r in [results[label]]
                         for protocol in (*HEADWORD_PROTOCOLS, COSINE) for split, metrics in r[protocol].items()])

