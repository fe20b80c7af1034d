"""DefSent+'s reverse dictionary (000; 001, Table 2's task): rank every entry of the entry space a model was trained
against for a definition-like query, by h · Eᵀ through its pooler: the training objective's logits, computed by the
objective itself (:meth:`defsent_plus.methods.defsent_plus.objective.EntryProjection.logits`).

:class:`ReverseDictionary` is the CLI's ranker (``defsent-plus reverse-dictionary``); :func:`write_entry_ranking` is
the method's ``entries`` protocol on a run's held-out queries (definitions of dev/test entries that no entry
embedding and no training example has seen), beside every model's like-for-like ``cosine`` protocol. Light at
import (the declaration reads its results with :func:`entry_ranking_splits`); ranking loads torch.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from defsent_plus.dictionary.table import read_dataset
from defsent_plus.errors import DefSentError
from defsent_plus.evaluation.embeddings import training_card
from defsent_plus.evaluation.reverse_dictionary import (
    cosine_ranks,
    encoded_queries,
    metrics_by_split,
    only,
    query_ranks,
    ranking_page,
    ranks_by_split,
    read_queries,
    split_metrics,
    unit_rows,
    write_ranking,
)
from defsent_plus.io import read_json
from defsent_plus.names import COSINE, HELDOUT_SPLITS, TRAINING_CARD
from defsent_plus.recorded_paths import given_file, locate, model_folders
from defsent_plus.spaces.entry_matrix import load_space

if TYPE_CHECKING:
    import torch

    from defsent_plus.encoders.models import Encoder

log = logging.getLogger(__name__)

BASE_NOTE = ("DefSent+ base rows: a starting model has no pooler trained against an entry space, so its own "
             "protocol (`heldout_queries`) ranks by cosine, its mean-pooled query against the AMP space, which is "
             "the `cosine` protocol: a base model's two rows are one ranking, the same numbers.")


def entry_ranking_splits(model: dict) -> dict[str, dict]:
    """One model's part of an ``entries``-protocol JSON as {protocol: {split: metrics}} (comparison tables)."""
    return {"heldout_queries": {split: model[split] for split in HELDOUT_SPLITS},
            **({COSINE: model[COSINE]} if COSINE in model else {})}


def entry_logits(encoder: Encoder, space: torch.Tensor, sentences: Sequence[str], pooling: str,
                 batch_size: int = 128, max_length: int = 128) -> np.ndarray:
    """``[n_sentences, n_entries]`` scores h · Eᵀ of the pooler-projected sentences (DefSent+'s training logits)."""
    import torch

    with torch.inference_mode():
        pooled = encoded_queries(encoder, sentences, pooling, batch_size, max_length)
        return pooled_entry_scores(encoder, space, pooling)(pooled)


def pooled_entry_scores(encoder: Encoder, space: torch.Tensor, pooling: str) -> Callable[[np.ndarray], np.ndarray]:
    """Pooled sentences (host arrays) -> their h · Eᵀ, computed by the objective on the encoder's device."""
    import torch

    from defsent_plus.methods.defsent_plus.objective import EntryProjection

    device = encoder.device
    projection = EntryProjection(space, encoder.pooler, pooling).to(device).eval()

    @torch.inference_mode()
    def scores(pooled: np.ndarray) -> np.ndarray:
        return projection.scores(torch.from_numpy(pooled).to(device)).cpu().numpy()

    return scores


TRAINING_INPUTS = {"entry_space": ("--space", "entry space .npy"), "dataset": ("--dataset", "dataset parquet")}
"""The files the ranking needs that the training card records: card key -> (the flag that names it instead, what)."""


def training_input(model_dir: str | Path, card: dict, given: str | Path | None, folders: Sequence[Path],
                   key: str) -> Path:
    """The file of the card's ``key``: ``given`` (its flag), else the one the training card records, looked for in
    the model's workflow folder, then in the current folder; an error names the paths tried and the flag."""
    flag, what = TRAINING_INPUTS[key]
    if given is not None:
        return given_file(given, flag)
    remedy = f"pass the {what} with {flag} PATH"
    if not card:
        raise DefSentError(model_dir, f"no {TRAINING_CARD} records its {what}: {remedy}")
    if not card.get(key):
        raise DefSentError(Path(model_dir) / TRAINING_CARD, f"records no {key}: {remedy}")
    return locate(card[key], folders, model_dir, f"its training card's {key}",
                  f"{remedy} (a relative path in the card is read from the workflow folder the model was trained "
                  "in, found above the model, or from the current folder)")


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
        import torch

        from defsent_plus.encoders.models import check_encoder_dir, load_encoder
        from defsent_plus.spaces.extension import extended_space

        check_encoder_dir(model_dir)
        card = training_card(model_dir)
        self.folders = model_folders(model_dir)
        self.space_path = training_input(model_dir, card, space_path, self.folders, "entry_space")
        if search is None:
            dataset_path = training_input(model_dir, card, dataset_path, self.folders, "dataset")
        self.pooling = pooling or card.get("pooling", "cls")
        self.encoder = load_encoder(model_dir)
        self.scoring, self.note = chosen_scoring(card, scoring)
        if search is None:  # the training dataset's entries; the trained space is loaded (and checked) always
            self.frame, self.dataset_path = read_dataset(dataset_path), dataset_path
            self.searched = f"{len(self.frame):,} entries of {dataset_path}, the model's training dataset"
            self.space = torch.from_numpy(load_space(self.space_path, len(self.frame)))
            amp = partial(amp_space, cosine_space, self.space_path, len(self.frame))
        else:
            extended = extended_space(self.space_path, search, cache_dir)
            self.frame, self.dataset_path, self.searched = extended.frame, extended.dataset, extended.description()
            self.space = torch.from_numpy(extended.trained()) if self.scoring == "dot" else None
            amp = partial(extended.base, "amp")
        if self.scoring == "cosine":
            self.cosine_space = unit_rows(amp())
        self.entries = list(self.frame["entry"])

    def scores(self, sentences: Sequence[str]) -> np.ndarray:
        """``[n_sentences, n_entries]`` scores by the chosen scoring."""
        if self.scoring == "dot":
            return entry_logits(self.encoder, self.space, list(sentences), self.pooling)
        return unit_rows(self.encoder.encode(list(sentences), "mean")) @ self.cosine_space.T

    def top(self, scores: np.ndarray, top_k: int = 10) -> list[list[tuple[str, float]]]:
        """The ``top_k`` entries and scores of each row of :meth:`scores`."""
        best = np.argsort(-scores, axis=1, kind="stable")[:, :top_k]
        return [[(self.entries[i], float(row[i])) for i in idx] for row, idx in zip(scores, best, strict=True)]

    def expected_ranks(self, scores: np.ndarray, entry: str) -> list[int] | None:
        """The rank (1 = first) of ``entry`` in each row of :meth:`scores`; None when it is not a candidate."""
        if entry not in self.entries:
            return None
        column = self.entries.index(entry)
        return [int((row > row[column]).sum()) + 1 for row in scores]


