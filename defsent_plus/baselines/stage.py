"""The baselines stage's three jobs: sample the fit corpus, embed per (encoder, template) into the cache, score the
grid of an encoder."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from pathlib import Path

from defsent_plus.baselines.sentences import evaluation_set, fit_corpus, read_lines, write_lines
from defsent_plus.errors import DefSentError
from defsent_plus.evaluation.embeddings import training_provenance, training_seeds
from defsent_plus.evaluation.sentence_sets import sts_sentences
from defsent_plus.io import atomic_path, read_json, write_page
from defsent_plus.provenance import provenance, with_training
from defsent_plus.sts import STS_TASKS

log = logging.getLogger(__name__)


def write_fit_corpus(options: dict, dataset: str | None, queries: Sequence[str], out_txt: str | Path) -> None:
    """The fit corpus as a text file, one sentence a line."""
    sentences = fit_corpus(options, dataset, queries)
    with atomic_path(out_txt) as tmp:
        write_lines(tmp, sentences)
    log.info("fit corpus: %d sentences (%s)", len(sentences), options.get("file") or f"definitions of {dataset}")


def write_cache(model_dir: str | Path, senteval_dir: str | Path, corpus_txt: str | Path, out_dir: str | Path,
                request: dict, options: dict, grid_key: str) -> None:
    """One (encoder, template) cache directory."""
    import torch

    from defsent_plus.baselines.extract import Extraction  # torch: only the embedding job needs it
    from defsent_plus.encoders.encoding import device_for_run
    from defsent_plus.encoders.models import load_encoder

    start = time.perf_counter()
    evaluation = evaluation_set(senteval_dir, STS_TASKS, options["alignment"])
    corpus = read_lines(corpus_txt)
    device = device_for_run()
    encoder = load_encoder(model_dir).to(device)
    tasks = {task: evaluation.task_rows(task) for task in STS_TASKS}
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    extraction = Extraction(encoder, request, options, grid_key, device)
    batch_size = options["batch_size"] * (4 if device.type == "cuda" else 1)
    record = with_training(provenance(str(device), torch.get_num_threads(), training_seeds(model_dir)),
                           training_provenance(model_dir))
    extraction.run(evaluation.sentences, corpus, tasks, out_dir, batch_size, options["max_length"], record,
                   sts_block(evaluation.sentences, senteval_dir, options))
    log.info("template %s: %d evaluation + %d corpus sentences, %d layer sets, %.1f s", request["template"],
             len(evaluation.sentences), len(corpus), len(extraction.layers), time.perf_counter() - start)


def sts_block(evaluation: Sequence[str], senteval_dir: str | Path, options: dict) -> tuple[int, int] | None:
    """(rows, batch size) of the evaluation split's leading STS sentences where the pass batches them as rule
    ``embed`` does (``options["sts_batch_size"]``, template ``none``), else None."""
    if "sts_batch_size" not in options:
        return None
    sentences = sts_sentences(senteval_dir)
    if list(evaluation[:len(sentences)]) != sentences:
        raise DefSentError(senteval_dir, "the baselines' evaluation split does not start with the STS sentences in "
                                         "the embedding stage's order")
    return len(sentences), options["sts_batch_size"]


def write_grid(caches: dict[str, str], senteval_dir: str | Path, corpus_txt: str | Path, grid: dict,
               custom_templates: dict, options: dict, grid_key: str, outputs: dict[str, str], title: str,
               n_jobs: int = 1) -> None:
    """Score every combination of an encoder's grid (``n_jobs`` processes) and write its table, summary and
    per-layer plot."""
    from defsent_plus.baselines.grid import CachedEmbeddings, score_grid
    from defsent_plus.baselines.layout import INDEX
    from defsent_plus.baselines.report import plot_layers, shown_rows, summary_markdown, write_scores
    from defsent_plus.baselines.spec import combinations
    from defsent_plus.baselines.uncertainty import plain_mean_index, plain_mean_label, row_uncertainty

    start = time.perf_counter()
    evaluation = evaluation_set(senteval_dir, STS_TASKS, options["alignment"])
    corpus = read_lines(corpus_txt)
    embeddings = CachedEmbeddings(caches, evaluation, corpus)
    n_layers = read_json(Path(next(iter(caches.values()))) / INDEX)["n_layers"]
    rows = combinations(grid, n_layers, custom_templates, grid_key)
    pairs: dict = {}
    table = score_grid(rows, embeddings, evaluation, options, n_jobs, pairs)
    scored = time.perf_counter() - start
    uncertainty = row_uncertainty(shown_rows(table), plain_mean_index(table, n_layers), pairs, evaluation,
                                  options["sts_aggregation"], options["bootstrap"])
    del pairs
    log.info("95%% intervals of %d named rows and their paired tests in %.1f s", len(uncertainty.indices),
             time.perf_counter() - start - scored)
    table.insert(0, "fit_corpus", f"{len(corpus)} sentences ({options['fit_corpus'].get('file') or 'definitions'})")
    write_scores(table, outputs["tsv"])
    notes = [f"STS: Spearman x 100 of cosine (STS12-16 '{options['sts_aggregation']}'); align/uniform: Wang & Isola on "
             "unit vectors, STS-B train (lower is better); IsoScore and mean cosine of the fit corpus' embeddings",
             f"fit corpus: {len(corpus)} sentences; post-processing fit 'corpus' = on it (the extraction study's W), "
             "'eval' = on each evaluated task's own sentences (transductive)",
             f"{len(table)} combinations scored; intervals and paired tests of the {len(uncertainty.indices)} rows "
             "named here (their seconds: the job's log)"]
    write_page(outputs["md"], summary_markdown(table, title, notes, uncertainty, plain_mean_label(n_layers)))
    plot_layers(table, n_layers, outputs["png"], title)
    inductive = table[~table["transductive"]]
    if inductive.empty:
        log.info("%d combinations in %.0f s, all transductive (none is selected on STS-B dev)", len(table),
                 time.perf_counter() - start)
        return
    best = inductive.nlargest(1, "dev").iloc[0]
    log.info("%d combinations in %.0f s; selected on STS-B dev: %s (dev %.2f, STS avg %.2f)", len(table),
             time.perf_counter() - start, ", ".join(f"{k} {best[k]}" for k in ("source", "template", "layers",
                                                                                 "aggregation", "postprocess", "fit")),
             best["dev"], best["avg"])
