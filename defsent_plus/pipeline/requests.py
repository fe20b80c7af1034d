"""The cost model's formulas: what a job of some work asks its scheduler for (runtime, mem_mb), from the config and
measured rates, with ``costs.margin``: training in detail, an encoding job (a forward pass of its sentences), a space
transform (FastICA's iterations). :mod:`defsent_plus.pipeline.job_model` applies them to each rule's jobs.

A train job's work is its examples per epoch × epochs (:func:`training_examples`), each a forward and backward pass
at the median definition length (:func:`train_flops`, :func:`training_memory_bytes`). Light on purpose (no torch,
no pandas). docs/rehearsal.md compares it with measured jobs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from defsent_plus.errors import DefSentError
from defsent_plus.pipeline.dag import EncoderId
from defsent_plus.pipeline.model_architectures import Architecture, model_architecture

REAL_DATASETS = {"a": (331_472, 150_518), "b": (122_209, 36_767), "c": (67_553, 9_647)}  # 000 Table 1: defs, entries
MEDIAN_DEFINITION_TOKENS = 12 + 2  # 000 Table 1's median length, with [CLS] and [SEP]
# A job's fixed part on a cluster node: Python and its imports, CUDA, loading the model (bench/gpu_job_start.py) and
# Snakemake's own start inside the job (docs/results.md)
START_SECONDS = 16.0
BASE_MEMORY_BYTES = 1.5e9  # Python, torch and the data beside the model (rehearsals: 0.7-1.4 GB)
UNKNOWN_MODEL_REQUEST = {"runtime": 240, "mem_mb": 8000}  # the rule's fixed request, for a model of unknown size


@dataclass(frozen=True)
class Gpu:
    """The GPU a projection assumes (config ``costs.gpu``; defaults measured on an H200, docs/gpu.md)."""

    name: str
    bf16_tflops: float  # dense bf16 peak
    utilisation: float  # share of the peak an encoding job reaches
    memory_gb: float
    step_ms_fixed: float = 24.0  # a training step's floor besides its layers: the optimiser, the objective, Python
    step_ms_per_layer: float = 1.33  # and per encoder layer: launches
    ica_tflops: float = 13.5  # FastICA's float32 rate

    @property
    def flops_per_second(self) -> float:
        return self.bf16_tflops * 1e12 * self.utilisation

    def seconds(self, flops: float, steps: float, layers: int, passes: int = 1) -> float:
        """GPU seconds of ``flops`` in ``steps`` optimiser steps of a ``layers``-layer encoder that each run
        ``passes`` passes of the encoder (the method's ``encoder_passes``): the FLOPs at the encoding rate, or the
        steps' latency floor where small batches leave the GPU waiting (every shipped config's training: a step of
        32 definitions is far from the FLOPs bound), each pass adding its layers' launches."""
        floor = steps * (self.step_ms_fixed + passes * layers * self.step_ms_per_layer) / 1000
        return max(flops / self.flops_per_second, floor)

    def ica_seconds(self, flops: float) -> float:
        return flops / (self.ica_tflops * 1e12)


def layer_parameters(config: dict) -> int:
    """Parameters of a BERT-family encoder's layers and pooler (everything but the embeddings), in closed form."""
    h, i, layers = config["hidden_size"], config["intermediate_size"], config["num_hidden_layers"]
    attention = 4 * h * h + 4 * h + 2 * h  # Q, K, V, output projection, LayerNorm
    feed_forward = 2 * h * i + i + h + 2 * h  # two dense layers, LayerNorm
    return layers * (attention + feed_forward) + h * h + h


def embedding_parameters(config: dict) -> int:
    """Word, position and token-type embeddings and their LayerNorm."""
    h = config["hidden_size"]
    return (config["vocab_size"] + config["max_position_embeddings"] + config.get("type_vocab_size", 0) + 2) * h


def dataset_size(config: dict, name: str, built: dict | None = None) -> tuple[int, int]:
    """(definitions, entries) of dataset a, b, c or a subset (its share of the definitions): ``built`` sizes where
    they are known (a rehearsal of a config without Oxford builds its real datasets), else 000 Table 1's."""
    subset = config.get("subsets", {}).get(name)
    if subset is None:
        return (built or {}).get(name) or REAL_DATASETS[name]
    definitions, entries = dataset_size(config, subset["dataset"], built)
    kept = min(subset.get("max_entries") or entries, entries)
    return round(definitions * kept / entries), kept


def training_examples(config: dict, run: str, method, options: dict, built: dict | None = None) -> tuple[float, int]:
    """(examples per epoch, epochs) of a run's training by ``method`` (its declaration), ``options`` its resolved
    options (``built``: as :func:`dataset_size`): the sentences its cost facts say an epoch trains on
    (:class:`~defsent_plus.methods.base.TrainingCosts`), given the run's training definitions: all of its dataset's,
    less a held-out split's share."""
    name = config["runs"][run]["dataset"]
    definitions, _ = dataset_size(config, name, built)
    heldout = config.get("subsets", {}).get(name, {}).get("heldout")
    trained = definitions * (1.0 if not heldout else 1.0 - heldout["dev"] - heldout["test"])
    return method.costs.sentences(options, trained), options.get("epochs", 1)


