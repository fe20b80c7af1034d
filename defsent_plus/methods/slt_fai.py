"""SLT-FAI (004): a contrastive objective plus frequency-adversarial and incomplete-sentence discriminators."""

from __future__ import annotations

from defsent_plus.methods.base import Method
from defsent_plus.methods.simcse import CONTRASTIVE_OPTIMISATION, CONTRASTIVE_OPTIONS

SLT_FAI_OPTIONS = {
    "alpha": {"type": "number", "minimum": 0, "default": 1.0,
              "description": "weight of the adversarial token loss L_AT"},
    "beta": {"type": "number", "minimum": 0, "default": 1.0,
             "description": "weight of incomplete-sentence filtering L_ISF"},
    "epsilon": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1, "default": 0.2,
                "description": "masking ratio of low-frequency tokens"},
    "warmup": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.1,
               "description": "share of the epoch with R_USRL alone"},
    "frequency_rate": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1, "default": 0.5,
                       "description": "lambda: the least frequent share of token types is low-frequency"},
    "frequency_corpus": {"type": ["string", "null"], "default": None,
                         "description": "token counts; null = the training corpus"},
    "discriminators": {"enum": ["released", "paper"], "default": "released",
                       "description": "released: the authors' code (token h-2h-2h-h-2, sentence h-h-2, ReLU after the "
                                      "last layer); paper: two linear layers with a ReLU between (004 §4.1)"},
    "at_views": {"enum": ["both", "one"], "default": "both",
                 "description": "L_AT over both views' token states (the released code) or the first only"},
}

METHOD = Method(
    name="slt_fai",
    paper="004 (SLT-FAI): SimCSE/ConSERT + frequency-adversarial and incomplete-sentence discriminators",
    target="contrastive",
    options={**CONTRASTIVE_OPTIMISATION, **CONTRASTIVE_OPTIONS, **SLT_FAI_OPTIONS},
    options_source="SLT-FAI (004, Section 4.1) on SimCSE's settings",
    build_task="defsent_plus.methods.slt_fai_objective:build_task",
    deviations=(
        "the SimCSE + SLT-FAI variant with the base loss at weight 1; the authors' released scripts train the "
        "ConSERT variant (NT-Xent at temperature 0.1 weighted 0.15, cutoff and shuffle views, mean pooling)",
        "low-frequency tokens are masked for incomplete sentences at epsilon = 0.2 (the paper's wording); the "
        "released code masks high-frequency tokens at 0.5",
        "the discriminators are built at the model's width; the released code hard-codes 768",
        "frequency labels are counted on the training corpus by default (004 counted BookCorpus)",
    ),
    max_steps=1,
    dev_in_training=True,
)
