"""Dictionary sources, the datasets a, b and c built from them, subsets with a held-out split, training pairs.

Modules: :mod:`.records` (the record every reader yields, drop counts), :mod:`.sources` (readers),
:mod:`.wordnet_setup` (WordNet for nltk), :mod:`.datasets` (merge into a/b/c, stats, the dictionary stage),
:mod:`.table` (the dataset parquet), :mod:`.heldout` (train/dev/test by headword, queries), :mod:`.subsets`
(the subset stage), :mod:`.pairs` ((definition, entry id) pairs). The names below are the public interface.
"""

from __future__ import annotations

from defsent_plus.dictionary.datasets import (
    DATASETS,
    Datasets,
    SourceSpec,
    build_datasets,
    dataset_stats,
    merge_by_entry,
    normalise_records,
    parse_sources,
    primary_source,
    single_token_entries,
    token_lengths,
    write_dictionary_stage,
)
from defsent_plus.dictionary.heldout import (
    HELDOUT_SPLITS,
    HeldOut,
    check_queries,
    hold_out_queries,
    parse_heldout,
    query_key,
    split_by_headword,
)
from defsent_plus.dictionary.pairs import definition_pairs, training_pairs
from defsent_plus.dictionary.records import Definition, DropCounts
from defsent_plus.dictionary.sources import (
    OXFORD_SPLITS,
    READERS,
    default_gcide_dir,
    detokenize_oxford,
    read_defsentplus,
    read_gcide,
    read_lines,
    read_oxford,
    read_tsv,
    read_wordnet,
    split_columns,
    wordnet_reader,
    wordnet_root,
)
from defsent_plus.dictionary.subsets import subsample_entries, write_subset
from defsent_plus.dictionary.table import (
    SOURCE_DATASET,
    SPLITS,
    check_dataset,
    entries_defined_as,
    read_dataset,
)
from defsent_plus.dictionary.wordnet_setup import (
    LEXNAME_POS,
    LEXNAMES,
    WORDNET_FILES,
    WORDNET_SYSTEM_DIR,
    prepare_wordnet,
)

__all__ = [
    "SOURCE_DATASET",
    "entries_defined_as",
    "DATASETS",
    "HELDOUT_SPLITS",
    "LEXNAMES",
    "LEXNAME_POS",
    "OXFORD_SPLITS",
    "READERS",
    "SPLITS",
    "WORDNET_FILES",
    "WORDNET_SYSTEM_DIR",
    "Datasets",
    "Definition",
    "DropCounts",
    "HeldOut",
    "SourceSpec",
    "build_datasets",
    "check_dataset",
    "check_queries",
    "dataset_stats",
    "default_gcide_dir",
    "definition_pairs",
    "detokenize_oxford",
    "hold_out_queries",
    "merge_by_entry",
    "normalise_records",
    "parse_heldout",
    "parse_sources",
    "prepare_wordnet",
    "primary_source",
    "query_key",
    "read_dataset",
    "read_gcide",
    "read_lines",
    "read_defsentplus",
    "read_oxford",
    "read_tsv",
    "read_wordnet",
    "single_token_entries",
    "split_by_headword",
    "split_columns",
    "subsample_entries",
    "token_lengths",
    "training_pairs",
    "wordnet_reader",
    "wordnet_root",
    "write_dictionary_stage",
    "write_subset",
]