def output_classes(config: dict, run: str, method, architecture: Architecture, built: dict | None = None) -> int:
    """Classes of a run's objective, as its ``method`` declares them: its dataset's entries (``built``: as
    :func:`dataset_size`), the model's vocabulary, or 0 (in-batch contrast: no output layer)."""
    entries = dataset_size(config, config["runs"][run]["dataset"], built)[1]
    return method.output_classes(entries, architecture.config["vocab_size"])


TRAINING_FLOPS = 3.0  # a training example's FLOPs per forward FLOP: its forward and backward passes


def forward_flops(architecture: Architecture, tokens: float) -> float:
    """FLOPs of ``tokens`` through the encoder's layers: 2 × layer parameters a token."""
    return 2.0 * layer_parameters(architecture.config) * tokens


def output_layer_flops(architecture: Architecture, classes: int) -> float:
    """FLOPs of one sentence vector against ``classes`` output classes (h · Eᵀ)."""
    return 2.0 * architecture.config["hidden_size"] * classes


def train_flops(architecture: Architecture, examples: float, classes: int, tokens: float = MEDIAN_DEFINITION_TOKENS,
                passes: int = 1) -> float:
    """Forward and backward FLOPs of ``examples`` training examples: 3 × (the encoder's ``passes`` over ``tokens`` +
    the objective's output layer)."""
    return examples * TRAINING_FLOPS * (forward_flops(architecture, tokens) * passes
                                        + output_layer_flops(architecture, classes))


def training_memory_bytes(architecture: Architecture, batch: int, length: int, classes: int,
                          parameters: int | None = None, passes: int = 1) -> float:
    """Peak memory of training: fp32 weights, gradients and Adam's two moments (16 bytes a parameter), bf16
    activations of every layer for each of the encoder's ``passes`` over the batch, all kept for the one backward
    (Korthikanti et al. 2022: s·b·h·(34 + 5·a·s/h) bytes a layer) and the objective's logits (fp32, with their
    gradient and softmax). ``parameters``: the whole model's (default: encoder and embeddings)."""
    c = architecture.config
    parameters = parameters or layer_parameters(c) + embedding_parameters(c)
    h, a, layers = c["hidden_size"], c["num_attention_heads"], c["num_hidden_layers"]
    activations = passes * layers * length * batch * h * (34 + 5 * a * length / h)
    return 16.0 * parameters + activations + 3 * 4.0 * batch * classes


def model_of_run(config: dict, run: str) -> str:
    """The config model a run's weights come from (through ``start_from`` runs)."""
    block = config["runs"][run]
    return block["model"] if "model" in block else model_of_run(config, block["start_from"])


@dataclass(frozen=True)
class Request:
    """A job's projected seconds (without the margin), what it asks for (runtime in minutes, mem_mb) and, for a train
    job, its optimiser steps."""

    seconds: float
    runtime: int
    mem_mb: int
    steps: float = 0.0


UNKNOWN_REQUEST = Request(float("nan"), **UNKNOWN_MODEL_REQUEST)  # not a projection: the rule's fixed request


def architecture_of_model(config: dict, model: str) -> Architecture | None:
    """A config model's architecture; None for a hub model without a shipped architecture or a local model not there
    yet (its jobs ask for ``UNKNOWN_MODEL_REQUEST``)."""
    try:
        return model_architecture(config["models"][model])
    except (DefSentError, OSError):
        return None


def with_margin(config: dict, seconds: float, memory_bytes: float, steps: float = 0.0) -> Request:
    """``seconds`` and ``memory_bytes`` (the base added) × ``costs.margin``, runtime at least its minimum."""
    costs = config["costs"]
    return Request(seconds, runtime=max(costs["min_runtime_minutes"], math.ceil(costs["margin"] * seconds / 60)),
                   mem_mb=math.ceil(costs["margin"] * (memory_bytes + BASE_MEMORY_BYTES) / 1e6), steps=steps)


def cpu_flops_per_second(config: dict, threads: int | str | None = None) -> float:
    """``costs.cpu``'s rate on ``threads`` (default ``resources.threads``; ``auto``: 1)."""
    threads = config["resources"]["threads"] if threads is None else threads
    return config["costs"]["cpu"]["gflops_per_thread"] * 1e9 * (threads if isinstance(threads, int) else 1)


