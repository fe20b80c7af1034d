"""Unsupervised SimCSE (Gao et al. 2021): two dropout views of each sentence, InfoNCE over in-batch negatives."""

from __future__ import annotations

from defsent_plus.methods.base import Method, with_defaults
from defsent_plus.training.options import OPTIMISATION_OPTIONS

CONTRASTIVE_OPTIONS = {  # the training corpus and the contrastive objective (shared with SLT-FAI's R_USRL)
    "corpus_file": {"type": ["string", "null"], "default": None,
                    "description": "one sentence a line; null = the run's training definitions"},
    "max_sentences": {"type": ["integer", "null"], "minimum": 1, "default": None,
                      "description": "seeded sample; null = all"},
    "temperature": {"type": "number", "exclusiveMinimum": 0, "default": 0.05},
    "mlp": {"type": ["boolean", "null"], "default": None,
            "description": "SimCSE's MLP over the pooled vector in training only (cls_before_pooler); null = "
                           "SimCSE's rule, with CLS pooling only; true forces it with mean/max too (recorded in "
                           "the training card as a deviation)"},
    "augmentation": {"enum": ["dropout", "token_cutoff", "feature_cutoff", "token_shuffle"], "default": "dropout"},
    "cutoff_rate": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1, "default": 0.1},
}
# SimCSE's published BERT-base settings (run_unsup_example.sh and the HF Trainer defaults)
CONTRASTIVE_OPTIMISATION = with_defaults(OPTIMISATION_OPTIONS, max_length=32, adam_eps=1.0e-8, bucket_by_length=False,
                                         select_every=125)

METHOD = Method(
    name="simcse",
    paper="Gao et al. 2021 (unsupervised SimCSE): dropout views, in-batch InfoNCE",
    target="contrastive",
    options={**CONTRASTIVE_OPTIMISATION, **CONTRASTIVE_OPTIONS},
    options_source="unsupervised SimCSE's settings for BERT-base (run_unsup_example.sh, the HF Trainer defaults)",
    build_task="defsent_plus.methods.contrastive:build_task",
    max_steps=1,
    dev_in_training=True,
)
