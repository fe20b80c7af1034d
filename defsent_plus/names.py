"""Names shared by the package, the config schema and the workflow's wildcards, defined once.

Light on purpose (no torch): the workflow imports it while parsing. ``tests/test_names.py`` checks the schema
and the wildcard constraints against these tuples.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

BASE_SPACES = ("ac", "amp")  # 000 Section 3.2: AC (mean of CLS vectors), AMP (mean of mean-pooled vectors)
TRANSFORMS = ("center", "whiten", "ica")  # candidate-space transforms of a base space
TORCH_TRANSFORMS = ("ica",)  # those that may run on torch, on a GPU (ICA's backend auto); the others are numpy
POOLINGS = ("cls", "mean", "max", "prompt")  # sentence poolings of encoding and evaluation
TRAINING_POOLINGS = ("cls", "mean", "max")  # poolings a training run can use (DefSent: all three)
TRAINING_POOLING_KEY = "config: runs.<run>.training_pooling"  # where a run chooses one (its objectives' errors name it)
BENCHMARKS = ("sts", "senteval", "dev")  # score files: STS test sets, SentEval transfer, STS-B dev (selection)
RANKING_METRICS = ("mrr", "mrr_at_10", "top1", "top3", "top10")  # the reverse dictionary's metrics, in table order
SENTENCE_SETS = ("sts", "stsb-dev", "senteval")  # what the embedding stage encodes (evaluation.embeddings)
OXFORD_SPLITS = ("train.txt", "valid.txt", "test.txt")  # the files of Ishiwatari et al.'s Oxford data
WORDNET_DATA_FILES = ("data.adj", "data.adv", "data.noun", "data.verb")  # in nltk's all_synsets() order
SPLITS = ("train", "dev", "test")  # a subset's entry splits (dictionary.table); the last two are held out
HELDOUT_SPLITS = ("dev", "test")  # the reverse dictionary's query splits
COSINE = "cosine"  # the reverse dictionary's like-for-like protocol, every method's models alike
STS_COLUMNS = {"STS12": "STS12", "STS13": "STS13", "STS14": "STS14", "STS15": "STS15", "STS16": "STS16",
               "STSB": "STS-B", "SICKR": "SICK-R", "avg": "Avg."}  # the STS tables' column headers
# the contrastive methods' views, losses and corpora (defsent_plus.methods.simcse.objective, training.corpus)
AUGMENTATIONS = ("dropout", "token_cutoff", "feature_cutoff", "token_shuffle")  # the second view's
FIRST_AUGMENTATIONS = ("none", "token_cutoff", "feature_cutoff", "token_shuffle")  # the loop's own forward pass
CONTRASTIVE_LOSS_NAMES = ("info_nce", "nt_xent")  # SimCSE's InfoNCE, ConSERT's NT-Xent
CORPORA = ("definitions", "stssick")  # a run's definitions (or a text file), ConSERT's STS + SICK sentences
TRANSDUCTIVE_CORPORA = ("stssick",)  # corpora made of the evaluation sets' own sentences
TRANSDUCTIVE_NOTE = ("transductive: trained on the unlabeled sentences of the STS and SICK sets it is evaluated on "
                     "(ConSERT's stssick corpus)")
PROMPT_TEMPLATE = 'This sentence : "{sentence}" means {mask} .'  # PromptBERT's template (``prompt`` pooling, 003's T0)
TRAINING_CARD = "defsent_training.json"  # saved in every trained model dir: what its model was trained with
DEV_TASK = "STSB-dev"  # the one score that selects: STS-B dev (training's selection, the dev score jobs)


def require_same_names(registry: Iterable[str], expected: tuple[str, ...], what: str) -> None:
    """Fail at import when a registry's names drift from the ones defined here (a programming error)."""
    if set(registry) != set(expected):
        raise RuntimeError(f"{what} has {sorted(registry)}, but defsent_plus.names defines {sorted(expected)}")


def alternatives(names: tuple[str, ...]) -> str:
    """A regex matching exactly one of ``names``."""
    return "|".join(re.escape(name) for name in names)


SPACE_PATTERN = rf"({alternatives(BASE_SPACES)})(\.({alternatives(TRANSFORMS)}))?"
# A candidate's target: an entry space, or the plain name a method without one declares (defsent_plus.methods)
TARGET_PATTERN = rf"(?:{SPACE_PATTERN}|[a-z][a-z0-9_]*)"


def split_space(space: str) -> tuple[str, str | None]:
    """``amp.ica`` -> (``amp``, ``ica``); ``ac`` -> (``ac``, None)."""
    if not re.fullmatch(SPACE_PATTERN, space):
        raise ValueError(f"unknown entry space {space!r}: expected <{'|'.join(BASE_SPACES)}>[.<"
                         f"{'|'.join(TRANSFORMS)}>]")
    base, _, transform = space.partition(".")
    return base, transform or None
