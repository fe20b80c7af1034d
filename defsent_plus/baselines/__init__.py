"""Training-free sentence embeddings from any encoder of the workflow (003, Stankevičius & Lukoševičius), scored on
the workflow's one STS evaluator: the ``baselines`` stage.

- :mod:`.spec`: the grid a config asks for (templates, layer sets, aggregations, sources, post-processing).
- :mod:`.templates`: the prompt templates T0-T4 (003 Table 1) and user templates.
- :mod:`.tokens`: what is known about each token: idf, the fit corpus' most frequent tokens, punctuation,
  sub-word continuations, special and mask positions.
- :mod:`.aggregation`: token vectors -> one sentence vector (CLS, mean, max, idf-weighted, "-biases", mask).
- :mod:`.sources`: where token vectors come from: the encoder, its Avg. static vectors, seeded random vectors.
- :mod:`.extract`: one forward pass per (encoder, template) with every hidden state, cached per layer set.
- :mod:`.postprocess`: centering, z-score, quantile-u, whitening, all-but-the-top, L2, and chains of them.
- :mod:`.sentences`: the evaluation sentences (STS, alignment/uniformity pairs) and the fit corpus.
- :mod:`.grid`: every combination scored (STS, alignment, uniformity, isotropy) and its report.
"""
