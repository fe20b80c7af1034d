"""The reverse dictionary's shared ranking (001, Table 2's task on 000's held-out entries): ranks and their metrics
(MRR, MRR@10, top-k), held-out queries, the like-for-like ``cosine`` protocol, intervals and paired tests, the pages
and every run side by side. Each method's own protocol is beside its method (``defsent_plus.methods.<name>``).
Light at import (no torch): the ranking jobs load torch when they rank.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from defsent_plus.errors import DefSentError
from defsent_plus.evaluation.embeddings import training_provenance, training_seeds
from defsent_plus.evaluation.intervals import Bootstrap
from defsent_plus.io import read_json, write_json, write_page, write_tsv
from defsent_plus.names import COSINE, HELDOUT_SPLITS, RANKING_METRICS
from defsent_plus.provenance import provenance, provenance_footer, with_training

if TYPE_CHECKING:
    import torch

    from defsent_plus.encoders.models import Encoder

Method = Any  # a defsent_plus.methods.base.Method (evaluation imports no method: the methods import it)
Protocol = Any  # its ReverseDictionaryProtocol
CUTOFF = 10  # DefSent's def2word evaluation counts only hits within the top 10 in its "MRR"
QUERY_COLUMNS = ("entry_id", "entry", "definition", "split")


def ranks_of_targets(logits: np.ndarray | torch.Tensor, targets: np.ndarray | torch.Tensor) -> np.ndarray:
    """1-based rank of each row's target among all columns; ties count against the target (pessimistic)."""
    if isinstance(logits, np.ndarray):  # on the host: no copy (a 128 x 206,546 chunk is 106 MB)
        rows = np.asarray(targets, dtype=np.int64)
        target_scores = logits[np.arange(len(rows)), rows]
        return (logits >= target_scores[:, None]).sum(1)
    import torch

    targets = torch.as_tensor(np.asarray(targets, dtype=np.int64), device=logits.device)
    target_scores = logits.gather(1, targets[:, None])
    return (logits >= target_scores).sum(1).cpu().numpy()


def ranking_metrics(ranks: np.ndarray) -> dict[str, float]:
    """MRR over the full ranking, ``mrr_at_10`` (only hits within the top :data:`CUTOFF` count, DefSent's "MRR"),
    top-1/3/10 accuracy in % and the number of queries."""
    ranks = np.asarray(ranks, dtype=np.float64)
    if len(ranks) == 0 or ranks.min() < 1:
        raise DefSentError("ranking metrics", "expected at least one 1-based rank")
    once = resampled_metrics(ranks, np.arange(len(ranks))[None, :])
    return {**{metric: float(values[0]) for metric, values in once.items()}, "queries": len(ranks)}


def resampled_metrics(ranks: np.ndarray, index: np.ndarray) -> dict[str, np.ndarray]:
    """:func:`ranking_metrics` (without ``queries``) on every resample ``index`` [B, n] of the queries at once."""
    resampled = np.asarray(ranks, dtype=np.float64)[index]
    reciprocal = 1.0 / resampled
    return {"mrr": reciprocal.mean(axis=1),
            f"mrr_at_{CUTOFF}": np.where(resampled <= CUTOFF, reciprocal, 0.0).mean(axis=1),
            **{f"top{k}": (resampled <= k).mean(axis=1) * 100 for k in (1, 3, 10)}}


def ranking_bootstrap(ranks: Sequence[np.ndarray], options: dict) -> Bootstrap:
    """Several models' ranks of the SAME queries, resampled together (seeded, ``options``: ``resamples``, ``level``,
    ``seed`` as evaluation.bootstrap): each model's percentile intervals of every ranking metric, and any two
    models' paired test, as for STS (:mod:`defsent_plus.evaluation.intervals`)."""
    n = len(ranks[0])
    if any(len(r) != n for r in ranks):
        raise DefSentError("ranking bootstrap", "the models ranked different numbers of queries")
    index = np.random.default_rng(options["seed"]).integers(0, n, size=(options["resamples"], n))
    points = [ranking_metrics(r) for r in ranks]
    resampled = [resampled_metrics(r, index) for r in ranks]
    return Bootstrap({key: [p[key] for p in points] for key in resampled[0]},
                     {key: [r[key] for r in resampled] for key in resampled[0]}, options["level"])


