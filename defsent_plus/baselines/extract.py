"""One (encoder, template) forward pass with every hidden state, turned into the sentence embeddings of every layer
set x source x aggregation the grid asks for, cached as one directory per layer set.

The cache (``results/baselines/<encoder>/cache/<template>/``, laid out as :func:`.spec.cache_file` says) is read
without a model, so adding a post-processor re-runs only the grid job. Length-sorted, dynamically padded batches;
bf16 autocast on a GPU; without a template, the STS sentences are batched as :mod:`defsent_plus.baselines.reuse` says.

Token vectors without a forward pass (003 Sections 3.2.3 and 3.2.5): Avg. averages each token's contextual vectors (of
one layer set) over all its occurrences in the fit corpus, and a sentence is then aggregated from these static vectors
("encoder + Avg." averages the two sentence embeddings); random embeddings give every vocabulary token a seeded
N(0, std^2) vector of the model's width.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import torch
from numpy.lib.format import open_memmap
from tqdm.auto import tqdm

from defsent_plus.baselines.aggregation import (
    BatchTokens,
    DeviceTables,
    aggregate,
    batch_tokens,
    idf_table,
    most_frequent,
    only_known,
    punctuation_table,
    require_fast,
    rows_of,
    token_ids,
)
from defsent_plus.baselines.sentences import evaluation_set, read_lines
from defsent_plus.baselines.spec import (
    AVG,
    ENCODER,
    INDEX,
    RANDOM,
    RANDOM_LAYERS,
    STATIC_LAYER,
    for_layers,
    layer_set_name,
    layer_sets,
    render_all,
)
from defsent_plus.encoders.encoding import autocast_for, device_for_run, length_order
from defsent_plus.encoders.models import Encoder, load_encoder
from defsent_plus.errors import DefSentError
from defsent_plus.evaluation.embeddings import sts_sentences, training_provenance, training_seeds
from defsent_plus.evaluation.sts import STS_TASKS
from defsent_plus.io import sentences_digest, write_json
from defsent_plus.provenance import provenance, with_training

log = logging.getLogger(__name__)
NO_BIASES = {"frequent": False, "punctuation": False, "subword": False}  # a request without the biases aggregation


class StaticAccumulator:
    """Running per-token sums and counts of contextual vectors (one per layer set)."""

    def __init__(self, vocab_size: int, hidden: int):
        self.sums = torch.zeros(vocab_size, hidden, dtype=torch.float64)
        self.counts = torch.zeros(vocab_size, dtype=torch.int64)

    def add(self, vectors: torch.Tensor, input_ids: torch.Tensor, attention: torch.Tensor) -> None:
        """Add the real tokens of a [B, T, H] batch."""
        ids = input_ids[attention].cpu()
        self.sums.index_add_(0, ids, vectors[attention].detach().cpu().double())
        self.counts.index_add_(0, ids, torch.ones_like(ids))

    def table(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(float32 [V, H] mean vector per token (0 where unseen), bool [V] seen)."""
        seen = self.counts > 0
        means = self.sums / self.counts.clamp(min=1).unsqueeze(1).double()
        return means.float(), seen


def random_table(vocab_size: int, hidden: int, seed: int, std: float) -> torch.Tensor:
    """Seeded N(0, std^2) vectors, one per vocabulary token (float32 [V, H])."""
    rng = np.random.default_rng(seed)
    return torch.from_numpy(rng.normal(0.0, std, size=(vocab_size, hidden)).astype(np.float32))


class Cache:
    """The npy files of one template's cache, written row block by row block."""

    def __init__(self, root: Path):
        self.root = root
        self.arrays: dict[tuple[str, str], np.ndarray] = {}
        self.fallbacks: dict[str, int] = {}

    def write(self, layers: str, key: str, n_rows: int, rows: np.ndarray, values: torch.Tensor, fallback: int) -> None:
        if (layers, key) not in self.arrays:
            path = self.root / layers / f"{key}.npy"
            path.parent.mkdir(parents=True, exist_ok=True)
            self.arrays[layers, key] = open_memmap(path, mode="w+", dtype=np.float32, shape=(n_rows, values.shape[1]))
        self.arrays[layers, key][rows] = values.float().cpu().numpy()
        if fallback:
            name = f"{layers}/{key}"
            self.fallbacks[name] = self.fallbacks.get(name, 0) + fallback

    def close(self) -> None:
        for array in self.arrays.values():
            array.flush()
        self.arrays.clear()