def threads_per_job(setting: int | str, cores: int | None) -> int:
    """``resources.threads``: a number, or ``auto``: half the cores Snakemake was given (at least 1), so two jobs run
    side by side (two 1-thread jobs encode faster than one 2-thread job; the DAG mostly has two branches)."""
    return int(setting) if setting != "auto" else max(1, (cores or 2) // 2)


def training_request(config: dict, plan, run: str, on_gpu: bool) -> Request:
    """What one candidate of ``run`` asks for on a GPU node (``on_gpu``) or on ``resources.threads`` CPU threads."""
    block = config["runs"][run]
    method = plan.method(run)
    options = method.resolved_options(plan.method_options(run))
    architecture = architecture_of_model(config, model_of_run(config, run))
    if architecture is None:
        return UNKNOWN_REQUEST
    per_epoch, epochs = training_examples(config, run, method, options)
    examples = per_epoch * epochs
    classes = output_classes(config, run, method, architecture)
    steps = examples / block["batch_size"]
    passes = method.encoder_passes
    flops = train_flops(architecture, examples, classes, passes=passes)
    if on_gpu:  # the GPU holds the training state; the node's memory loads the checkpoint and the data
        seconds = Gpu(**config["costs"]["gpu"]).seconds(flops, steps, architecture.config["num_hidden_layers"], passes)
        memory = 8.0 * (layer_parameters(architecture.config) + embedding_parameters(architecture.config))
    else:
        seconds = flops / cpu_flops_per_second(config)
        memory = training_memory_bytes(architecture, block["batch_size"], options.get("max_length", 128), classes,
                                       passes=passes)
    return with_margin(config, seconds + START_SECONDS, memory, steps)


EVALUATION_SENTENCES = {"sts": 26_083, "stsb-dev": 2_909, "senteval": 111_234}  # SentEval's sets (tests check them)
BASELINE_EVALUATION_SENTENCES = 26_982  # the baselines' evaluation set: STS, STS-B train's alignment and uniformity
ENCODING_BATCH_TOKENS = 128  # the longest sentence a sorted encoding batch pads to


def encoding_request(config: dict, model: str, sentences: float, on_gpu: bool,
                     tokens: float = MEDIAN_DEFINITION_TOKENS) -> Request:
    """A job encoding ``sentences`` with config model ``model`` (a forward pass, 2 × layer parameters FLOPs a
    token): its start plus the FLOPs at the GPU's encoding rate or ``costs.cpu``'s; memory: fp32 weights (loaded
    on the node before a GPU holds them), the sentences' vectors, on a CPU node a batch's activations. A model of
    unknown architecture: ``UNKNOWN_MODEL_REQUEST``."""
    architecture = architecture_of_model(config, model)
    if architecture is None:
        return UNKNOWN_REQUEST
    c = architecture.config
    flops = sentences * 2.0 * layer_parameters(c) * tokens
    rate = Gpu(**config["costs"]["gpu"]).flops_per_second if on_gpu else cpu_flops_per_second(config)
    batch = config["evaluation"]["batch_size"] * ENCODING_BATCH_TOKENS * c["hidden_size"] * 4.0 * 8  # a few copies
    memory = 4.0 * (layer_parameters(c) + embedding_parameters(c)) + sentences * c["hidden_size"] * 4.0 * 2
    return with_margin(config, START_SECONDS + flops / rate, memory + (0.0 if on_gpu else batch))


def transform_request(config: dict, model: str, entries: int, transform: str, on_gpu: bool) -> Request:
    """A space transform of ``entries`` rows of model ``model``'s hidden size: FastICA, ``max_iter`` iterations of
    4 × entries × hidden² FLOPs, at the GPU's float32 rate (``on_gpu``) or ``costs.cpu``'s on its threads (centring
    and whitening: their start); memory: a few float64 copies of the rows and the hidden × hidden matrices."""
    architecture = architecture_of_model(config, model)
    if architecture is None:
        return UNKNOWN_REQUEST
    hidden, seconds = architecture.config["hidden_size"], START_SECONDS
    if transform == "ica":
        ica = config["entry_space"]["ica"]
        flops = ica["max_iter"] * 4.0 * entries * hidden * hidden
        seconds += Gpu(**config["costs"]["gpu"]).ica_seconds(flops) if on_gpu else flops / cpu_flops_per_second(
            config, ica["threads"])
    return with_margin(config, seconds, 8.0 * (4 * entries * hidden + 4 * hidden * hidden))


def model_of_encoder(config: dict, encoder: str) -> str:
    """The config model of an ``{encoder}`` wildcard (a base model, or the model its run trained)."""
    parsed = EncoderId.parse(encoder)
    return parsed.model if parsed.kind == "base" else model_of_run(config, parsed.run)


def reverse_dictionary_sentences(config: dict, method, run: str, built: dict | None = None,
                                 queries: float | None = None) -> float:
    """Sentences a reverse-dictionary job of ``run`` encodes, as its ``method``'s protocol declares, for its
    dataset (``built``: as :func:`dataset_size`) and ``queries`` (None: at most one per held-out entry)."""
    name = config["runs"][run]["dataset"]
    definitions, entries = dataset_size(config, name, built)
    if queries is None:
        held = config.get("subsets", {}).get(name, {}).get("heldout") or {"dev": 0.0, "test": 0.0}
        queries = entries * (held["dev"] + held["test"])
    return method.reverse_dictionary.encoded_sentences(definitions, queries)


def projection(config: dict, request: Request) -> dict[str, float]:
    """What a job is projected to use, without the margin: ``runtime`` (minutes) and ``mem_mb``; none for a model
    of unknown architecture (its request is the rule's fixed one, not a projection)."""
    if math.isnan(request.seconds):
        return {}
    return {"runtime": request.seconds / 60, "mem_mb": request.mem_mb / config["costs"]["margin"]}
