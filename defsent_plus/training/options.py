"""The optimisation options every method's config block shares (``methods.<name>``), as JSON-schema properties.

Each names a field of :class:`defsent_plus.training.trainer.TrainConfig`; a method declares its own defaults for
them (:func:`defsent_plus.methods.base.with_defaults`) and adds its objective's options. Light (no torch).
"""

from __future__ import annotations

# DefSent+'s values (000, Appendix A) are the defaults here; other methods override them in their declarations.
OPTIMISATION_OPTIONS = {
    "max_length": {"type": "integer", "minimum": 8, "default": 64},
    "weight_decay": {"type": "number", "minimum": 0, "default": 0.0},
    "adam_eps": {"type": "number", "exclusiveMinimum": 0, "default": 1.0e-6},
    "optimizer": {"enum": ["adamw", "adam", "adamw_transformers", "adamw_uncorrected"], "default": "adamw",
                  "description": "adamw / adam: torch's; adamw_transformers: transformers 4's AdamW (eps before the "
                                 "bias correction, as DefSent+'s authors trained); adamw_uncorrected: the same with "
                                 "correct_bias=False (sentence-transformers' fit: ConSERT, SLT-FAI)"},
    "max_grad_norm": {"type": ["number", "null"], "exclusiveMinimum": 0, "default": 1.0,
                      "description": "null = no clipping"},
    "bucket_by_length": {"type": "boolean", "default": True},
    "schedule": {"enum": ["linear", "constant"], "default": "linear"},
    "warmup_ratio": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.0},
    "warmup_rounding": {"enum": ["up", "none"], "default": "up",
                        "description": "warm-up steps = warmup_ratio x steps rounded up (the HF Trainer's rule) or "
                                       "unrounded (DefSent's LambdaLR: the multiplier is step / (0.1 x steps))"},
    "select_every": {"type": "integer", "minimum": 0, "default": 0,
                     "description": "0: off; N: keep the best STS-B dev weights, scored every N steps"},
}

# Several epochs with early stopping (sentence-transformers' fit, as ConSERT and SLT-FAI train): contrastive methods.
EPOCH_OPTIONS = {
    "epochs": {"type": "integer", "minimum": 1, "default": 1},
    "patience": {"type": ["integer", "null"], "minimum": 1, "default": None,
                 "description": "with select_every: stop after this many STS-B dev scores without a new best"},
    "no_decay": {"type": "array", "items": {"type": "string"}, "default": [],
                 "description": "parameter-name parts exempt from weight decay"},
    "extra_tokens": {"type": "integer", "minimum": 0, "default": 0,
                     "description": "tokens a sentence keeps beyond max_length in training and in its STS-B dev "
                                    "scores (ConSERT's sentence-transformers: 3, so max_length + 1 word pieces "
                                    "with [CLS] and [SEP])"},
    "rescore_at_epoch_end": {"type": "boolean", "default": False,
                             "description": "with select_every: score STS-B dev after an epoch's last step even when "
                                            "its every-N score has just run on the same weights (sentence-"
                                            "transformers' fit; the repeat costs a unit of patience)"},
}
