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
from defsent_plus.evaluation.embeddings import training_provenance, training_seeds
from defsent_plus.evaluation.ranking import ranking_bootstrap, ranking_metrics, ranks_of_targets
from defsent_plus.evaluation.ranking_tables import (
    COSINE,
    COSINE_DESCRIPTION,
    HEADWORD_PROTOCOLS,
    entry_ranking_splits,
    interval_columns,
    paired_markdown,
)
from defsent_plus.io import read_json, write_json, write_page, write_tsv
from defsent_plus.methods import method_of
from defsent_plus.methods.base import resolve
from defsent_plus.methods.entry_projection import EntryProjection
from defsent_plus.methods.masked_lm import (
    headword_token_ids,
    load_defsent_model,
    masked_lm_head,
    word_logits,
)
from defsent_plus.names import RANKING_METRICS, TRAINING_CARD
from defsent_plus.provenance import provenance, provenance_footer, with_training
from defsent_plus.spaces.entry_matrix import load_space
from defsent_plus.spaces.extension import extended_space

log = logging.getLogger(__name__)
QUERY_COLUMNS = ("entry_id", "entry", "definition", "split")
METRIC_COLUMNS = RANKING_METRICS


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


def unit_rows(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


SCORINGS = ("dot", "cosine")  # the trained pooler's h · Eᵀ; cosine of the mean-pooled sentence to an AMP space


def chosen_scoring(card: dict, requested: str | None) -> tuple[str, str]:
    """(scoring, why) for a model's training card: ``requested`` if given; else ``cosine`` when the training did
    not fit its objective (the card's fit diagnostic: its pooler's scores are noise), else ``dot``."""
    if requested is not None:
        if requested not in SCORINGS:
            raise DefSentError("--scoring", f"expected one of {SCORINGS}, got {requested!r}")
        return requested, ""
    fit = card.get("fit") or {}
    if fit.get("fitted", True):
        return "dot", ""
    return "cosine", (f"the model's training did not fit its objective ({fit.get('note', 'chance level')}), so its "
                      "pooler's entry scores are noise: ranking by cosine of the mean-pooled sentence to the AMP "
                      "entry space instead (--scoring dot forces the pooler)")


class ReverseDictionary:
    """A trained model with the entry space and entries it was trained against. ``scoring``: ``dot`` (the pooler's
    h · Eᵀ against that space), ``cosine`` (the mean-pooled sentence against ``cosine_space``, by default the AMP
    space beside the trained one), or None: :func:`chosen_scoring` (``note`` says why). ``search``: a larger
    dataset parquet whose every entry is ranked instead, in the trained space extended to it
    (:mod:`defsent_plus.spaces.extension`, base vectors cached in ``cache_dir``)."""

    def __init__(self, model_dir: str | Path, space_path: str | Path | None = None,
                 dataset_path: str | Path | None = None, pooling: str | None = None, scoring: str | None = None,
                 cosine_space: str | Path | None = None, search: str | Path | None = None,
                 cache_dir: str | Path | None = None):
        card_path = Path(model_dir) / TRAINING_CARD
        card = read_json(card_path) if card_path.is_file() else {}
        dataset_path, space_path = dataset_path or card.get("dataset"), space_path or card.get("entry_space")
        if not dataset_path or not space_path:
            raise DefSentError(model_dir, f"no {TRAINING_CARD}: pass the entry space and the dataset explicitly")
        self.pooling = pooling or card.get("pooling", "cls")
        self.encoder = load_encoder(model_dir)
        self.scoring, self.note = chosen_scoring(card, scoring)
        self.space_path = space_path
        if search is None:
            self.frame = read_dataset(dataset_path)
            self.dataset_path = dataset_path
            self.searched = f"{len(self.frame):,} entries of {dataset_path}, the model's training dataset"
            self.space = torch.from_numpy(load_space(space_path, len(self.frame)))
            if self.scoring == "cosine":
                self.cosine_space = unit_rows(amp_space(cosine_space, space_path, len(self.frame)))
        else:
            extended = extended_space(space_path, search, cache_dir)
            self.frame, self.dataset_path, self.searched = extended.frame, extended.dataset, extended.description()
            self.space = torch.from_numpy(extended.trained()) if self.scoring == "dot" else None
            if self.scoring == "cosine":
                self.cosine_space = unit_rows(extended.base("amp"))
        self.entries = list(self.frame["entry"])

    def scores(self, sentences: Sequence[str]) -> np.ndarray:
        """``[n_sentences, n_entries]`` scores by the chosen scoring."""
        if self.scoring == "dot":
            return entry_logits(self.encoder, self.space, list(sentences), self.pooling)
        return unit_rows(self.encoder.encode(list(sentences), "mean")) @ self.cosine_space.T

    def query(self, sentences: Sequence[str], top_k: int = 10) -> list[list[tuple[str, float]]]:
        """The ``top_k`` entries and scores for each sentence."""
        if not sentences or any(not s.strip() for s in sentences):
            raise DefSentError("query", "expected at least one non-empty sentence")
        return self.top(self.scores(sentences), top_k)

    def top(self, scores: np.ndarray, top_k: int = 10) -> list[list[tuple[str, float]]]:
        """The ``top_k`` entries and scores of each row of :meth:`scores`."""
        best = np.argsort(-scores, axis=1, kind="stable")[:, :top_k]
        return [[(self.entries[i], float(row[i])) for i in idx] for row, idx in zip(scores, best, strict=True)]

    def candidates(self) -> str:
        """What a query ranks: the number of entries and the dataset they come from."""
        return self.searched

    def expected_ranks(self, scores: np.ndarray, entry: str) -> list[int] | None:
        """The rank (1 = first) of ``entry`` in each row of :meth:`scores`; None when it is not a candidate."""
        if entry not in self.entries:
            return None
        column = self.entries.index(entry)
        return [int((row > row[column]).sum()) + 1 for row in scores]

    def evaluate(self, entries: Sequence[str]) -> dict[str, float]:
        """MRR and top-k accuracy of ranking each listed entry's definitions among all entries."""
        index = {e: i for i, e in enumerate(self.entries)}
        missing = [e for e in entries if e not in index]
        if missing:
            raise DefSentError("reverse dictionary", f"{len(missing)} entries not in the dataset, e.g. {missing[:3]}")
        subset = self.frame.iloc[sorted(index[e] for e in entries)]
        texts, local_ids = definition_pairs(subset.reset_index(drop=True))
        targets = subset.index.to_numpy()[local_ids]
        return ranking_metrics(ranks_of_targets(self.scores(texts), targets))


def amp_space(path: str | Path | None, trained_space: str | Path, n_entries: int) -> np.ndarray:
    """The AMP space for cosine scoring: ``path``, else ``amp.npy`` beside the trained space."""
    path = Path(path or Path(trained_space).with_name("amp.npy"))
    if not path.is_file():
        raise DefSentError(path, "no AMP entry space for the cosine scoring: pass one (--cosine-space)")
    return load_space(path, n_entries)


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


def dot_ranks(rd: ReverseDictionary, queries: pd.DataFrame, batch_size: int = 128, max_length: int = 128
              ) -> np.ndarray:
    """Each query's entry rank by a trained model's pooler: h · Eᵀ against the space it was trained on."""
    rd.encoder.to(device_for_run())
    return query_ranks(lambda texts: entry_logits(rd.encoder, rd.space, texts, rd.pooling, batch_size, max_length),
                       queries, batch_size)


def cosine_ranks(encoder: Encoder, space: np.ndarray, queries: pd.DataFrame, batch_size: int = 128,
                 max_length: int = 128) -> np.ndarray:
    """Each query's entry rank by cosine of the encoder's mean-pooled query to ``space`` (the ``cosine`` protocol:
    no pooler, no head; the same entry embeddings for every model)."""
    space = unit_rows(space)
    encoder.to(device_for_run())
    return query_ranks(lambda texts: unit_rows(encoder.encode(texts, "mean", batch_size=batch_size,
                                                              max_length=max_length)) @ space.T, queries, batch_size)


def evaluate_queries(model_dir: str | Path, space_path: str | Path, dataset_path: str | Path,
                     queries_path: str | Path, pooling: str | None = None, batch_size: int = 128,
                     max_length: int = 128) -> dict:
    """Held-out reverse dictionary of a trained model: its pooler's h · Eᵀ against the space it was trained on;
    MRR and top-k accuracy (%) per split over all entries of the space."""
    rd = ReverseDictionary(model_dir, space_path, dataset_path, pooling, scoring="dot")
    queries = read_queries(queries_path, rd.frame)
    ranks = dot_ranks(rd, queries, batch_size, max_length)
    return {"model": str(model_dir), "entry_space": str(space_path), "pooling": rd.pooling, "scoring": "dot",
            "candidates": len(rd.entries), **split_metrics(ranks, queries, rd.frame)}


def evaluate_baseline(base_model: str | Path, space_path: str | Path, dataset_path: str | Path,
                      queries_path: str | Path, batch_size: int = 128, max_length: int = 128) -> dict:
    """The untrained reference: the run's starting model's mean-pooled query against its own AMP entry space (the
    average mean-pooled definition of every entry) by cosine; no pooler, no training."""
    frame = read_dataset(dataset_path)
    queries = read_queries(queries_path, frame)
    ranks = cosine_ranks(load_encoder(base_model), load_space(space_path, len(frame)), queries, batch_size, max_length)
    return {"model": str(base_model), "entry_space": str(space_path), "pooling": "mean", "scoring": "cosine",
            "candidates": len(frame), **split_metrics(ranks, queries, frame)}


# ------------------------------------------------------- like for like: the cosine protocol, intervals, tests

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


def headword_ranks(encoder: Encoder, head: torch.nn.Module, pooling: str, frame: pd.DataFrame,
                   queries: pd.DataFrame, batch_size: int = 128) -> dict[str, dict[str, np.ndarray]]:
    """A DefSent model's rank of each example's headword token among the WHOLE vocabulary, ``{protocol: {split:
    ranks}}``: per split over all the split's definitions (``all_definitions``, DefSent's protocol) and over the
    held-out queries with a single-token headword (``heldout_queries``, the queries DefSent+ ranks its entries for)."""
    token_ids = headword_token_ids(encoder.tokenizer, list(frame["entry"]))

    def ranks(texts: list[str], targets: np.ndarray) -> np.ndarray:
        chunks = [ranks_of_targets(word_logits(encoder, head, texts[i: i + batch_size], pooling, batch_size),
                                   targets[i: i + batch_size]) for i in range(0, len(texts), batch_size)]
        return np.concatenate(chunks)

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
                           **_unused) -> dict:
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
    description = method_of(method).reverse_dictionary.description
    write_page(out_md, f"# {title}\n\n{description}\n\n* {COSINE_DESCRIPTION}\n\n"
               + table.to_markdown(index=False, floatfmt=".3f") + "\n" + paired_markdown(results)
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


def results_table(results: dict[str, dict]) -> pd.DataFrame:
    """One row per (model label, protocol, split): scoring, candidates, queries, MRR and top-k accuracy, and the
    intervals' bounds where computed."""
    rows = []
    for label in ("trained", "base"):
        result = results[label]
        for protocol, splits in entry_ranking_splits(result).items():
            scoring = result["scoring"] if protocol != COSINE else COSINE
            candidates = result["candidates"] if protocol != COSINE else result["cosine_candidates"]
            rows += [{"model": label, "protocol": protocol, "split": split, "scoring": scoring,
                      "candidates": candidates, "queries": metrics["queries"],
                      **{k: metrics[k] for k in METRIC_COLUMNS}, **interval_columns(results, label, protocol, split)}
                     for split, metrics in splits.items()]
    return pd.DataFrame(rows)


def results_markdown(results: dict[str, dict], table: pd.DataFrame, title: str, description: str) -> str:
    """The report page: a title, what is measured, the table with readable model labels, the paired tests and what
    the numbers were computed with (``results['provenance']``)."""
    shown = table.assign(model=table["model"].map({"trained": "DefSent+ final, dev-selected",
                                                   "base": "starting model, untrained by this run"}))
    return (f"# {title}\n\n{description} MRR (full ranking), MRR@10 and top-k accuracy (%) of each "
            f"held-out definition's entry among all {results['trained']['candidates']} entries; `heldout_queries` "
            f"rows: the trained model by its pooler (dot), the base by cosine.\n\n* {COSINE_DESCRIPTION}\n\n"
            + shown.to_markdown(index=False, floatfmt=".3f") + "\n" + paired_markdown(results)
            + provenance_footer([results.get("provenance", {})]))


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
    bootstrap: dict | None = None,
    **_unused,
) -> dict:
    """The ``entries`` protocol: score a run's final model against the space it was trained on (one of
    ``spaces``), and the untrained ``base_model`` against its AMP space (``base_space``, one file) by cosine, on the
    held-out ``queries`` of ``dataset``; the trained model also by cosine against that AMP space (like for like);
    with ``bootstrap`` the intervals and paired tests; JSON (with its provenance), TSV and markdown (with a
    provenance footer)."""
    rd = ReverseDictionary(model_dir, trained_space(model_dir, spaces, dataset), dataset, scoring="dot")
    held_out = read_queries(queries, rd.frame)
    amp = load_space(only(base_space), len(rd.frame))
    trained_ranks = dot_ranks(rd, held_out, batch_size, max_length)
    trained_cosine = cosine_ranks(rd.encoder, amp, held_out, batch_size, max_length)
    base_cosine = cosine_ranks(load_encoder(base_model), amp, held_out, batch_size, max_length)
    common = {"candidates": len(rd.entries), "cosine_candidates": len(rd.frame)}
    results = {
        "trained": {"model": str(model_dir), "entry_space": str(rd.space_path), "pooling": rd.pooling,
                    "scoring": "dot", **common, **split_metrics(trained_ranks, held_out, rd.frame),
                    COSINE: cosine_splits(trained_cosine, held_out)},
        "base": {"model": str(base_model), "entry_space": str(only(base_space)), "pooling": "mean",
                 "scoring": "cosine", **common, **split_metrics(base_cosine, held_out, rd.frame),
                 COSINE: cosine_splits(base_cosine, held_out)},
    }
    ranks = {"trained": {"heldout_queries": ranks_by_split(trained_ranks, held_out),
                         COSINE: ranks_by_split(trained_cosine, held_out)},
             "base": {"heldout_queries": ranks_by_split(base_cosine, held_out),
                      COSINE: ranks_by_split(base_cosine, held_out)}}
    results = with_uncertainty(results, ranks, (COSINE,), bootstrap)
    for label in ("trained", "base"):
        log.info("%s: %s", label, {split: {k: round(v, 3) for k, v in results[label][split].items()} for split in
                                   HELDOUT_SPLITS})
    results = {**results, "provenance": ranking_provenance(model_dir, bootstrap)}
    table = results_table(results)
    write_json(out_json, {"method": method, **results})
    write_tsv(out_tsv, table, float_format="%.4f")
    write_page(out_md, results_markdown(results, table, title, method_of(method).reverse_dictionary.description))
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
