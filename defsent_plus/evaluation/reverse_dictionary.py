"""Reverse dictionary (001, Table 2): rank every entry of an entry space for a definition-like query.

A trained model's pooler projects the pooled query into the entry space it was trained against, and the
entries are ranked by h · Eᵀ: the training objective's logits, computed by the objective itself
(:meth:`defsent_plus.methods.entry_projection.EntryProjection.logits`). :func:`evaluate_queries` scores the
held-out queries of a subset (``dictionary.hold_out_queries``): definitions of dev/test entries that no entry
embedding and no training example has seen, ranked among all entries of the space.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from defsent_plus.dictionary import HELDOUT_SPLITS, definition_pairs, read_dataset
from defsent_plus.encoders.encoding import tokenize_batch
from defsent_plus.encoders.models import Encoder, load_encoder
from defsent_plus.encoders.runtime import autocast_for, device_for_run
from defsent_plus.errors import DefSentError
from defsent_plus.evaluation.ranking import ranking_metrics, ranks_of_targets
from defsent_plus.io import atomic_path, read_json, write_json
from defsent_plus.methods import method_of
from defsent_plus.methods.base import resolve
from defsent_plus.methods.entry_projection import EntryProjection
from defsent_plus.methods.masked_lm import (
    headword_token_ids,
    load_defsent_model,
    masked_lm_head,
    word_logits,
)
from defsent_plus.names import RANKING_METRICS
from defsent_plus.spaces.entry_matrix import load_space
from defsent_plus.training.task import TRAINING_CARD

log = logging.getLogger(__name__)
QUERY_COLUMNS = ("entry_id", "entry", "definition", "split")
METRIC_COLUMNS = RANKING_METRICS
HEADWORD_PROTOCOLS = ("all_definitions", "heldout_queries")  # DefSent's: every definition; DefSent+'s queries


@torch.inference_mode()
def entry_logits(encoder: Encoder, space: torch.Tensor, sentences: Sequence[str], pooling: str,
                 batch_size: int = 128, max_length: int = 128) -> np.ndarray:
    """``[n_sentences, n_entries]`` scores h · Eᵀ of the pooler-projected sentences (DefSent+'s training logits)."""
    encoder.model.eval()
    device = next(encoder.model.parameters()).device
    projection = EntryProjection(space, encoder.pooler, pooling).to(device)
    out = []
    for start in range(0, len(sentences), batch_size):
        batch = tokenize_batch(encoder.tokenizer, sentences[start : start + batch_size], max_length).to(device)
        with autocast_for(device):
            hidden = encoder.model(**batch).last_hidden_state.float()
        out.append(projection.logits(hidden, batch["attention_mask"]).cpu().numpy())
    return np.concatenate(out) if out else np.empty((0, len(space)), dtype=np.float32)


class ReverseDictionary:
    """A trained model with the entry space and entries it was trained against."""

    def __init__(self, model_dir: str | Path, space_path: str | Path | None = None,
                 dataset_path: str | Path | None = None, pooling: str | None = None):
        card_path = Path(model_dir) / TRAINING_CARD
        card = read_json(card_path) if card_path.is_file() else {}
        dataset_path, space_path = dataset_path or card.get("dataset"), space_path or card.get("entry_space")
        if not dataset_path or not space_path:
            raise DefSentError(model_dir, f"no {TRAINING_CARD}: pass the entry space and the dataset explicitly")
        frame = read_dataset(dataset_path)
        self.entries = list(frame["entry"])
        self.frame = frame
        self.space = torch.from_numpy(load_space(space_path, len(frame)))
        self.pooling = pooling or card.get("pooling", "cls")
        self.encoder = load_encoder(model_dir)

    def query(self, sentences: Sequence[str], top_k: int = 10) -> list[list[tuple[str, float]]]:
        """The ``top_k`` entries and scores for each sentence."""
        if not sentences or any(not s.strip() for s in sentences):
            raise DefSentError("query", "expected at least one non-empty sentence")
        logits = entry_logits(self.encoder, self.space, list(sentences), self.pooling)
        best = np.argsort(-logits, axis=1, kind="stable")[:, :top_k]
        return [[(self.entries[i], float(row[i])) for i in idx] for row, idx in zip(logits, best, strict=True)]

    def evaluate(self, entries: Sequence[str]) -> dict[str, float]:
        """MRR and top-k accuracy of ranking each listed entry's definitions among all entries."""
        index = {e: i for i, e in enumerate(self.entries)}
        missing = [e for e in entries if e not in index]
        if missing:
            raise DefSentError("reverse dictionary", f"{len(missing)} entries not in the dataset, e.g. {missing[:3]}")
        subset = self.frame.iloc[sorted(index[e] for e in entries)]
        texts, local_ids = definition_pairs(subset.reset_index(drop=True))
        targets = subset.index.to_numpy()[local_ids]
        logits = entry_logits(self.encoder, self.space, texts, self.pooling)
        return ranking_metrics(ranks_of_targets(logits, targets))


# ------------------------------------------------------------------------------- held-out evaluation


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


def query_ranks(scores: Callable[[list[str]], np.ndarray], queries: pd.DataFrame, chunk: int = 128) -> np.ndarray:
    """1-based rank of each query's entry; ``scores`` maps sentences to ``[n, n_entries]`` (chunked for memory)."""
    texts, targets = list(queries["definition"]), queries["entry_id"].to_numpy()
    ranks = [ranks_of_targets(scores(texts[i : i + chunk]), targets[i : i + chunk])
             for i in range(0, len(texts), chunk)]
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


def trained_space(model_dir: str | Path, spaces: Sequence[str | Path], dataset_path: str | Path) -> str:
    """The entry space a trained model's pooler was trained against (its training card), checked to be one of
    ``spaces`` and built on ``dataset_path``."""
    card = read_json(Path(model_dir) / TRAINING_CARD)
    space, dataset = card.get("entry_space"), card.get("dataset")
    if space is None or Path(space).resolve() not in {Path(p).resolve() for p in spaces}:
        raise DefSentError(Path(model_dir) / TRAINING_CARD, f"trained on entry space {space!r}, not one of "
                                                             f"{[str(p) for p in spaces]}")
    if dataset is None or Path(dataset).resolve() != Path(dataset_path).resolve():
        raise DefSentError(Path(model_dir) / TRAINING_CARD, f"trained on dataset {dataset!r}, not {dataset_path}")
    return str(space)


def evaluate_queries(model_dir: str | Path, space_path: str | Path, dataset_path: str | Path,
                     queries_path: str | Path, pooling: str | None = None, batch_size: int = 128,
                     max_length: int = 128) -> dict:
    """Held-out reverse dictionary of a trained model: its pooler's h · Eᵀ against the space it was trained on;
    MRR and top-k accuracy (%) per split over all entries of the space."""
    rd = ReverseDictionary(model_dir, space_path, dataset_path, pooling)
    queries = read_queries(queries_path, rd.frame)
    rd.encoder.to(device_for_run())
    ranks = query_ranks(lambda texts: entry_logits(rd.encoder, rd.space, texts, rd.pooling, batch_size, max_length),
                        queries, batch_size)
    return {"model": str(model_dir), "entry_space": str(space_path), "pooling": rd.pooling, "scoring": "dot",
            "candidates": len(rd.entries), **split_metrics(ranks, queries, rd.frame)}


def evaluate_baseline(base_model: str | Path, space_path: str | Path, dataset_path: str | Path,
                      queries_path: str | Path, batch_size: int = 128, max_length: int = 128) -> dict:
    """The untrained reference: the run's starting model's mean-pooled query against its own AMP entry space (the
    average mean-pooled definition of every entry) by cosine; no pooler, no training."""
    frame = read_dataset(dataset_path)
    queries = read_queries(queries_path, frame)
    space = load_space(space_path, len(frame))
    space = space / np.maximum(np.linalg.norm(space, axis=1, keepdims=True), 1e-12)
    encoder = load_encoder(base_model).to(device_for_run())

    def cosines(texts: list[str]) -> np.ndarray:
        pooled = encoder.encode(texts, "mean", batch_size=batch_size, max_length=max_length)
        return (pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)) @ space.T

    ranks = query_ranks(cosines, queries, batch_size)
    return {"model": str(base_model), "entry_space": str(space_path), "pooling": "mean", "scoring": "cosine",
            "candidates": len(frame), **split_metrics(ranks, queries, frame)}


