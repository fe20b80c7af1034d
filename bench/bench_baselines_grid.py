"""Time the training-free baselines grid: the per-combination reference scorer (``score_combination``, what the
workflow ran before) against ``score_grid``, on the same cache and the same combinations.

    .venv/bin/python bench/bench_baselines_grid.py                     # the default grid of config.yaml
    .venv/bin/python bench/bench_baselines_grid.py --grid configs/baselines-full.yaml:full --reference-every 5

The cache is the one the default run leaves: ``snakemake results/baselines/minilm/scores.tsv`` (a few minutes on a
CPU). ``--grid CONFIG:NAME`` takes a grid of another config and keeps the combinations this cache can score (its
templates, layer sets, aggregations and sources), so the full grid's post-processing x fit runs over the default
cache. Both scorers run in this process on ``--threads`` BLAS threads (default 1, as the workflow's grid job on 2
cores). The fast scorer scores the whole grid (what ``score_grid`` runs: its targets, then block after block), the
reference every ``--reference-every``-th combination (its seconds per combination are their mean), interleaved block
by block so that a change of load on shared cores hits both alike. Prints seconds per combination of both, the ratio,
the largest |difference| of every numeric column over the combinations both scored, and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the reference scorer: tests/grid_reference.py

from grid_reference import score_combination  # noqa: E402

from defsent_plus.baselines.grid import (  # noqa: E402
    CachedEmbeddings,
    grid_blocks,
    grid_targets,
    score_block,
)
from defsent_plus.baselines.sentences import evaluation_set, read_lines  # noqa: E402
from defsent_plus.baselines.spec import (  # noqa: E402
    INDEX,
    TRANSDUCTIVE_AGGREGATIONS,
    Combination,
    combinations,
    scoring_options,
)
from defsent_plus.evaluation.sts import STS_TASKS  # noqa: E402
from defsent_plus.io import read_json  # noqa: E402
from defsent_plus.pipeline import dag  # noqa: E402
from defsent_plus.pipeline.config_schema import validated_config  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"


def read_config(path: Path) -> dict:
    return validated_config(yaml.safe_load(path.read_text(encoding="utf-8")), SCHEMA)


def grid_of(spec: str, config: dict, encoder: str) -> tuple[dict, dict]:
    """(grid, custom templates) of ``default`` (the encoder's grid in ``config``) or ``CONFIG:NAME``."""
    if spec == "default":
        baselines = config["baselines"]
        return baselines["grids"][baselines["encoders"][encoder]], baselines.get("templates", {})
    path, name = spec.rsplit(":", 1)
    baselines = read_config(Path(path))["baselines"]
    return baselines["grids"][name], baselines.get("templates", {})


def cached_combinations(rows: list[Combination], embeddings: CachedEmbeddings) -> list[Combination]:
    """The combinations whose every cache file exists (a grid cut to what one cache holds)."""
    def splits(c: Combination) -> list[str]:
        if c.aggregation in TRANSDUCTIVE_AGGREGATIONS:
            return ["corpus", *(f"eval-{task}" for task in STS_TASKS)]
        return ["corpus", "eval"]

    return [c for c in rows if c.template in embeddings.roots
            and all(path.exists() for split in splits(c) for path in embeddings.files(c, split))]


def timed(function):
    start = time.perf_counter()
    result = function()
    return result, time.perf_counter() - start


def interleaved(rows: list[Combination], embeddings: CachedEmbeddings, evaluation, options: dict,
                every: int) -> tuple[pd.DataFrame, dict[str, float], list[dict], dict[str, float]]:
    """(fast table, its seconds, reference rows of every ``every``-th combination, their seconds), one block of the
    grid after the other; seconds by post-processing (``<chain> <fit>``), the fast scorer's also ``targets`` (what
    every combination is scored against, prepared once) and ``load`` (its cache reads)."""
    fast_seconds: dict[str, float] = {}
    targets, fast_seconds["targets"] = timed(lambda: grid_targets(evaluation, options))
    fast_rows: list[dict | None] = [None] * len(rows)
    reference_rows, reference_seconds = [], {}
    for block in grid_blocks(rows):
        for index, row, _ in score_block(block, embeddings, targets, fast_seconds):
            fast_rows[index] = row
        for index, c in [item for items in block.values() for item in items if item[0] % every == 0]:
            row, seconds = timed(lambda c=c: score_combination(c, embeddings, evaluation, options))
            reference_seconds[chain_of(c)] = reference_seconds.get(chain_of(c), 0.0) + seconds
            reference_rows.append((index, row))
    reference_rows = [row for _, row in sorted(reference_rows, key=lambda pair: pair[0])]
    return pd.DataFrame(fast_rows), fast_seconds, reference_rows, reference_seconds


def chain_of(combination: Combination) -> str:
    return f"{combination.postprocess} {combination.fit}"


def by_chain(rows: list[Combination], sample: list[Combination], fast: dict[str, float],
             reference: dict[str, float]) -> list[str]:
    """Lines of seconds per combination by post-processing, both scorers, and their ratio (the fast scorer's cache
    reads and targets spread over all its combinations)."""
    shared = (fast.get("load", 0.0) + fast.get("targets", 0.0)) / len(rows)
    lines = [f"{'post-processing fit':<22} {'rows':>5} {'reference':>10} {'fast':>8} {'ratio':>7}  (s per "
             f"combination; fast includes {shared:.3f} s of cache reads and targets each)"]
    for chain in dict.fromkeys(chain_of(c) for c in rows):
        n_fast = sum(chain_of(c) == chain for c in rows)
        n_reference = sum(chain_of(c) == chain for c in sample)
        fast_each = fast.get(chain, 0.0) / n_fast + shared
        reference_each = reference.get(chain, 0.0) / n_reference if n_reference else float("nan")
        lines.append(f"{chain:<22} {n_fast:>5} {reference_each:>10.3f} {fast_each:>8.3f} "
                     f"{reference_each / fast_each:>6.1f}x")
    return lines


def largest_differences(reference: pd.DataFrame, fast: pd.DataFrame) -> dict[str, float]:
    """max |reference - fast| per numeric column (NaN in both counts as equal); settings must be equal."""
    if list(reference.columns) != list(fast.columns):
        raise SystemExit(f"columns differ: {list(reference.columns)} vs {list(fast.columns)}")
    numeric = reference.select_dtypes("number").columns
    if not reference.drop(columns=numeric).equals(fast.drop(columns=numeric)):
        raise SystemExit("settings or flags differ between the scorers")
    a, b = reference[numeric].to_numpy(float), fast[numeric].to_numpy(float)
    both_nan = np.isnan(a) & np.isnan(b)
    difference = np.where(both_nan, 0.0, np.abs(a - b))
    return {column: float(np.max(difference[:, k], initial=0.0)) for k, column in enumerate(numeric)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, default=Path("."), help="the run's directory (results/, data/)")
    parser.add_argument("--config", type=Path, default=ROOT / "config.yaml", help="the config that built the cache")
    parser.add_argument("--encoder", default="minilm")
    parser.add_argument("--grid", default="default", help="'default' or CONFIG:NAME (cut to the cache)")
    parser.add_argument("--reference-every", type=int, default=1, help="the reference scores every k-th combination")
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads of both scorers")
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    args = parser.parse_args(argv)

    config = read_config(args.config)
    options = scoring_options(config)
    work = args.workdir
    evaluation = evaluation_set(work / dag.data_dir("senteval"), STS_TASKS, options["alignment"])
    corpus = read_lines(work / dag.fit_corpus_file())
    cache = work / Path(dag.baseline_cache(args.encoder, "none")).parent
    caches = {root.name: root for root in sorted(cache.iterdir()) if (root / INDEX).exists()}
    embeddings = CachedEmbeddings(caches, evaluation, corpus)
    n_layers = read_json(next(iter(caches.values())) / INDEX)["n_layers"]
    grid, templates = grid_of(args.grid, config, args.encoder)
    asked = combinations(grid, n_layers, templates, "bench")
    rows = cached_combinations(asked, embeddings)
    sample = rows[::args.reference_every]
    print(f"grid {args.grid}: {len(rows)} combinations over the cache of {args.encoder} ({len(asked) - len(rows)} of "
          f"the grid's not cached); reference on {len(sample)}; BLAS threads {args.threads}; cores {os.cpu_count()}")
    print(f"load average before: {os.getloadavg()}", flush=True)

    with threadpool_limits(limits=args.threads):
        table, fast_by_chain, reference_rows, reference_by_chain = interleaved(rows, embeddings, evaluation, options,
                                                                               args.reference_every)
    fast_seconds, reference_seconds = sum(fast_by_chain.values()), sum(reference_by_chain.values())
    print(f"reference (score_combination) {reference_seconds:8.1f} s  "
          f"{reference_seconds / len(sample):.3f} s per combination")
    print(f"fast (score_grid)             {fast_seconds:8.1f} s  {fast_seconds / len(rows):.3f} s per combination")
    ratio = (reference_seconds / len(sample)) / (fast_seconds / len(rows))
    differences = largest_differences(pd.DataFrame(reference_rows), table.iloc[::args.reference_every]
                                      .reset_index(drop=True))
    print(f"ratio x{ratio:.1f}; largest |difference| over the {len(sample)} shared combinations: "
          f"{max(differences.values()):.3g} ({max(differences, key=differences.get)})")
    print("\n".join(by_chain(rows, sample, fast_by_chain, reference_by_chain)))
    result = {"grid": args.grid, "combinations": len(rows), "reference_combinations": len(sample),
              "threads": args.threads, "reference_seconds": round(reference_seconds, 2),
              "fast_seconds": round(fast_seconds, 2),
              "reference_seconds_per_combination": round(reference_seconds / len(sample), 4),
              "fast_seconds_per_combination": round(fast_seconds / len(rows), 4), "ratio": round(ratio, 2),
              "largest_differences": differences, "fast_seconds_by_chain": fast_by_chain,
              "reference_seconds_by_chain": reference_by_chain, "load_average_after": os.getloadavg()}
    print(f"load average after: {result['load_average_after']}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
