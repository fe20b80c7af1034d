"""SentEval's seven transfer tasks (MR, CR, SUBJ, MPQA, SST-2, TREC, MRPC): a classifier on frozen stored vectors,
accuracy (%) with each task's spread (fold accuracies, or a test-set interval)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from defsent_plus.evaluation.evaluators import Evaluator, Scored, Table

SENTEVAL_RUNTIME_MINUTES = {"sklearn": 60, "pytorch": 180}
"""The job's time limit per classifier protocol (``evaluation.senteval_protocol``; the PyTorch protocol's nested
cross-validation fits 41 classifiers per outer fold)."""


def transfer_score(vectors: Mapping[str, np.ndarray], senteval_dir: Path, options: dict, threads: int) -> Scored:
    """The seven tasks' accuracies (``threads`` parallel classifier fits; results independent of it)."""
    from defsent_plus.evaluation.embeddings import stored_embed
    from defsent_plus.evaluation.senteval import TRANSFER_TASKS, scores_of, senteval_results  # scikit-learn

    results = senteval_results(stored_embed(vectors), senteval_dir, TRANSFER_TASKS, n_jobs=threads,
                               bootstrap=options["bootstrap"], protocol=options["protocol"])
    spread = {task: result.spread for task, result in results.items()}
    return Scored(scores_of(results), {"spread": spread, "protocol": options["protocol"]})


EVALUATOR = Evaluator(
    name="senteval",
    description="SentEval transfer: classifiers on frozen embeddings, accuracy (%)",
    sentence_set="senteval",
    score=transfer_score,
    options=lambda config: {"bootstrap": config["evaluation"]["bootstrap"],
                            "protocol": config["evaluation"]["senteval_protocol"]},
    table=Table(
        title=lambda config: (f"SentEval transfer accuracy (%), {config['evaluation']['senteval_protocol']} "
                              "protocol"),
        caption="SentEval transfer accuracy (%) with frozen embeddings and logistic regression (SentEval's "
                "protocol), for the run's starting model and the final dev-selected model.",
        category="SentEval",
        models="endpoints",  # slower: the starting model and the final dev-selected model only
        axis="average accuracy (%)",
    ),
    threads="job",
    mem_mb=4000,
    runtime=lambda options: SENTEVAL_RUNTIME_MINUTES[options["protocol"]],
)
