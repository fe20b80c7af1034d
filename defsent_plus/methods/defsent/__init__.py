"""DefSent (001/002): a definition's headword token predicted through the model's own frozen masked-LM head."""

from __future__ import annotations

from defsent_plus.methods.base import (
    SENTENCE_COMMANDS,
    VOCABULARY,
    Lazy,
    Method,
    ReverseDictionaryProtocol,
    TrainingCosts,
    with_defaults,
)
from defsent_plus.methods.defsent.reverse_dictionary import headword_ranking_splits
from defsent_plus.training.options import OPTIMISATION_OPTIONS

REVERSE_DICTIONARY = ReverseDictionaryProtocol(
    name="vocabulary",
    description="DefSent: each definition ranks the whole token vocabulary through the model's masked-LM head; "
                "`all_definitions` = every definition of the split's entries (DefSent's protocol; train entries' "
                "definitions were training examples), `heldout_queries` = the held-out definitions DefSent+ ranks. "
                "mrr = over the full ranking; mrr_at_10 = only hits in the top 10 count (DefSent's reported 'MRR').",
    write=Lazy("defsent_plus.methods.defsent.reverse_dictionary:write_headword_ranking"),
    splits=headword_ranking_splits,
    # per model (trained, base): every definition and the queries through the head, the queries again (cosine)
    encoded_sentences=lambda definitions, queries: 2.0 * (definitions + 2.0 * queries),
)

METHOD = Method(
    name="defsent",
    paper="DefSent (Tsukagoshi et al. 2021): headword prediction through the frozen masked-LM head",
    target="vocab",  # its candidates predict the masked-LM head's vocabulary
    options=with_defaults(OPTIMISATION_OPTIONS, optimizer="adam", adam_eps=1.0e-8, max_grad_norm=None,
                          bucket_by_length=False, schedule="constant", warmup_ratio=0.1,
                          warmup_rounding="none"),
    options_source="DefSent's defaults (its paper and experiments code): Adam, 10% warm-up then constant, no clipping",
    build_task=Lazy("defsent_plus.methods.defsent.objective:build_task"),  # headwords through the masked-LM head
    reverse_dictionary=REVERSE_DICTIONARY,
    commands=(*SENTENCE_COMMANDS, "predict-words"),
    deviations=(
        "RoBERTa headwords are tokenised in their word-initial form ('Ġword'); DefSent's code tokenises the bare, "
        "sentence-initial form (BERT is unaffected)",
        "a checkpoint without masked-LM head weights gets a seeded initialisation of the head transform (recorded "
        "as `head` in the training card)",
        "the reverse-dictionary split is seeded (DefSent's had no seed)",
    ),
    option_deviations=(
        (("warmup_rounding", "up"),
         "the warm-up length is rounded up to whole steps (ceil(0.1 x steps)); DefSent's scheduler does not round"),
    ),
    max_steps=1,
    costs=TrainingCosts(classes=VOCABULARY, saves_masked_lm_head=True),  # the head's vocabulary, saved with it
)