# ------------------------------------------------------------------ DefSent: ranking the vocabulary


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


def evaluate_headwords(encoder: Encoder, head: torch.nn.Module, pooling: str, dataset_path: str | Path,
                       queries_path: str | Path, batch_size: int = 128) -> dict:
    """A DefSent model ranks the WHOLE vocabulary for each definition: per split over all the split's definitions
    (``all_definitions``, DefSent's protocol) and over the held-out queries only (``heldout_queries``, the
    queries DefSent+'s reverse dictionary ranks its entries for)."""
    frame = read_dataset(dataset_path)
    if "split" not in frame.columns:
        raise DefSentError(dataset_path, "no held-out split: DefSent's reverse dictionary needs a subset with "
                                         "heldout (config subsets.<name>.heldout)")
    queries = read_queries(queries_path, frame)
    token_ids = headword_token_ids(encoder.tokenizer, list(frame["entry"]))

    def ranks(texts: list[str], targets: np.ndarray) -> np.ndarray:
        chunks = [ranks_of_targets(word_logits(encoder, head, texts[i: i + batch_size], pooling, batch_size),
                                   targets[i: i + batch_size]) for i in range(0, len(texts), batch_size)]
        return np.concatenate(chunks)

    examples = headword_examples(frame, queries, token_ids)
    result = {"pooling": pooling, "scoring": "vocabulary (masked-LM head)",
              "candidates": int(encoder.model.config.vocab_size),
              "not_single_token": int(sum(t is None for t in token_ids))}
    result["all_definitions"] = {split: ranking_metrics(ranks(*examples[split])) for split in examples}
    heldout = queries[[token_ids[e] is not None for e in queries["entry_id"]]]
    result["heldout_queries"] = {
        split: ranking_metrics(ranks(list(heldout.definition[heldout.split == split]),
                                     np.array([token_ids[e] for e in heldout.entry_id[heldout.split == split]])))
        for split in HELDOUT_SPLITS}
    return result


