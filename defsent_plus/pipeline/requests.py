"""What a training job asks its scheduler for (runtime, mem_mb), from the config's work and the cost model.

A fixed request (the train rule asked 240 minutes and 8,000 MB for any model) either kills a long job at its limit or
queues a short one for resources it never uses. A train job's work is known from the config: examples per epoch
(000 Table 1's dataset sizes, a subset's share of them, a corpus' sentences) × epochs, each a forward and backward pass
of the run's architecture at the median definition length. Its runtime is that work's FLOPs at ``costs.gpu``'s rate
(or, without a GPU, ``costs.cpu``'s measured rate per thread), or the GPU's per-step floor, plus a start; its memory
is fp32 weights, gradients and Adam's moments, activations and a base. Both get ``costs.margin``. Light on purpose
(no torch, no pandas): the DAG evaluates it for every train job. docs/rehearsal.md compares it with measured jobs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from defsent_plus.errors import DefSentError
from defsent_plus.pipeline.model_architectures import Architecture, model_architecture

REAL_DATASETS = {"a": (331_472, 150_518), "b": (122_209, 36_767), "c": (67_553, 9_647)}  # 000 Table 1: defs, entries
MEDIAN_DEFINITION_TOKENS = 12 + 2  # 000 Table 1's median length, with [CLS] and [SEP]
WIKI1M_SENTENCES = 1_000_000  # SimCSE's corpus
STSSICK_SENTENCES = 79_192  # ConSERT's stssick corpus: the STS and SICK sentences (tests check it on SentEval's data)
START_SECONDS = 60.0  # a job's fixed part on a cluster node: Python, imports, loading the model and the data
BASE_MEMORY_BYTES = 1.5e9  # Python, torch and the data beside the model (rehearsals: 0.7-1.4 GB)
UNKNOWN_MODEL_REQUEST = {"runtime": 240, "mem_mb": 8000}  # the rule's fixed request, for a model of unknown size
VOCABULARY_TARGET = "vocab"  # methods predicting headwords through the masked-LM head (DefSent)


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

    def seconds(self, flops: float, steps: float, layers: int) -> float:
        """GPU seconds of ``flops`` in ``steps`` optimiser steps of a ``layers``-layer encoder: the FLOPs at the
        encoding rate, or the steps' latency floor where small batches leave the GPU waiting (every shipped
        config's training: a step of 32 definitions is far from the FLOPs bound)."""
        floor = steps * (self.step_ms_fixed + layers * self.step_ms_per_layer) / 1000
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
    kept = min(subset["max_entries"], entries)
    return round(definitions * kept / entries), kept


def training_examples(config: dict, run: str, options: dict, built: dict | None = None) -> tuple[float, int]:
    """(examples per epoch, epochs) of a run's training, ``options`` its method's resolved options (``built``: as
    :func:`dataset_size`)."""
    epochs = options.get("epochs", 1)
    if options.get("corpus") == "stssick":
        return STSSICK_SENTENCES, epochs
    if options.get("corpus_file"):
        return options.get("max_sentences") or WIKI1M_SENTENCES, epochs
    name = config["runs"][run]["dataset"]
    definitions, _ = dataset_size(config, name, built)
    heldout = config.get("subsets", {}).get(name, {}).get("heldout")
    share = 1.0 if not heldout else 1.0 - heldout["dev"] - heldout["test"]
    return definitions * share, epochs


def output_classes(config: dict, run: str, method, architecture: Architecture) -> int:
    """Classes of a run's objective: its dataset's entries (an entry space), the vocabulary (headword
    prediction), else 0 (contrastive methods: their logits are the batch)."""
    if method.uses_entry_space:
        return dataset_size(config, config["runs"][run]["dataset"])[1]
    if method.target == VOCABULARY_TARGET:
        return architecture.config["vocab_size"]
    return 0


def train_flops(architecture: Architecture, examples: float, classes: int, tokens: float = MEDIAN_DEFINITION_TOKENS
                ) -> float:
    """Forward and backward FLOPs of ``examples`` training examples: 3 × (2 × layer parameters × tokens + the
    objective's output layer)."""
    hidden = architecture.config["hidden_size"]
    return examples * 3.0 * (2.0 * layer_parameters(architecture.config) * tokens + 2.0 * hidden * classes)


