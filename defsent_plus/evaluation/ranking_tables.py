"""The reverse dictionary's tables, without torch (the comparison job reads them): the like-for-like ``cosine``
protocol's description, the intervals' columns and the paired tests' rows. Which protocol rows a method's result
holds is the method's (``ReverseDictionaryProtocol.splits``)."""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

COSINE_DESCRIPTION = (
    "`cosine` (every model, like for like): the model's mean-pooled query against the SAME entry embeddings for "
    "every model, the starting model's AMP space of the run's entries (no pooler, no head), so trained and base differ "
    "only in their sentence embeddings")


def random_ranking_metrics(candidates: int) -> dict[str, float]:
    """The expected metrics of a uniformly random ranking of ``candidates``: the true entry's rank is uniform on
    1..n, so MRR = H_n / n, MRR@10 = H_min(10,n) / n and top-k accuracy = 100 · min(k, n) / n %."""
    def harmonic(count: int) -> float:
        return sum(1.0 / rank for rank in range(1, count + 1))

    n = int(candidates)
    return {"mrr": harmonic(n) / n, "mrr_at_10": harmonic(min(10, n)) / n,
            **{f"top{k}": 100.0 * min(k, n) / n for k in (1, 3, 10)}}


def chance_note(candidates: Iterable[int]) -> str:
    """A line under a reverse-dictionary table: the chance level of each candidate count in its rows."""
    levels = []
    for n in sorted({int(c) for c in candidates}):
        chance = random_ranking_metrics(n)
        levels.append(f"{n:,} candidates: mrr = H_{n}/{n} = {chance['mrr']:.4f}, "
                      f"mrr_at_10 = {chance['mrr_at_10']:.4f}, top1 = {chance['top1']:.3f} %, "
                      f"top3 = {chance['top3']:.3f} %, top10 = {chance['top10']:.3f} %")
    return ("Chance level (a uniformly random ranking: top-k accuracy k/n, expected MRR H_n/n over n candidates, "
            "H_n = 1 + 1/2 + ... + 1/n): " + "; ".join(levels) + ".")


def interval_columns(results: dict, label: str, protocol: str, split: str) -> dict[str, float]:
    """``<metric>_low`` and ``<metric>_high`` of one row (empty without intervals)."""
    bounds = results[label].get("intervals", {}).get(protocol, {}).get(split, {})
    return {f"{metric}_{end}": value for metric, pair in bounds.items() for end, value in zip(("low", "high"), pair,
                                                                                              strict=True)}


def paired_table(results: dict) -> pd.DataFrame:
    """Trained − base per like-for-like protocol and split: MRR and top-10 differences with interval and p."""
    rows = []
    for protocol, splits in results.get("paired", {}).items():
        for split, tests in splits.items():
            row = {"protocol": protocol, "split": split}
            for metric in ("mrr", "top10"):
                t = tests[metric]
                mark = "" if t["low"] > 0 or t["high"] < 0 else " n.s."
                row[metric] = f"{t['difference']:+.3f} [{t['low']:+.3f}, {t['high']:+.3f}]{mark}"
                row[f"p ({metric})"] = f"{t['p']:.3f}"
            rows.append(row)
    return pd.DataFrame(rows)


def paired_records(results: dict) -> list[dict]:
    """Trained − base per like-for-like protocol, split and metric, as numbers (the comparison's TSV)."""
    return [{"protocol": protocol, "split": split, "metric": metric, "difference": t["difference"], "low": t["low"],
             "high": t["high"], "p": t["p"], "distinguishable": bool(t["low"] > 0 or t["high"] < 0)}
            for protocol, splits in results.get("paired", {}).items() for split, tests in splits.items()
            for metric, t in tests.items()]


def paired_markdown(results: dict) -> str:
    """The report's section on the paired tests (empty without them)."""
    table = paired_table(results)
    if table.empty:
        return ""
    options = results["bootstrap"]
    return ("\n## Did training help? Trained − base on the same queries\n\n"
            f"Paired bootstrap over the queries ({options['resamples']:,} resamples, seed {options['seed']}, "
            f"{options['level']:.0%} intervals; both models ranked on the same resampled queries), only where both "
            "are scored alike; n.s.: the interval covers 0. The intervals measure query-sample noise, not seed "
            "variance.\n\n" + table.to_markdown(index=False) + "\n")
