"""Dictionary sources, the datasets a, b and c built from them, subsets with a held-out split, training pairs.

Modules: :mod:`.sources` (readers, the record they yield, drop counts, WordNet for nltk), :mod:`.datasets` (merge
into a/b/c, stats, the dictionary stage), :mod:`.table` (the dataset parquet and its (definition, entry id) pairs),
:mod:`.subsets` (the subset stage: a sub-sample, train/dev/test by headword, queries). The names below are what the
rest of the package imports from here.
"""

from __future__ import annotations

from defsent_plus.dictionary.datasets import (
    DATASETS,
    build_datasets,
    dataset_stats,
    parse_sources,
    single_token_entries,
    token_lengths,
    write_dictionary_stage,
)
from defsent_plus.dictionary.sources import (
    DropCounts,
    detokenize_oxford,
    prepare_wordnet,
    read_defsentplus,
    read_gcide,
    read_oxford,
    read_tsv,
    read_wordnet,
    wordnet_reader,
)
from defsent_plus.dictionary.subsets import (
    HeldOut,
    hold_out_queries,
    split_by_headword,
    subsample_entries,
    write_subset,
)
from defsent_plus.dictionary.table import (
    SOURCE_DATASET,
    definition_pairs,
    entries_defined_as,
    read_dataset,
    training_pairs,
)

__all__ = [
    "DATASETS",
    "SOURCE_DATASET",
    "DropCounts",
    "HeldOut",
    "build_datasets",
    "dataset_stats",
    "definition_pairs",
    "detokenize_oxford",
    "entries_defined_as",
    "hold_out_queries",
    "parse_sources",
    "prepare_wordnet",
    "read_dataset",
    "read_defsentplus",
    "read_gcide",
    "read_oxford",
    "read_tsv",
    "read_wordnet",
    "single_token_entries",
    "split_by_headword",
    "subsample_entries",
    "token_lengths",
    "training_pairs",
    "wordnet_reader",
    "write_dictionary_stage",
    "write_subset",
]