def read_queries(path: str | Path, frame: pd.DataFrame) -> pd.DataFrame:
    """A queries parquet of the subset stage, checked against the dataset it was held out of."""
    path = Path(path)
    if not path.is_file():
        raise DefSentError(path, "queries file not found")
    queries = pd.read_parquet(path)
    missing = set(QUERY_COLUMNS) - set(queries.columns)
    if missing:
        raise DefSentError(path, f"not a queries file: missing columns {sorted(missing)}")
    ids = queries["entry_id"].to_numpy()
    if len(ids) and (ids.min() < 0 or ids.max() >= len(frame)):
        raise DefSentError(path, f"entry id out of range [0, {len(frame)})")
    wrong = queries["entry"].to_numpy() != frame["entry"].to_numpy()[ids]
    if wrong.any():
        row = queries.iloc[int(np.argmax(wrong))]
        raise DefSentError(path, f"query for {row.entry!r} points to entry {row.entry_id}, which is "
                                 f"{frame['entry'].iloc[row.entry_id]!r}: not the dataset it was held out of")
    for split in HELDOUT_SPLITS:
        if not (queries["split"] == split).any():
            raise DefSentError(path, f"no {split} queries")
    return queries


def query_ranks(vectors: np.ndarray | torch.Tensor, scores: Callable, targets: np.ndarray, chunk: int = 128
                ) -> np.ndarray:
    """1-based rank of each query's target (its column of the scores); ``vectors`` are the queries' encodings
    (encoded at once, so batched by length), ``scores`` maps ``chunk`` of them to ``[chunk, n_candidates]``
    (chunked for memory)."""
    ranks = [ranks_of_targets(scores(vectors[i : i + chunk]), targets[i : i + chunk])
             for i in range(0, len(vectors), chunk)]
    return np.concatenate(ranks) if ranks else np.empty(0, dtype=np.int64)


def split_metrics(ranks: Mapping[str, np.ndarray], frame: pd.DataFrame) -> dict[str, dict]:
    """MRR, top-1/3/10 and counts per held-out split (``ranks``: :func:`ranks_by_split`): queries, held-out entries
    and those without a query."""
    result = {}
    for split, in_split in ranks.items():
        entries = int((frame["split"] == split).sum()) if "split" in frame.columns else 0
        result[split] = {**ranking_metrics(in_split), "entries": entries, "without_query": entries - len(in_split)}
    return result


