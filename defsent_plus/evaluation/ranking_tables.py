"""The reverse dictionary's tables, without torch (the comparison job reads them): the like-for-like ``cosine``
protocol's description, the intervals' columns and the paired tests' rows. Which protocol rows a method's result
holds is the method's (``ReverseDictionaryProtocol.splits``)."""

from __future__ import annotations

import pandas as pd

COSINE_DESCRIPTION = (
    "`cosine` (every model, like for like): the model's mean-pooled query against the SAME entry embeddings for "
    "every model, the starting model's AMP space of the run's entries (no pooler, no head), so trained and base differ "
    "only in their sentence embeddings")


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
