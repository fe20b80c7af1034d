"""DefSent+ (000): each definition projected onto its entry in a frozen space of entry embeddings, with PST."""

from __future__ import annotations

from defsent_plus.methods.base import ENTRY_SPACE, SENTENCE_COMMANDS, Lazy, Method, ReverseDictionaryProtocol
from defsent_plus.methods.defsent_plus.reverse_dictionary import BASE_NOTE, entry_ranking_splits
from defsent_plus.training.options import OPTIMISATION_OPTIONS

REVERSE_DICTIONARY = ReverseDictionaryProtocol(
    name="entries",
    description="DefSent+: each held-out definition (one per dev/test entry, in no entry embedding) ranks every "
                "entry of the space the model was trained against (h · Eᵀ through its pooler).",
    write=Lazy("defsent_plus.methods.defsent_plus.reverse_dictionary:write_entry_ranking"),
    splits=entry_ranking_splits,
    # the queries three times: the trained model's pooler (dot), its and the base model's mean pooling (cosine)
    encoded_sentences=lambda definitions, queries: 3.0 * queries,
    base_note=BASE_NOTE,
)

METHOD = Method(
    name="defsent_plus",
    paper="DefSent+ (Liu 2024): definitions projected into a frozen entry space, Progressive Separate Training",
    target=ENTRY_SPACE,
    options=OPTIMISATION_OPTIONS,  # 000, Appendix A: AdamW eps 1e-6, linear decay to 0, no warm-up, clipping 1.0
    options_source="DefSent+'s optimisation (DefSent+, Appendix A)",
    build_task=Lazy("defsent_plus.methods.defsent_plus.objective:build_task"),  # definitions onto their entries
    reverse_dictionary=REVERSE_DICTIONARY,
    commands=(*SENTENCE_COMMANDS, "reverse-dictionary"),
    deviations=(
        "length-bucketed batches by default (bucket_by_length: true), a throughput choice: batches are composed "
        "differently from a plain shuffle",
        "torch's AdamW by default, which adds eps after the bias correction; the authors' transformers 4.10 AdamW "
        "adds it before (optimizer: adamw_transformers), so with per-element gradients near 1e-5 their first "
        "steps are up to 4x smaller",
        "definitions are truncated at max_length (64 in config.yaml, 128 in configs/); the authors truncate "
        "nothing (dataset a's longest definitions have 138-141 tokens)",
        "each step's best (space, seed) is selected on STS-B dev; DefSent+'s authors kept the best of 10 runs by the "
        "STS test average",
        "bf16 autocast and TF32 on a GPU; the authors trained in fp32",
        "RoBERTa's pooler is the starting checkpoint's lm_head.dense (the authors: the original backbone's); a "
        "chain starts from this workflow's own SimCSE / SLT-FAI model, whose training MLP is not kept (the authors "
        "started from released SimCSE checkpoints, whose MLP is their pooler)",
        "the prompt template has no trailing space (the authors' adds one, an extra token for RoBERTa) and "
        "evaluation truncates at evaluation.max_length (the authors: 512)",
    ),
)