def write_headword_ranking(*, method: str, model_dir: str | Path, dataset: str | Path, queries: str | Path,
                           base_model: str | Path, pooling: str, out_json: str | Path, out_tsv: str | Path,
                           out_md: str | Path, batch_size: int = 128, title: str = "", **_unused) -> dict:
    """DefSent's reverse dictionary (the ``vocabulary`` protocol) for a run's final model (its trained head) and its
    starting model (its own masked-LM head, seeded initialisation where it has none); JSON, TSV and markdown."""
    trained_encoder, trained_head = load_defsent_model(model_dir)
    base_encoder = load_encoder(base_model).to(device_for_run())
    base_head, info = masked_lm_head(base_encoder, seed=0)
    results = {
        "trained": {"model": str(model_dir), **evaluate_headwords(trained_encoder, trained_head, pooling, dataset,
                                                                  queries, batch_size)},
        "base": {"model": str(base_model), "head": info, **evaluate_headwords(
            base_encoder, base_head.to(device_for_run()).eval(), pooling, dataset, queries, batch_size)},
    }
    table = headword_table(results)
    write_json(out_json, {"method": method, **results})
    with atomic_path(out_tsv) as tmp:
        table.to_csv(tmp, sep="\t", index=False, float_format="%.4f")
    description = method_of(method).reverse_dictionary.description
    with atomic_path(out_md) as tmp:
        tmp.write_text(f"# {title}\n\n{description}\n\n" + table.to_markdown(index=False, floatfmt=".3f")
                       + "\n", encoding="utf-8")
    return results


def headword_table(results: dict[str, dict]) -> pd.DataFrame:
    """One row per (model, protocol, split)."""
    return pd.DataFrame([{"model": label, "protocol": protocol, "split": split, "candidates": r["candidates"],
                          "queries": metrics["queries"], **{k: metrics[k] for k in METRIC_COLUMNS}}
                         for label, r in results.items() for protocol in HEADWORD_PROTOCOLS
                         for split, metrics in r[protocol].items()])


