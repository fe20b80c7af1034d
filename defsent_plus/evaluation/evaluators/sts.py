"""STS12-16, STS-B test and SICK-R test: Spearman x 100 of the cosine of each pair's stored vectors (SentEval's
protocol, STS12-16 aggregated over their subsets as ``evaluation.sts_aggregation`` says), with per-pair similarities
for the table's intervals and paired tests."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from defsent_plus.evaluation.evaluators import Evaluator, Scored, Table
from defsent_plus.names import STS_COLUMNS


def sts_pairs_score(tasks: tuple[str, ...]):
    """A score function: the per-pair cosines of ``tasks`` and their Spearman correlations."""

    def score(vectors: Mapping[str, np.ndarray], senteval_dir: Path, options: dict, threads: int) -> Scored:
        from defsent_plus.evaluation.sts import pair_similarities, scores_of_pairs  # pandas, scipy

        pairs = pair_similarities(vectors, senteval_dir, tasks)
        aggregation = options["sts_aggregation"]
        return Scored(scores_of_pairs(pairs, tasks, aggregation), {"sts_aggregation": aggregation}, pairs)

    return score


EVALUATOR = Evaluator(
    name="sts",
    description="STS12-16, STS-B and SICK-R: Spearman x 100 of cosine similarity (SentEval's protocol)",
    sentence_set="sts",
    score=sts_pairs_score(("STS12", "STS13", "STS14", "STS15", "STS16", "STSB", "SICKR")),
    options=lambda config: {"sts_aggregation": config["evaluation"]["sts_aggregation"]},
    paired=True,
    table=Table(
        title=lambda config: (f"STS (Spearman x 100 of cosine, STS12-16 "
                              f"'{config['evaluation']['sts_aggregation']}')"),
        caption="Spearman correlation x 100 between cosine similarity and gold scores on STS12-16, STS-B test and "
                "SICK-R test, for the run's starting model (the base model, or with ``start_from`` another run's "
                "final model), each PST step's dev-selected model and the final step's models. Models were chosen "
                "on STS-B dev only.",
        category="STS",
        columns=STS_COLUMNS,
        axis="average Spearman × 100",
    ),
)