def token_tables(tokenizer, corpus: Sequence[str], corpus_texts: Sequence[str], options: dict, max_length: int,
                 device: torch.device) -> DeviceTables:
    """idf over the fit corpus as the model reads it (template and special tokens included, so both get idf ~0);
    the most frequent tokens over the plain corpus."""
    size = len(tokenizer)
    frequent = np.zeros(size, dtype=bool)
    special = tokenizer.all_special_ids
    top = options.get("frequent_tokens", 0)
    frequent[most_frequent(token_ids(tokenizer, corpus, max_length), size, top, special)] = True
    idf = idf_table(token_ids(tokenizer, corpus_texts, max_length), size, "config: baselines.fit_corpus")
    tables = (idf, frequent, punctuation_table(tokenizer))
    return DeviceTables(*(torch.from_numpy(table).to(device) for table in tables), options.get("biases", NO_BIASES))


def batches(tokenizer, texts: Sequence[str], blocks: Sequence[tuple[int, int]], max_length: int,
            device: torch.device) -> Iterator[tuple[np.ndarray, dict, BatchTokens]]:
    """(rows, model inputs, token facts) of length-sorted batches, block by block: ``blocks`` are (rows, batch size)
    pairs cutting ``texts`` into consecutive blocks, each sorted and batched on its own."""
    start = 0
    for size, batch_size in blocks:
        order = start + length_order(texts[start:start + size], tokenizer, max_length)
        for first in range(0, size, batch_size):
            rows = order[first:first + batch_size]
            encoding = tokenizer([texts[i] for i in rows], padding=True, truncation=True, max_length=max_length,
                                 return_tensors="pt", return_special_tokens_mask=True)
            inputs = {k: v.to(device) for k, v in encoding.items() if k != "special_tokens_mask"}
            yield rows, inputs, batch_tokens(encoding, tokenizer, device)
        start += size


def layer_vectors(model, inputs: dict, layers: tuple[int, ...],
                  hidden_states: tuple[torch.Tensor, ...]) -> torch.Tensor:
    """The mean of a layer set's token vectors [B, T, H] (layer -1: input embedding rows)."""
    stack = [model.get_input_embeddings()(inputs["input_ids"]) if k == STATIC_LAYER else hidden_states[k]
             for k in layers]
    return torch.stack([t.float() for t in stack]).mean(0)