def headword_ranking_splits(model: dict) -> dict[str, dict]:
    """One model's part of a ``vocabulary``-protocol JSON as {protocol: {split: metrics}} (comparison tables)."""
    return {protocol: model[protocol] for protocol in HEADWORD_PROTOCOLS}


def entry_ranking_splits(model: dict) -> dict[str, dict]:
    """One model's part of an ``entries``-protocol JSON as {protocol: {split: metrics}} (comparison tables)."""
    return {"heldout_queries": {split: model[split] for split in HELDOUT_SPLITS}}


def results_table(results: dict[str, dict]) -> pd.DataFrame:
    """One row per (model label, split): candidates, queries, MRR and top-k accuracy."""
    rows = [{"model": label, "split": split, "scoring": result["scoring"], "candidates": result["candidates"],
             "queries": result[split]["queries"], **{k: result[split][k] for k in METRIC_COLUMNS}}
            for label, result in results.items() for split in HELDOUT_SPLITS]
    return pd.DataFrame(rows)


def results_markdown(results: dict[str, dict], table: pd.DataFrame, title: str, description: str) -> str:
    """The report page: a title, what is measured, and the table with readable model labels."""
    shown = table.assign(model=table["model"].map({"trained": "DefSent+ final, dev-selected",
                                                   "base": "starting model, untrained by this run"}))
    return (f"# {title}\n\n{description} MRR (full ranking), MRR@10 and top-k accuracy (%) of each "
            f"held-out definition's entry among all {results['trained']['candidates']} entries.\n\n"
            + shown.to_markdown(index=False, floatfmt=".3f") + "\n")


def write_entry_ranking(
    *,
    method: str,
    model_dir: str | Path,
    spaces: Sequence[str | Path],
    dataset: str | Path,
    queries: str | Path,
    base_model: str | Path,
    base_space: Sequence[str | Path],
    out_json: str | Path,
    out_tsv: str | Path,
    out_md: str | Path,
    batch_size: int = 128,
    max_length: int = 128,
    title: str = "Reverse dictionary on held-out entries",
    **_unused,
) -> dict:
    """The ``entries`` protocol: score a run's final model against the space it was trained on (one of
    ``spaces``), and the untrained ``base_model`` against its AMP space (``base_space``, one file) by cosine, on the
    held-out ``queries`` of ``dataset``; JSON, TSV and markdown."""
    space = trained_space(model_dir, spaces, dataset)
    results = {
        "trained": evaluate_queries(model_dir, space, dataset, queries, None, batch_size, max_length),
        "base": evaluate_baseline(base_model, only(base_space), dataset, queries, batch_size, max_length),
    }
    for label, result in results.items():
        log.info("%s: %s", label, {split: {k: round(v, 3) for k, v in result[split].items()} for split in
                                   HELDOUT_SPLITS})
    table = results_table(results)
    write_json(out_json, {"method": method, **results})
    with atomic_path(out_tsv) as tmp:
        table.to_csv(tmp, sep="\t", index=False, float_format="%.4f")
    with atomic_path(out_md) as tmp:
        tmp.write_text(results_markdown(results, table, title, method_of(method).reverse_dictionary.description),
                       encoding="utf-8")
    return results


def only(paths: Sequence[str | Path]) -> str | Path:
    """The one file of a rule input that lists exactly one."""
    if isinstance(paths, str | Path):
        return paths
    if len(paths) != 1:
        raise DefSentError("reverse dictionary", f"expected one starting-model entry space, got {list(paths)}")
    return paths[0]


def write_run_reverse_dictionary(*, method: str, **job) -> dict:
    """A run's reverse dictionary by its method's declared protocol (``job``: the protocol writer's arguments)."""
    protocol = method_of(method, "reverse dictionary").reverse_dictionary
    if protocol is None:
        raise DefSentError("reverse dictionary", f"method {method!r} declares no reverse-dictionary protocol")
    return resolve(protocol.write)(method=method, **job)
