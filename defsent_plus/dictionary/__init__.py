"""Dictionary sources, the datasets a, b and c built from them, subsets with a held-out split, training pairs.

Modules: :mod:`.sources` (readers, the record they yield, drop counts, WordNet for nltk), :mod:`.datasets` (merge
into a/b/c, stats, the dictionary stage), :mod:`.table` (the dataset parquet and its (definition, entry id) pairs),
:mod:`.subsets` (the subset stage: a sub-sample, train/dev/test by headword, queries).
"""
