"""Unsupervised SimCSE (Gao et al. 2021): two dropout views of each sentence, InfoNCE over in-batch negatives."""

from __future__ import annotations

import math

from defsent_plus.methods.base import Lazy, Method, TrainingCosts, with_defaults
from defsent_plus.names import AUGMENTATIONS, CONTRASTIVE_LOSS_NAMES, CORPORA, FIRST_AUGMENTATIONS
from defsent_plus.training.options import EPOCH_OPTIONS, OPTIMISATION_OPTIONS

CONTRASTIVE_OPTIONS = {  # the training corpus and the contrastive objective (shared with SLT-FAI's R_USRL)
    "corpus": {"enum": list(CORPORA), "default": "definitions",
               "description": "definitions: the run's training definitions (or corpus_file); stssick: ConSERT's "
                              "corpus, the STS and SICK sets' own sentences (transductive, marked in every table)"},
    "corpus_file": {"type": ["string", "null"], "default": None,
                    "description": "one sentence a line; null = the run's training definitions"},
    "max_sentences": {"type": ["integer", "null"], "minimum": 1, "default": None,
                      "description": "seeded sample; null = all"},
    "temperature": {"type": "number", "exclusiveMinimum": 0, "default": 0.05},
    "mlp": {"type": ["boolean", "null"], "default": None,
            "description": "SimCSE's MLP over the pooled vector in training only (cls_before_pooler); null = "
                           "SimCSE's rule, with CLS pooling only; true forces it with mean/max too (recorded in "
                           "the training card as a deviation)"},
    "augmentation": {"enum": list(AUGMENTATIONS), "default": "dropout",
                     "description": "the second view: dropout (a second pass) or a ConSERT augmentation of it"},
    "cutoff_rate": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1, "default": 0.1},
    "first_augmentation": {"enum": list(FIRST_AUGMENTATIONS), "default": "none",
                           "description": "the first view (the training loop's pass): none or a ConSERT augmentation"},
    "first_cutoff_rate": {"type": ["number", "null"], "exclusiveMinimum": 0, "exclusiveMaximum": 1, "default": None,
                          "description": "the first view's cutoff rate; null = cutoff_rate"},
    "dropout": {"type": "boolean", "default": True, "description": "false: ConSERT's --no_dropout"},
    "shuffled_positions": {"enum": ["model", "zero"], "default": "model",
                           "description": "token_shuffle's position ids: a permutation from the model's first "
                                          "position (RoBERTa: padding_idx + 1 = 2) or from 0 (ConSERT's released "
                                          "modeling_roberta.py and modeling_bert.py: 0..n-1)"},
    "loss": {"enum": list(CONTRASTIVE_LOSS_NAMES), "default": "info_nce",
             "description": "info_nce: SimCSE's (one direction); nt_xent: ConSERT's (both directions, intra-view "
                            "negatives, summed)"},
}
# SimCSE's published BERT-base settings (run_unsup_example.sh and the HF Trainer defaults)
CONTRASTIVE_OPTIMISATION = with_defaults({**OPTIMISATION_OPTIONS, **EPOCH_OPTIONS}, max_length=32, adam_eps=1.0e-8,
                                         bucket_by_length=False, select_every=125)

WIKI1M_SENTENCES = 1_000_000  # SimCSE's corpus (a corpus_file is costed as it)
STSSICK_SENTENCES = 79_192  # ConSERT's stssick corpus: the STS and SICK sentences (tests check it on SentEval's data)


def corpus_sentences(options: dict, definitions: float) -> float:
    """Sentences an epoch of a contrastive run trains on: its corpus (the run's training definitions, a corpus file,
    ConSERT's stssick), at most ``max_sentences`` of it (the seeded sample defsent_plus.training.corpus draws)."""
    corpus = (STSSICK_SENTENCES if options.get("corpus") == "stssick"
              else WIKI1M_SENTENCES if options.get("corpus_file") else definitions)
    return min(corpus, options.get("max_sentences") or math.inf)


CONTRASTIVE_COSTS = TrainingCosts(sentences=corpus_sentences)  # in-batch contrast (no output layer) over its corpus

METHOD = Method(
    name="simcse",
    paper="Gao et al. 2021 (unsupervised SimCSE): dropout views, in-batch InfoNCE",
    target="contrastive",
    options={**CONTRASTIVE_OPTIMISATION, **CONTRASTIVE_OPTIONS},
    options_source="unsupervised SimCSE's settings for BERT-base (run_unsup_example.sh, the HF Trainer defaults)",
    build_task=Lazy("defsent_plus.methods.simcse.objective:build_task"),  # InfoNCE over two views
    max_steps=1,
    dev_in_training=True,
    encoder_passes=2,  # the loop's pass and the second view's (objective.py: second_view)
    costs=CONTRASTIVE_COSTS,
)
