"""Unlabeled training sentences of the contrastive methods: a run's definitions, a user's text file or ConSERT's
``stssick`` sentences (the STS and SICK evaluation sets' own sentences, without their scores: transductive)."""

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
    return seeded_sample(unique, max_sentences, seed)


def seeded_sample(sentences: list[str], max_sentences: int | None, seed: int) -> list[str]:
    """``max_sentences`` of ``sentences`` drawn without replacement (seeded), in their order; all when None."""
    if max_sentences is None or max_sentences >= len(sentences):
        return sentences
    keep = np.sort(np.random.default_rng(seed).choice(len(sentences), size=max_sentences, replace=False))
    return [sentences[i] for i in keep]


STSSICK_NOTE = ("transductive: ConSERT's stssick corpus, the unlabeled sentences of the STS12-16, STS-B and SICK-R "
                "sets the models are evaluated on")


def stssick_sentences(senteval_dir: str | Path) -> list[str]:
    """ConSERT's ``stssick`` corpus (its ``load_datasets`` with every unsupervised text, no pairs): both sentences
    of every line of the STS12-16 input files (scored or not), of STS-B train, dev and test and of SICK, duplicates
    kept. SentEval's data has SICK's test file only (ConSERT also read SICK train and trial), so those are absent."""
    from defsent_plus.evaluation.sts import STS_YEAR_SUBSETS, load_sickr, load_stsb, read_tsv  # pandas, light

    folder = Path(senteval_dir) / "STS"
    sentences = [field.strip() for year, names in STS_YEAR_SUBSETS.items() for name in names
                 for _, fields in read_tsv(folder / f"{year}-en-test" / f"STS.input.{name}.txt")
                 for field in fields[:2] if field.strip()]
    for pairs in [load_stsb(senteval_dir, split) for split in ("train", "dev", "test")] + [load_sickr(senteval_dir)]:
        sentences += [s for pair in zip(pairs.sentences1, pairs.sentences2, strict=True) for s in pair]
    return sentences


def named_corpus(corpus: str, definitions: Sequence[str], corpus_file: str | None, max_sentences: int | None,
                 seed: int, where: str, senteval_dir: str | Path | None, key: str) -> list[str]:
    """The ``corpus`` a contrastive run trains on: ``definitions`` (the run's, or ``corpus_file`` when given) or
    ``stssick`` (read from ``senteval_dir``; duplicates kept as ConSERT keeps them), then the seeded sample; the
    config schema allows no other ``corpus``."""
    if corpus == "definitions":
        return training_corpus(definitions, corpus_file, max_sentences, seed, where)
    if corpus_file:
        raise DefSentError(key, f"corpus {corpus!r} and corpus_file {corpus_file!r} are both set; choose one")
    if senteval_dir is None:
        raise DefSentError(key, "the stssick corpus needs SentEval's data (the train job's senteval input)")
    sentences = stssick_sentences(senteval_dir)
    log.info("stssick: %d sentences (%d distinct) of STS12-16, STS-B and SICK-R (%s)", len(sentences),
             len(set(sentences)), STSSICK_NOTE)
    return seeded_sample(sentences, max_sentences, seed)


def corpus_record(corpus: str, corpus_file: str | None) -> dict:
    """What a training card says of its corpus (``transductive`` when it holds evaluation sentences)."""
    if corpus == "stssick":
        return {"corpus": "stssick", "transductive": True, "corpus_note": STSSICK_NOTE}
    return {"corpus": corpus_file or "run dataset's training definitions", "transductive": False}


def read_corpus_file(path: str | Path) -> list[str]:
    """One sentence a line (UTF-8, BOM and CRLF handled as for the dictionaries)."""
    path = Path(path)
    if not path.is_file():
        raise DefSentError(path, "corpus file not found (config: methods.<method>.corpus_file)")
    return [line.strip() for _, line in read_lines(path)]
