"""Unlabeled training sentences of the contrastive methods: a run's definitions or a user's text file."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from defsent_plus.dictionary.sources import read_lines
from defsent_plus.errors import DefSentError

log = logging.getLogger(__name__)


def training_corpus(definitions: Sequence[str], corpus_file: str | None, max_sentences: int | None, seed: int,
                    where: str) -> list[str]:
    """The sentences a contrastive method trains on: ``corpus_file`` (one sentence a line) when given, else the
    run's training definitions (held-out queries and dev/test entries excluded by the dataset); exact duplicates
    dropped (counted), then a seeded sample of ``max_sentences`` when set. Never evaluation sentences."""
    source = str(corpus_file) if corpus_file else where
    sentences = read_corpus_file(corpus_file) if corpus_file else [d.strip() for d in definitions]
    unique = list(dict.fromkeys(s for s in sentences if s))
    dropped = len(sentences) - len(unique)
    if dropped:
        log.info("%s: %d empty or duplicate sentences dropped, %d kept", source, dropped, len(unique))
    if not unique:
        raise DefSentError(source, "the training corpus is empty (config: methods.<method>.corpus_file, or a run "
                                   "dataset with training definitions)")
    if max_sentences is not None and max_sentences < len(unique):
        keep = np.sort(np.random.default_rng(seed).choice(len(unique), size=max_sentences, replace=False))
        unique = [unique[i] for i in keep]
    return unique


def read_corpus_file(path: str | Path) -> list[str]:
    """One sentence a line (UTF-8, BOM and CRLF handled as for the dictionaries)."""
    path = Path(path)
    if not path.is_file():
        raise DefSentError(path, "corpus file not found (config: methods.<method>.corpus_file)")
    return [line.strip() for _, line in read_lines(path)]
