"""One encoder scored with one pooling on one benchmark from its stored sentence embeddings: the ``score``,
``senteval`` and ``dev_score`` jobs' work. No model is loaded: the ``embed`` job encoded the benchmark's sentences.

STS scorings also store their per-pair similarities (task, subset, pair, gold, similarity; parquet), so intervals and
paired tests read them without encoding again.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from defsent_plus.evaluation.embeddings import read_sentence_embeddings, stored_embed
from defsent_plus.evaluation.sentence_sets import BENCHMARK_SETS, sentences_of_set
from defsent_plus.io import atomic_path, write_json
from defsent_plus.names import DEV_TASK
from defsent_plus.sts import STS_TASKS, pair_similarities, scores_of_pairs

log = logging.getLogger(__name__)

BENCHMARK_TASKS = {"sts": STS_TASKS, "dev": (DEV_TASK,)}
"""The STS tasks of each STS benchmark (``dev``: STS-B dev, the only score used to select models)."""


def write_benchmark_scores(
    *, embeddings: str | Path, record: str | Path, senteval_dir: str | Path, out_json: str | Path, benchmark: str,
    out_pairs: str | Path | None = None, label: str | None = None, n_jobs: int | None = None,
    sts_aggregation: str = "all", bootstrap: dict | None = None, protocol: str = "sklearn",
) -> dict:
    """Score stored embeddings on ``sts`` (the 7 STS tasks; per-pair similarities to ``out_pairs``), ``dev`` (STS-B
    dev, likewise) or ``senteval`` (the 7 transfer tasks and each one's ``spread``: fold accuracies, or a test-set
    interval with ``bootstrap`` (evaluation.bootstrap); ``n_jobs`` parallel classifier fits, results independent of
    it; ``protocol``: SentEval's classifier, sklearn or pytorch)."""
    start = time.perf_counter()
    sentences = sentences_of_set(BENCHMARK_SETS[benchmark], senteval_dir)
    vectors, stored = read_sentence_embeddings(embeddings, record, sentences)
    if benchmark == "senteval":
        from defsent_plus.evaluation.senteval import TRANSFER_TASKS, scores_of, senteval_results  # scikit-learn

        results = senteval_results(stored_embed(vectors), senteval_dir, TRANSFER_TASKS, n_jobs=n_jobs,
                                   bootstrap=bootstrap, protocol=protocol)
        scores, spread = scores_of(results), {task: result.spread for task, result in results.items()}
    else:
        pairs = pair_similarities(vectors, senteval_dir, BENCHMARK_TASKS[benchmark])
        scores = scores_of_pairs(pairs, BENCHMARK_TASKS[benchmark], sts_aggregation)
        with atomic_path(out_pairs) as tmp:
            pairs.to_parquet(tmp, index=False)
    result = {"model": label or stored["encoder"], "model_dir": stored["model_dir"], "pooling": stored["pooling"],
              "benchmark": benchmark, "scores": scores, "seconds": round(time.perf_counter() - start, 1),
              "embeddings": stored}
    if benchmark != "senteval":
        result["sts_aggregation"] = sts_aggregation
    else:
        result.update(spread=spread, protocol=protocol)
    if benchmark == "dev":
        result["dev_score"] = scores[DEV_TASK]
    log.info("%s %s %s: %s", benchmark, result["model"], stored["pooling"],
             {k: round(v, 2) for k, v in scores.items()})
    write_json(out_json, result)
    return result
