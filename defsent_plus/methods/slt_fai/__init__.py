"""SLT-FAI (004): a contrastive objective plus frequency-adversarial and incomplete-sentence discriminators.

004 (Section 4.1) names two variants, each on its backbone's settings: ConSERT + SLT-FAI and SimCSE + SLT-FAI
(``variant`` in ``methods.slt_fai``; :class:`~defsent_plus.methods.base.Variant`).
"""

from __future__ import annotations

from defsent_plus.methods.base import Lazy, Method, Variant, without_defaults
from defsent_plus.methods.simcse import CONTRASTIVE_COSTS, CONTRASTIVE_OPTIMISATION, CONTRASTIVE_OPTIONS

SLT_FAI_OPTIONS = {
    "variant": {"enum": ["simcse", "consert"], "default": "simcse",
                "description": "the backbone whose published settings are this block's defaults (SLT-FAI, §4.1)"},
    "usrl_weight": {"type": "number", "exclusiveMinimum": 0,
                    "description": "weight of R_USRL (ConSERT's contrastive-loss rate --cl_rate)"},
    "alpha": {"type": "number", "minimum": 0, "default": 1.0,
              "description": "weight of the adversarial token loss L_AT"},
    "beta": {"type": "number", "minimum": 0, "default": 1.0,
             "description": "weight of incomplete-sentence filtering L_ISF"},
    "epsilon": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1, "default": 0.2,
                "description": "masking ratio of low-frequency tokens"},
    "warmup": {"type": "number", "minimum": 0,
               "description": "epochs trained with R_USRL alone, counted as the released code counts them"},
    "frequency_rate": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1, "default": 0.5,
                       "description": "lambda: the least frequent share of token types is low-frequency"},
    "frequency_corpus": {"type": ["string", "null"], "default": None,
                         "description": "token counts; null = the training corpus"},
    "discriminators": {"enum": ["released", "paper"], "default": "released",
                       "description": "released: the authors' code (token h-2h-2h-h-2, sentence h-h-2, ReLU after the "
                                      "last layer); paper: two linear layers with a ReLU between (SLT-FAI, §4.1)"},
    "at_views": {"enum": ["both", "one"], "default": "both",
                 "description": "L_AT over both views' token states (the released code) or the first only"},
}

SIMCSE = Variant(
    # SimCSE's unsupervised BERT-base settings (run_unsup_example.sh, HF Trainer defaults) with 004's batch 32 and
    # 0.1-epoch warm-up; the released repository has no script for this variant
    options={"usrl_weight": 1.0, "warmup": 0.1, "loss": "info_nce", "temperature": 0.05,
             "first_augmentation": "none", "first_cutoff_rate": None, "augmentation": "dropout", "dropout": True,
             "mlp": None, "corpus": "definitions", "max_sentences": None, "max_length": 32, "optimizer": "adamw",
             "adam_eps": 1.0e-8, "weight_decay": 0.0, "no_decay": [], "warmup_ratio": 0.0, "epochs": 1,
             "patience": None, "select_every": 125, "extra_tokens": 0, "rescore_at_epoch_end": False,
             "shuffled_positions": "model"},
    run={"lr": 3.0e-5, "batch_size": 32, "pooling": "cls"},
    source="SLT-FAI §4.1 (SimCSE + SLT-FAI: warm-up 0.1 epochs, batch 32) on unsupervised SimCSE's settings "
           "(princeton-nlp/SimCSE run_unsup_example.sh)",
    deviations=("the released code has no SimCSE + SLT-FAI script: SimCSE's settings with SLT-FAI's batch size and "
                "warm-up, the discriminators as the released ConSERT script builds them",),
)
CONSERT = Variant(
    # wangbing1416/SLT-FAI scripts/unsup-SLTFAI-base.sh and main.py's defaults, as yym6472/ConSERT's
    # scripts/unsup-consert-base.sh runs ConSERT; sentence-transformers' fit (weight decay 0.01 except biases and
    # LayerNorm, transformers' AdamW with correct_bias=False, eps 1e-6, 10% linear warm-up, clipping at 1.0)
    options={"usrl_weight": 0.15, "warmup": 0.5, "loss": "nt_xent", "temperature": 0.1,
             "first_augmentation": "feature_cutoff", "first_cutoff_rate": 0.2, "augmentation": "token_shuffle",
             "dropout": False, "mlp": False, "corpus": "stssick", "max_sentences": None, "max_length": 64,
             "optimizer": "adamw_uncorrected", "adam_eps": 1.0e-6, "weight_decay": 0.01,
             "no_decay": ["bias", "LayerNorm.bias", "LayerNorm.weight"], "warmup_ratio": 0.1, "epochs": 10,
             "patience": 10, "select_every": 200,
             # sentence-transformers' Transformer.get_sentence_features pads and truncates to min(longest,
             # max_seq_length) + 3 tokens with [CLS] and [SEP]; fit() scores dev every 200 steps of an epoch and
             # again at its end; modeling_{bert,roberta}.py's _replace_position_ids permutes 0..n-1
             "extra_tokens": 3, "rescore_at_epoch_end": True, "shuffled_positions": "zero"},
    run={"lr": 5.0e-7, "batch_size": 32, "pooling": "mean"},
    source="SLT-FAI §4.1 (ConSERT + SLT-FAI: warm-up 0.5 epochs, batch 32); wangbing1416/SLT-FAI "
           "scripts/unsup-SLTFAI-base.sh and main.py; yym6472/ConSERT scripts/unsup-consert-base.sh",
    deviations=(
        "stssick is STS12-16 (every input line), STS-B train/dev/test and SICK-R test: SentEval's data has no SICK "
        "train and trial files, which ConSERT's corpus also holds (89,192 sentences in SLT-FAI's paper)",
        "fp32 on CPU and bf16 autocast on a GPU; the released runs used apex O1 (fp16)",
        "the linear warm-up is 10% of epochs x batches per epoch, rounded up; main.py rounds up 10% of "
        "sentences x epochs / batch size (one step apart at most)",
    ),
)
VARIANTS = {"simcse": SIMCSE, "consert": CONSERT}
VARIANT_OPTIONS = set(SIMCSE.options) | set(CONSERT.options)

METHOD = Method(
    name="slt_fai",
    paper="SLT-FAI (Wang et al. 2023): SimCSE/ConSERT + frequency-adversarial and incomplete-sentence discriminators",
    target="contrastive",
    options=without_defaults({**CONTRASTIVE_OPTIMISATION, **CONTRASTIVE_OPTIONS, **SLT_FAI_OPTIONS}, VARIANT_OPTIONS,
                             "Default: the variant's."),
    options_source="SLT-FAI (its paper, Section 4.1): each variant on its backbone's published settings",
    build_task=Lazy("defsent_plus.methods.slt_fai.objective:build_task"),  # SimCSE + adversarial terms
    deviations=(
        "low-frequency tokens are masked for incomplete sentences at epsilon = 0.2 (the paper's wording); the "
        "released code masks high-frequency tokens at 0.5",
        "L_AT averages over each sentence's non-padding, non-special tokens; the released code over every position, "
        "padding included",
        "the discriminators are built at the model's width; the released code hard-codes 768",
        "frequency labels are counted on the training corpus by default (SLT-FAI's authors counted BookCorpus)",
    ),
    max_steps=1,
    dev_in_training=True,
    variants=VARIANTS,
    # the contrastive objective's two views, and L_ISF's incomplete sentences through the encoder again (004 §3.3;
    # objective.py: incomplete_loss), once the discriminators' warm-up is over
    encoder_passes=3,
    costs=CONTRASTIVE_COSTS,
)
