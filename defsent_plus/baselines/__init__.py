"""Training-free sentence embeddings from any encoder of the workflow (003, Stankevičius & Lukoševičius), scored on
the workflow's one STS evaluator: the ``baselines`` stage.

- :mod:`.spec`: the grid a config asks for (templates T0-T4 and user templates, layer sets, aggregations, sources,
  post-processing) and the cache's layout; no torch.
- :mod:`.sentences`: the evaluation sentences (STS, alignment/uniformity pairs) and the fit corpus (its job).
- :mod:`.aggregation`: what is known about each token (idf, the fit corpus' most frequent tokens, punctuation,
  sub-word continuations, special and mask positions); token vectors -> one sentence vector (CLS, mean, max,
  idf-weighted, "-biases", mask).
- :mod:`.extract`: the embedding job: one forward pass per (encoder, template) with every hidden state, the Avg.
  static and seeded random vectors, cached per layer set.
- :mod:`.reuse`: the embedding stage's vectors read from a cache instead of a second forward pass.
- :mod:`.postprocess`: centering, z-score, quantile-u, whitening, all-but-the-top, L2, and chains of them.
- :mod:`.grid`: every combination scored (STS, alignment, uniformity, isotropy).
- :mod:`.report`: the grid job and its table, summary (intervals, paired tests) and per-layer plot.
"""