def training_memory_bytes(architecture: Architecture, batch: int, length: int, classes: int,
                          parameters: int | None = None) -> float:
    """Peak memory of training: fp32 weights, gradients and Adam's two moments (16 bytes a parameter), bf16
    activations of every layer (Korthikanti et al. 2022: s·b·h·(34 + 5·a·s/h) bytes a layer) and the objective's
    logits (fp32, with their gradient and softmax). ``parameters``: the whole model's (default: encoder and
    embeddings)."""
    c = architecture.config
    parameters = parameters or layer_parameters(c) + embedding_parameters(c)
    h, a, layers = c["hidden_size"], c["num_attention_heads"], c["num_hidden_layers"]
    activations = layers * length * batch * h * (34 + 5 * a * length / h)
    return 16.0 * parameters + activations + 3 * 4.0 * batch * classes


def model_of_run(config: dict, run: str) -> str:
    """The config model a run's weights come from (through ``start_from`` runs)."""
    block = config["runs"][run]
    return block["model"] if "model" in block else model_of_run(config, block["start_from"])


@dataclass(frozen=True)
class TrainingRequest:
    """A train job's projected work and what it asks for."""

    examples: float
    steps: float
    flops: float
    seconds: float  # projected, without the margin
    runtime: int  # minutes asked, with the margin
    mem_mb: int


def training_request(config: dict, plan, run: str, on_gpu: bool) -> TrainingRequest:
    """What one candidate of ``run`` asks for on a GPU node (``on_gpu``) or on ``resources.threads`` CPU threads."""
    costs, block = config["costs"], config["runs"][run]
    method = plan.method(run)
    options = method.resolved_options(plan.method_options(run))
    try:
        architecture = model_architecture(config["models"][model_of_run(config, run)])
    except (DefSentError, OSError):  # a hub model without a shipped architecture, a local model not there yet
        nan = float("nan")
        return TrainingRequest(nan, nan, nan, nan, runtime=UNKNOWN_MODEL_REQUEST["runtime"],
                               mem_mb=UNKNOWN_MODEL_REQUEST["mem_mb"])
    per_epoch, epochs = training_examples(config, run, options)
    examples = per_epoch * epochs
    classes = output_classes(config, run, method, architecture)
    steps = examples / block["batch_size"]
    flops = train_flops(architecture, examples, classes)
    if on_gpu:
        seconds = Gpu(**costs["gpu"]).seconds(flops, steps, architecture.config["num_hidden_layers"])
    else:
        threads = config["resources"]["threads"] if isinstance(config["resources"]["threads"], int) else 1
        seconds = flops / (costs["cpu"]["gflops_per_thread"] * 1e9 * threads)
    seconds += START_SECONDS
    views = 2 if options.get("corpus") is not None else 1  # contrastive methods encode two views of a sentence
    if on_gpu:  # the GPU holds the training state; the node's memory loads the checkpoint and the data
        memory = 8.0 * (layer_parameters(architecture.config) + embedding_parameters(architecture.config))
    else:
        memory = training_memory_bytes(architecture, block["batch_size"] * views, options.get("max_length", 128),
                                       classes)
    margin = costs["margin"]
    return TrainingRequest(examples, steps, flops, seconds,
                           runtime=max(costs["min_runtime_minutes"], math.ceil(margin * seconds / 60)),
                           mem_mb=math.ceil(margin * (memory + BASE_MEMORY_BYTES) / 1e6))


def requests_below_projection(config: dict, plan, on_gpu: bool, asked: dict) -> list[str]:
    """The runs whose train jobs would outlast or outgrow what the user set for rule train (``asked``: its
    ``--set-resources`` values), each with the projection, so they are flagged before anything is submitted."""
    problems = []
    for run in config["runs"]:
        request = training_request(config, plan, run, on_gpu)
        projections = {"runtime": request.seconds / 60, "mem_mb": request.mem_mb / config["costs"]["margin"]}
        for key, projected in projections.items():
            if isinstance(asked.get(key), int | float) and asked[key] < projected:
                problems.append(f"run {run}: train {key}={asked[key]} is below its projection {projected:.0f} "
                                f"({request.examples:.3g} examples, {request.flops:.3g} FLOPs; "
                                "defsent_plus/pipeline/requests.py)")
    return problems
