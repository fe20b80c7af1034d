"""One encoder scored with one pooling by one evaluator from its stored sentence embeddings: the ``score`` and
``dev_score`` jobs' work. No model is loaded: the ``embed`` job encoded the evaluator's sentence set.

Paired evaluators (STS) also store their per-pair similarities (task, subset, pair, gold, similarity; parquet), so
intervals and paired tests read them without encoding again.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from defsent_plus.errors import DefSentError
from defsent_plus.evaluation.embeddings import read_sentence_embeddings
from defsent_plus.evaluation.sentence_sets import sentences_of_set
from defsent_plus.evaluators import evaluator_of
from defsent_plus.io import atomic_path, write_json

log = logging.getLogger(__name__)


def write_scores(*, evaluator: str, embeddings: str | Path, record: str | Path, senteval_dir: str | Path,
                 out_json: str | Path, options: dict, out_pairs: str | Path | None = None, label: str | None = None,
                 threads: int = 1) -> dict:
    """Score stored embeddings with the registered ``evaluator`` and its ``options`` (config-derived, the job's
    params); write its score file and, for a paired evaluator, the per-pair similarities to ``out_pairs``."""
    declared = evaluator_of(evaluator, where="rule score: evaluator")
    if declared.score is None:
        raise DefSentError("rule score", f"evaluator {evaluator!r} scores no stored embeddings")
    start = time.perf_counter()
    sentences = sentences_of_set(declared.sentence_set, senteval_dir)
    vectors, stored = read_sentence_embeddings(embeddings, record, sentences)
    scored = declared.score(vectors, Path(senteval_dir), options, threads)
    if "avg" not in scored.scores:
        raise DefSentError(f"evaluator {evaluator}", f"scored {sorted(scored.scores)}; a score needs 'avg' (its "
                                                     "tables' headline and plot)")
    if declared.paired:
        with atomic_path(out_pairs) as tmp:
            scored.pairs.to_parquet(tmp, index=False)
    result = {"model": label or stored["encoder"], "model_dir": stored["model_dir"], "pooling": stored["pooling"],
              "benchmark": evaluator, "scores": scored.scores, **scored.fields, "embeddings": stored}
    log.info("%s %s %s: %s in %.1f s", evaluator, result["model"], stored["pooling"],
             {k: round(v, 2) for k, v in scored.scores.items()}, time.perf_counter() - start)
    write_json(out_json, result)
    return result
