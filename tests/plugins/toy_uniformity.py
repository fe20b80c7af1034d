"""A toy evaluator from outside the package, as a user would add one: the uniformity of each STS task's sentence
embeddings (Wang and Isola, 2020; SimCSE's analysis): log of the mean of exp(-t ||x - y||²) over pairs of distinct
normalised sentence vectors, lower = more uniform. Registered through config ``evaluator_plugins``; scores the
stored STS vectors and writes its own table (no per-pair similarities: unpaired).
"""

from __future__ import annotations

from defsent_plus.evaluation.evaluators import Evaluator, Scored, Table


def task_sentences(senteval_dir, task: str) -> list[str]:
    from defsent_plus.evaluation.sts import load_sts_parts

    return list(dict.fromkeys(s for part in load_sts_parts(senteval_dir, task)
                              for s in (*part.sentences1, *part.sentences2)))


def uniformity_of(x, t: float) -> float:
    import numpy as np

    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    squared = np.maximum(2.0 - 2.0 * unit @ unit.T, 0.0)
    upper = np.triu_indices(len(unit), k=1)
    return float(np.log(np.mean(np.exp(-t * squared[upper]))))


def uniformity(vectors, senteval_dir, options: dict, threads: int) -> Scored:
    import numpy as np

    from defsent_plus.evaluation.sts import STS_TASKS

    rng = np.random.default_rng(options["seed"])
    scores = {}
    for task in STS_TASKS:
        sentences = task_sentences(senteval_dir, task)
        if len(sentences) > options["max_sentences"]:
            sentences = [sentences[i] for i in sorted(rng.choice(len(sentences), options["max_sentences"],
                                                                 replace=False))]
        scores[task] = uniformity_of(np.stack([vectors[s] for s in sentences]), options["t"])
    return Scored({**scores, "avg": float(np.mean(list(scores.values())))}, {"t": options["t"]})


EVALUATOR = Evaluator(
    name="uniformity",
    description="toy: uniformity of each STS task's sentence embeddings (Wang and Isola, 2020)",
    sentence_set="sts",
    score=uniformity,
    options=lambda config: {"t": 2.0, "max_sentences": 2000, "seed": 0},
    table=Table(
        title=lambda config: "Uniformity of the STS sentences' embeddings (log E exp(-2 ||x - y||²), lower = more "
                             "uniform)",
        caption="toy evaluator (tests/plugins/toy_uniformity.py)",
        category="Uniformity",
        axis="average uniformity",
    ),
)
