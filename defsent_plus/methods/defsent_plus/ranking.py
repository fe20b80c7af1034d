"""How DefSent+'s reverse-dictionary results read (light: the declaration and the comparison job import it)."""

from __future__ import annotations

from defsent_plus.names import COSINE, HELDOUT_SPLITS

BASE_NOTE = ("DefSent+ base rows: a starting model has no pooler trained against an entry space, so its own "
             "protocol (`heldout_queries`) ranks by cosine, its mean-pooled query against the AMP space, which is "
             "the `cosine` protocol: a base model's two rows are one ranking, the same numbers.")


def entry_ranking_splits(model: dict) -> dict[str, dict]:
    """One model's part of an ``entries``-protocol JSON as {protocol: {split: metrics}} (comparison tables)."""
    return {"heldout_queries": {split: model[split] for split in HELDOUT_SPLITS},
            **({COSINE: model[COSINE]} if COSINE in model else {})}
