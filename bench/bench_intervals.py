"""Time the STS bootstrap (``defsent_plus.evaluation.intervals``) against ranking every resample, same pairs and
resamples.

    .venv/bin/python bench/bench_intervals.py                 # 8 models, 1,000 resamples, the real STS test sets
    .venv/bin/python bench/bench_intervals.py --models 27     # the default baselines summary's named rows

The pairs are the seven STS test sets' real gold scores (``$DEFSENT_SENTEVAL`` or ``data/senteval``); each model's
similarities are the gold plus seeded noise of a different strength. The baseline materialises every resample and
ranks it (``row_spearman``: scipy's average ranks, vectorised over resamples); the fast path is what the tables run
(``Bootstrap.of_pairs``: draw counts, one sort per task and model, the gold side shared). Prints both times, their
ratio and the largest difference of any resampled score; the load average too, as timings on shared cores vary.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from defsent_plus.evaluation.intervals import Bootstrap, TaskPairs, resample, row_spearman  # noqa: E402
from defsent_plus.evaluation.sts import STS_TASKS, load_sts_parts  # noqa: E402


def real_pairs(senteval_dir: str, n_models: int, seed: int = 0) -> dict[str, TaskPairs]:
    """Every STS test set's gold (subsets in file order) and ``n_models`` noisy copies of it as similarities."""
    rng = np.random.default_rng(seed)
    pairs = {}
    for task in STS_TASKS:
        parts = load_sts_parts(senteval_dir, task)
        gold = np.concatenate([p.gold for p in parts]).astype(np.float64)
        ends = np.cumsum([len(p.gold) for p in parts]).tolist()
        noise = [rng.normal(0, (0.5 + m / n_models) * gold.std(), len(gold)) for m in range(n_models)]
        pairs[task] = TaskPairs(gold, list(zip([0, *ends[:-1]], ends, strict=True)), [gold + e for e in noise])
    return pairs


def ranked_each_resample(pairs: dict[str, TaskPairs], n_resamples: int, seed: int) -> dict[str, list[np.ndarray]]:
    """Every model's Spearman x 100 on each resample ("all" aggregation), each resample ranked by itself; the
    resamples are the fast path's (one generator, tasks in order)."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, task in pairs.items():
        index = resample(task.bounds, n_resamples, rng)
        gold = task.gold[index]
        out[name] = [row_spearman(similarity[index], gold) for similarity in task.similarities]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--senteval", default=os.environ.get("DEFSENT_SENTEVAL", "data/senteval"))
    parser.add_argument("--models", type=int, default=8)
    parser.add_argument("--resamples", type=int, default=1000)
    args = parser.parse_args(argv)
    pairs = real_pairs(args.senteval, args.models)
    options = {"resamples": args.resamples, "level": 0.95, "seed": 0}
    start = time.perf_counter()
    fast = Bootstrap.of_pairs(pairs, "all", options)
    fast_seconds = time.perf_counter() - start
    start = time.perf_counter()
    baseline = ranked_each_resample(pairs, args.resamples, options["seed"])
    baseline_seconds = time.perf_counter() - start
    largest = max(float(np.max(np.abs(fast.resampled[task][m] - baseline[task][m])))
                  for task in pairs for m in range(args.models))
    n_pairs = sum(len(task.gold) for task in pairs.values())
    print(f"{args.models} models x {n_pairs:,} pairs x {args.resamples:,} resamples; load average "
          f"{os.getloadavg()[0]:.2f}")
    print(f"ranking every resample   {baseline_seconds:7.2f} s  {baseline_seconds / args.models:.3f} s per model")
    print(f"counted ranks (tables)   {fast_seconds:7.2f} s  {fast_seconds / args.models:.3f} s per model "
          "(point scores included)")
    print(f"ratio                    {baseline_seconds / fast_seconds:7.1f}x; largest |difference| {largest:.2e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