class Extraction:
    """Everything one (encoder, template) job computes."""

    def __init__(self, encoder: Encoder, request: dict, options: dict, grid_key: str, device: torch.device):
        require_fast(encoder.tokenizer, str(encoder.path))
        self.encoder, self.request, self.options, self.device = encoder, request, options, device
        n_layers = encoder.model.config.num_hidden_layers
        main, sweep = layer_sets(request["layers"], request["sweep"], n_layers, grid_key)
        self.main = {layer_set_name(s): s for s in main}
        self.layers = {layer_set_name(s): s for s in [*sweep, *main]}
        encoder_aggregations = request["aggregations"].get(ENCODER, [])
        self.aggregations = {  # the encoder's aggregations of a main layer set, then the sweep's of a single layer
            name: for_layers(list(dict.fromkeys([*(encoder_aggregations if s in main else []),
                                                 *(request["sweep"] if s in sweep else [])])), s)
            for name, s in self.layers.items()}
        self.statics: dict[str, StaticAccumulator] = {}

    def texts(self, sentences: Sequence[str], max_length: int, split: str) -> list[str]:
        texts, cut = render_all(self.request["text"], list(sentences), self.encoder.tokenizer, max_length)
        if cut:
            log.info("%s: %d sentences cut to fit template %s in %d tokens", split, cut, self.request["template"],
                     max_length)
        return texts

    def run(self, evaluation: Sequence[str], corpus: Sequence[str], task_rows: dict[str, np.ndarray], out_dir: Path,
            batch_size: int, max_length: int, record: dict | None = None, leading: tuple[int, int] | None = None
            ) -> dict:
        """Encode both splits into the cache and write its index (with ``record``: what computed it). ``leading``:
        :func:`sts_block`, a first block of the evaluation split batched on its own."""
        tokenizer = self.encoder.tokenizer
        eval_texts = self.texts(evaluation, max_length, "eval")
        corpus_texts = self.texts(corpus, max_length, "corpus")
        tables = token_tables(tokenizer, corpus, corpus_texts, self.options, max_length, self.device)
        splits = [Split("corpus", corpus_texts, split_blocks(len(corpus_texts), batch_size, None), tables, {}),
                  Split("eval", eval_texts, split_blocks(len(eval_texts), batch_size, leading), tables,
                        self.task_tables(tables, task_rows, eval_texts, max_length))]
        cache = Cache(out_dir)
        if AVG in self.request["aggregations"]:
            self.statics = {name: StaticAccumulator(len(tokenizer), self.encoder.hidden_size) for name in self.main}
        seconds = {}
        for split in splits:  # the corpus first: Avg.'s static vectors come from it
            start = time.perf_counter()
            self.encode_split(cache, split, max_length)
            seconds[split.name] = round(time.perf_counter() - start, 1)
        start = time.perf_counter()
        self.static_sources(cache, splits)
        seconds["static_sources"] = round(time.perf_counter() - start, 1)
        cache.close()
        index = {"template": self.request["template"], "text": self.request["text"],
                 "layers": {name: list(s) for name, s in self.layers.items()}, "main_layers": list(self.main),
                 "n_layers": self.encoder.model.config.num_hidden_layers, "hidden": self.encoder.hidden_size,
                 "eval_sentences": len(evaluation), "eval_digest": sentences_digest(evaluation),
                 "corpus_sentences": len(corpus), "corpus_digest": sentences_digest(corpus),
                 "frequent_tokens": tokenizer.convert_ids_to_tokens(tables.frequent.nonzero().flatten().tolist()),
                 "fallbacks": cache.fallbacks, **({"provenance": record} if record else {})}
        log.info("forward pass seconds: %s", seconds)
        for name, count in cache.fallbacks.items():
            log.info("%s: %d sentences had no token left and fell back to mean_nospecial", name, count)
        write_json(out_dir / INDEX, index)
        return index

    def task_tables(self, tables: DeviceTables, task_rows: dict[str, np.ndarray], eval_texts: list[str],
                    max_length: int) -> dict[str, tuple[np.ndarray, int, DeviceTables]]:
        """Where a request asks for ``idf_task``, each task's (every evaluation row's position among the task's rows,
        -1 outside; its number of rows; its own-idf tables), else none."""
        tokenizer = self.encoder.tokenizer
        if not any("idf_task" in aggregations for aggregations in
                   [*self.aggregations.values(), *self.request["aggregations"].values()]):
            return {}
        tasks = {}
        for task, rows in task_rows.items():
            positions = np.full(len(eval_texts), -1, dtype=np.int64)
            positions[rows] = np.arange(len(rows))
            idf = idf_table(token_ids(tokenizer, [eval_texts[i] for i in rows], max_length), len(tokenizer),
                            f"STS task {task}")
            tasks[task] = (positions, len(rows), replace(tables, idf=torch.from_numpy(idf).to(self.device)))
        return tasks

    @torch.inference_mode()
    def encode_split(self, cache: Cache, split: Split, max_length: int) -> None:
        """The encoder's sentence vectors of one split (and the corpus' Avg. sums)."""
        model = self.encoder.model.eval()
        bar = tqdm(total=len(split.texts), desc=f"{self.request['template']} {split.name}", unit="sent",
                   mininterval=10)
        for rows, inputs, tokens in batches(self.encoder.tokenizer, split.texts, split.blocks, max_length,
                                            self.device):
            split.tokenised.append((rows, tokens))  # the static sources reuse the tokenisation
            with autocast_for(self.device):
                hidden_states = model(**inputs, output_hidden_states=True).hidden_states
            for name, layers in self.layers.items():
                vectors = layer_vectors(model, inputs, layers, hidden_states)
                split.write(cache, name, ENCODER, self.aggregations[name], vectors, tokens, rows)
                if split.name == "corpus" and name in self.statics:
                    self.statics[name].add(vectors, tokens.input_ids, tokens.attention)
            bar.update(len(rows))
        bar.close()

    @torch.inference_mode()
    def static_sources(self, cache: Cache, splits: list[Split]) -> None:
        """Avg. (per main layer set) and random embeddings: token vectors looked up in the splits' tokenisation, no
        forward pass."""
        tokenizer = self.encoder.tokenizer
        lookups = {(name, AVG): tuple(part.to(self.device) for part in accumulator.table())  # (table, seen)
                   for name, accumulator in self.statics.items()}
        if RANDOM in self.request["aggregations"]:
            options = self.options["random"]
            table = random_table(len(tokenizer), self.encoder.hidden_size, options["seed"], options["std"])
            lookups[RANDOM_LAYERS, RANDOM] = (table.to(self.device), None)
        for (layers, source), (table, seen) in lookups.items():
            for split in splits:
                for rows, tokens in split.tokenised:
                    tokens = only_known(tokens, seen) if seen is not None else tokens
                    split.write(cache, layers, source, self.request["aggregations"][source], table[tokens.input_ids],
                                tokens, rows)


