"""How DefSent's reverse-dictionary results read (light: the declaration and the comparison job import it)."""

from __future__ import annotations

from defsent_plus.names import COSINE

HEADWORD_PROTOCOLS = ("all_definitions", "heldout_queries")  # DefSent's: every definition; DefSent+'s queries


def headword_ranking_splits(model: dict) -> dict[str, dict]:
    """One model's part of a ``vocabulary``-protocol JSON as {protocol: {split: metrics}} (comparison tables)."""
    return {protocol: model[protocol] for protocol in (*HEADWORD_PROTOCOLS, COSINE) if protocol in model}