def unit_rows(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def cosine_ranks(encoder: Encoder, space: np.ndarray, queries: pd.DataFrame, batch_size: int = 128,
                 max_length: int = 128) -> np.ndarray:
    """Each query's entry rank by cosine of the encoder's mean-pooled query to ``space`` (the ``cosine`` protocol:
    no pooler, no head; the same entry embeddings for every model), every query encoded at once as
    :func:`batching_for` picks for the device (``batch_size`` queries scored at a time)."""
    space = unit_rows(space)
    vectors = unit_rows(encoded_queries(encoder, list(queries["definition"]), "mean", batch_size, max_length))
    return query_ranks(vectors, lambda chunk: chunk @ space.T, queries["entry_id"].to_numpy(), batch_size)


def encoded_queries(encoder: Encoder, sentences: Sequence[str], pooling: str, batch_size: int = 128,
                    max_length: int = 128) -> np.ndarray:
    """``sentences`` pooled by ``pooling`` on the run's device, all at once: sorted by length into the batches
    :func:`batching_for` picks for the device (a chunk of unsorted queries pads to its longest)."""
    from defsent_plus.encoders.encoding import (
        batching_for,  # torch
        device_for_run,
    )

    encoder.to(device_for_run())
    batch, max_tokens = batching_for(encoder.device, batch_size)
    return encoder.encode(sentences, pooling, batch_size=batch, max_length=max_length, max_tokens=max_tokens)


def ranks_by_split(ranks: np.ndarray, queries: pd.DataFrame) -> dict[str, np.ndarray]:
    return {split: ranks[(queries["split"] == split).to_numpy()] for split in HELDOUT_SPLITS}


def metrics_by_split(ranks: Mapping[str, np.ndarray]) -> dict[str, dict]:
    return {split: ranking_metrics(r) for split, r in ranks.items()}


def with_uncertainty(results: dict[str, dict], ranks: dict[str, dict[str, dict[str, np.ndarray]]],
                     like_for_like: Sequence[str], options: dict | None) -> dict:
    """The results with their ``intervals`` and the ``paired`` tests (none without ``options``). ``ranks[label]
    [protocol][split]``: ranks of the same queries by ``trained`` and ``base``. Per label the percentile intervals of
    every metric, ``{protocol: {split: {metric: [low, high]}}}``, and for the protocols both models are scored by
    alike (``like_for_like``) the paired test trained − base, ``{protocol: {split: {metric: {difference, low, high,
    p}}}}`` (queries resampled together: :func:`ranking_bootstrap`)."""
    if options is None:
        return results
    intervals: dict[str, dict] = {label: {} for label in ranks}
    paired: dict[str, dict] = {}
    for protocol, splits in ranks["trained"].items():
        for split, trained in splits.items():
            resampled = ranking_bootstrap([trained, ranks["base"][protocol][split]], options)
            for m, label in enumerate(("trained", "base")):
                intervals[label].setdefault(protocol, {})[split] = {
                    metric: [i.low, i.high] for metric, i in resampled.intervals(m).items()}
            if protocol in like_for_like:
                paired.setdefault(protocol, {})[split] = {
                    metric: {"difference": t.difference.value, "low": t.difference.low, "high": t.difference.high,
                             "p": t.p_value} for metric, t in resampled.paired(0, 1).items()}
    return {**{label: {**model, "intervals": intervals[label]} for label, model in results.items()},
            "paired": paired, "bootstrap": dict(options)}


def ranking_provenance(model_dir: str | Path, bootstrap: dict | None, **seeds: int) -> dict:
    """What a run's reverse-dictionary numbers were computed with (:func:`defsent_plus.provenance.provenance`: versions,
    device, precision, threads) and their seeds: the trained model's training seed, the bootstrap's and ``seeds``
    (e.g. an initialised head's); with the trained model's own training provenance (``trained_with``)."""
    import torch

    from defsent_plus.encoders.encoding import device_for_run

    drawn = {**training_seeds(model_dir), **seeds, **({"bootstrap": bootstrap["seed"]} if bootstrap else {})}
    record = provenance(str(device_for_run()), torch.get_num_threads(), drawn)
    return with_training(record, training_provenance(model_dir))


def only(paths: Sequence[str | Path]) -> str | Path:
    """The one file of a rule input that lists exactly one."""
    if isinstance(paths, str | Path):
        return paths
    if len(paths) != 1:
        raise DefSentError("reverse dictionary", f"expected one starting-model entry space, got {list(paths)}")
    return paths[0]


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
    rows: dict[tuple[str, str], dict] = {}
    for t in paired_records(results):
        if t["metric"] in ("mrr", "top10"):
            row = rows.setdefault((t["protocol"], t["split"]), {"protocol": t["protocol"], "split": t["split"]})
            mark = "" if t["distinguishable"] else " n.s."
            row[t["metric"]] = f"{t['difference']:+.3f} [{t['low']:+.3f}, {t['high']:+.3f}]{mark}"
            row[f"p ({t['metric']})"] = f"{t['p']:.3f}"
    return pd.DataFrame(list(rows.values()))


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


def ranking_rows(results: dict, splits_of: Callable[[dict], dict[str, dict]], scoring: bool = False) -> list[dict]:
    """One row per (model, protocol, split) of a run's reverse-dictionary results, read by its method's protocol
    (``splits_of``): (with ``scoring``, how the protocol scores) candidates, queries, metrics and the intervals'
    bounds where the run computed them."""
    rows = []
    for label in ("trained", "base"):
        model = results[label]
        for protocol, splits in splits_of(model).items():
            cosine = protocol == COSINE
            how = {"scoring": COSINE if cosine else model["scoring"]} if scoring else {}
            rows += [{"model": label, "protocol": protocol, "split": split, **how,
                      "candidates": model["cosine_candidates" if cosine else "candidates"],
                      "queries": metrics["queries"], **{k: metrics.get(k) for k in RANKING_METRICS},
                      **interval_columns(results, label, protocol, split)} for split, metrics in splits.items()]
    return rows


def ranking_page(title: str, description: str, table: pd.DataFrame, results: dict, shown: pd.DataFrame | None = None,
                 note: str = "") -> str:
    """A run's reverse-dictionary page: what is measured, the table (``shown``: its view for readers), a ``note``
    under it, the chance levels, the paired tests and what the numbers were computed with."""
    return (f"# {title}\n\n{description}\n\n* {COSINE_DESCRIPTION}\n\n"
            + (table if shown is None else shown).to_markdown(index=False, floatfmt=".3f")
            + (f"\n{note}\n\n" if note else "\n\n") + chance_note(table["candidates"]) + "\n"
            + paired_markdown(results) + provenance_footer([results.get("provenance", {})]))


def write_ranking(method: str, results: dict, ranks: dict[str, dict[str, dict[str, np.ndarray]]],
                  like_for_like: Sequence[str], splits_of: Callable[[dict], dict[str, dict]],
                  page: Callable[[dict, pd.DataFrame], str], *, model_dir: str | Path, bootstrap: dict | None,
                  out_json: str | Path, out_tsv: str | Path, out_md: str | Path, scoring: bool = False,
                  **seeds: int) -> dict:
    """A run's reverse_dictionary.{json,tsv,md} from its models' ``results`` and ``ranks`` (as
    :func:`with_uncertainty` takes them): the results with their intervals, paired tests and provenance (``seeds``:
    :func:`ranking_provenance`'s), the table of their rows (:func:`ranking_rows`) and the ``page`` of both."""
    results = with_uncertainty(results, ranks, like_for_like, bootstrap)
    results = {**results, "provenance": ranking_provenance(model_dir, bootstrap, **seeds)}
    table = pd.DataFrame(ranking_rows(results, splits_of, scoring))
    write_json(out_json, {"method": method, **results})
    write_tsv(out_tsv, table, float_format="%.4f")
    write_page(out_md, page(results, table))
    return results


def interval_note(results: dict[str, dict]) -> str:
    """How the reverse-dictionary table's bounds read (the runs' bootstrap level, or that none was computed)."""
    levels = sorted({result["bootstrap"]["level"] for result in results.values() if "bootstrap" in result})
    if not levels:
        return "no intervals (the runs were scored without evaluation.bootstrap)"
    return (f"`value [low, high]`: every metric's {' / '.join(f'{level:.0%}' for level in levels)} "
            "percentile-bootstrap interval over the queries (the TSV's `<metric>_low`, `<metric>_high`)")


def bounded_metrics(table: pd.DataFrame) -> pd.DataFrame:
    """The markdown's view of the table: every metric as ``value [low, high]`` in place of its bound columns (the
    value alone on rows of a run that computed no interval)."""
    bounds = [f"{metric}_{end}" for metric in RANKING_METRICS for end in ("low", "high")]
    shown = table.drop(columns=bounds, errors="ignore")
    for metric in RANKING_METRICS:
        if f"{metric}_low" in table:
            cells = zip(table[metric], table[f"{metric}_low"], table[f"{metric}_high"], strict=True)
            shown[metric] = [f"{value:.3f}" if pd.isna(low) else f"{value:.3f} [{low:.3f}, {high:.3f}]"
                             for value, low, high in cells]
    return shown


def write_comparison(*, runs: Sequence[dict], method_of: Callable[[str, str], Method], out_tsv: str | Path,
                     out_md: str | Path, out_paired: str | Path | None = None) -> pd.DataFrame:
    """Every held-out run's reverse dictionary side by side. ``runs``: one record per run (``run``, ``json``: its
    reverse_dictionary.json); each run's rows read by the protocol of its method (``method_of``: the method
    registry's look-up: how its rows read, its description); ``out_paired``: every run's trained − base differences
    with their bounds and p, in columns."""
    results = {r["run"]: read_json(r["json"]) for r in runs}
    wheres = {result["method"]: f"{r['json']}: method" for r, result in zip(runs, results.values(), strict=True)}
    protocols = {name: protocol_of(method_of(name, where), where) for name, where in wheres.items()}
    table = pd.DataFrame([{"run": run, "method": result["method"], **row} for run, result in results.items()
                          for row in ranking_rows(result, protocols[result["method"]].splits)])
    write_tsv(out_tsv, table, float_format="%.4f")
    if out_paired is not None:
        paired_columns = ["run", "protocol", "split", "metric", "difference", "low", "high", "p", "distinguishable"]
        records = [{"run": run, **record} for run, result in results.items() for record in paired_records(result)]
        write_tsv(out_paired, pd.DataFrame(records, columns=paired_columns), float_format="%.4f")
    methods = dict.fromkeys(table["method"])
    header = "\n".join(f"* {protocols[m].description}" for m in methods)
    paired = pd.concat([paired_table(result).assign(run=run) for run, result in results.items()], ignore_index=True)
    text = ("# Reverse dictionary of every run\n\nThe methods rank different candidates (the `candidates` column), "
            "so compare numbers within a protocol:\n\n" + header + f"\n* {COSINE_DESCRIPTION}\n\n`model`: trained "
            "= the run's final dev-selected model, base = its starting model untrained by the run. MRR over the full "
            "ranking, MRR@10 (hits beyond the top 10 count 0), top-k accuracy in %; " + interval_note(results)
            + ".\n\n" + bounded_metrics(table).to_markdown(index=False, floatfmt=".3f") + "\n\n"
            + "".join(f"{protocols[m].base_note}\n\n" for m in methods if protocols[m].base_note)
            + chance_note(table["candidates"]) + "\n")
    if not paired.empty:
        text += ("\n## Trained − base on the same queries (paired bootstrap; n.s.: the interval covers 0)\n\n"
                 + paired[["run", *[c for c in paired.columns if c != "run"]]].to_markdown(index=False) + "\n")
    text += provenance_footer([result.get("provenance", {}) for result in results.values()])
    write_page(out_md, text)
    return table


def protocol_of(method: Method, where: str = "reverse dictionary") -> Protocol:
    """The reverse-dictionary protocol ``method`` declares."""
    if method.reverse_dictionary is None:
        raise DefSentError(where, f"method {method.name!r} declares no reverse-dictionary protocol")
    return method.reverse_dictionary


def write_run_reverse_dictionary(*, method: Method, **job) -> dict:
    """A run's reverse dictionary by its ``method``'s declared protocol (``job``: the protocol writer's arguments)."""
    protocol = protocol_of(method)
    return protocol.write(method=method.name, description=protocol.description, **job)