@dataclass(frozen=True)
class Split:
    """One split's texts, its (rows, batch size) blocks, its tables (the fit corpus' and, on the evaluation split,
    each task's, :meth:`Extraction.task_tables`, whose ``idf_task`` vectors go into that task's rows) and its batches'
    token facts once encoded."""

    name: str
    texts: list[str]
    blocks: list[tuple[int, int]]
    tables: DeviceTables
    tasks: dict[str, tuple[np.ndarray, int, DeviceTables]]
    tokenised: list[tuple[np.ndarray, BatchTokens]] = field(default_factory=list)

    def write(self, cache: Cache, layers: str, source: str, aggregations: Sequence[str], vectors: torch.Tensor,
              tokens: BatchTokens, rows: np.ndarray) -> None:
        """One batch's ``aggregations`` of one (layer set, source) into the cache."""
        for aggregation in aggregations:
            if aggregation != "idf_task" or not self.tasks:
                pooled, fallback = aggregate(aggregation, vectors, tokens, self.tables)
                cache.write(layers, f"{source}.{aggregation}.{self.name}", len(self.texts), rows, pooled, fallback)
                continue
            for task, (positions, size, tables) in self.tasks.items():
                where = positions[rows]
                inside = where >= 0
                if inside.any():
                    keep = torch.from_numpy(inside).to(vectors.device)
                    pooled, fallback = aggregate("idf_task", vectors[keep], rows_of(tokens, keep), tables)
                    cache.write(layers, f"{source}.idf_task.{self.name}-{task}", size, where[inside], pooled,
                                fallback)


def split_blocks(n_rows: int, batch_size: int, leading: tuple[int, int] | None) -> list[tuple[int, int]]:
    """A split's (rows, batch size) blocks: the ``leading`` block, then the rest."""
    blocks = [leading, (n_rows - leading[0], batch_size)] if leading else [(n_rows, batch_size)]
    return [(size, block_batch) for size, block_batch in blocks if size > 0]


def write_cache(model_dir: str | Path, senteval_dir: str | Path, corpus_txt: str | Path, out_dir: str | Path,
                request: dict, options: dict, grid_key: str) -> None:
    """One (encoder, template) cache directory."""
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