def amp_space(path: str | Path | None, trained_space: str | Path, n_entries: int) -> np.ndarray:
    """The AMP space for cosine scoring: ``path``, else ``amp.npy`` beside the trained space."""
    path = Path(path or Path(trained_space).with_name("amp.npy"))
    if not path.is_file():
        raise DefSentError(path, "no AMP entry space for the cosine scoring: pass one (--cosine-space)")
    return load_space(path, n_entries)


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
    pooled = encoded_queries(rd.encoder, list(queries["definition"]), rd.pooling, batch_size, max_length)
    return query_ranks(pooled, pooled_entry_scores(rd.encoder, rd.space, rd.pooling), queries["entry_id"].to_numpy(),
                       batch_size)


def results_page(results: dict[str, dict], table: pd.DataFrame, title: str, description: str) -> str:
    """The report page (:func:`ranking_page`) with readable model labels and what the base rows are."""
    shown = table.assign(model=table["model"].map({"trained": "DefSent+ final, dev-selected",
                                                   "base": "starting model, untrained by this run"}))
    measured = (f"{description} MRR (full ranking), MRR@10 and top-k accuracy (%) of each held-out definition's "
                f"entry among all {results['trained']['candidates']} entries; `heldout_queries` rows: the trained "
                "model by its pooler (dot), the base by cosine.")
    return ranking_page(title, measured, table, results, shown, BASE_NOTE)


def write_entry_ranking(*, method: str, model_dir: str | Path, spaces: Sequence[str | Path], dataset: str | Path,
                        queries: str | Path, base_model: str | Path, base_space: Sequence[str | Path],
                        out_json: str | Path, out_tsv: str | Path, out_md: str | Path, batch_size: int = 128,
                        max_length: int = 128, title: str = "Reverse dictionary on held-out entries",
                        bootstrap: dict | None = None, description: str = "", **_unused) -> dict:
    """The ``entries`` protocol: score a run's final model against the space it was trained on (one of
    ``spaces``), and the untrained ``base_model`` against its AMP space (``base_space``, one file) by cosine, on the
    held-out ``queries`` of ``dataset``; the trained model also by cosine against that AMP space (like for like);
    written as :func:`~defsent_plus.evaluation.reverse_dictionary.write_ranking` writes them."""
    from defsent_plus.encoders.models import load_encoder  # torch

    rd = ReverseDictionary(model_dir, trained_space(model_dir, spaces, dataset), dataset, scoring="dot")
    held_out = read_queries(queries, rd.frame)
    amp = load_space(only(base_space), len(rd.frame))
    trained = ranks_by_split(dot_ranks(rd, held_out, batch_size, max_length), held_out)
    cosine = {label: ranks_by_split(cosine_ranks(encoder, amp, held_out, batch_size, max_length), held_out)
              for label, encoder in (("trained", rd.encoder), ("base", load_encoder(base_model)))}
    ranks = {"trained": {"heldout_queries": trained, COSINE: cosine["trained"]},  # a base model ranks by cosine
             "base": {"heldout_queries": cosine["base"], COSINE: cosine["base"]}}
    models = {"trained": {"model": str(model_dir), "entry_space": str(rd.space_path), "pooling": rd.pooling,
                          "scoring": "dot"},
              "base": {"model": str(base_model), "entry_space": str(only(base_space)), "pooling": "mean",
                       "scoring": "cosine"}}
    common = {"candidates": len(rd.entries), "cosine_candidates": len(rd.frame)}
    results = {label: {**model, **common, **split_metrics(ranks[label]["heldout_queries"], rd.frame),
                       COSINE: metrics_by_split(cosine[label])} for label, model in models.items()}
    for label in ("trained", "base"):
        log.info("%s: %s", label, {split: {k: round(v, 3) for k, v in results[label][split].items()} for split in
                                   HELDOUT_SPLITS})
    return write_ranking(method, results, ranks, (COSINE,), entry_ranking_splits,
                         lambda results, table: results_page(results, table, title, description), model_dir=model_dir,
                         bootstrap=bootstrap, out_json=out_json, out_tsv=out_tsv, out_md=out_md, scoring=True)
