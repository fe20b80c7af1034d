"""How far two identical training runs drift apart on this device: the bound a resumed run can be held to.

    python bench/gpu_repeatability.py --shape bert-base --json repeat.json   # CUDA, dataset a
    .venv/bin/python bench/gpu_repeatability.py --smoke                      # CPU, toy sizes (must be exact)

The same DefSent+ training (random weights of a shipped architecture, seed 0, bf16 autocast and TF32 on CUDA as the
workflow's train jobs) runs twice from the same weights and seed over the same examples, against a fixed random
entry space of the dataset's size. Each row: the largest absolute weight difference between the two runs after
``--steps`` steps, the largest difference of their per-step losses, and whether they are bit-identical. A resumed
job restores weights, optimiser, schedule, RNGs and data position exactly (defsent_plus/training/resume.py), so on
a device where this prints bit-identical a resumed run is bit-identical too, and elsewhere it differs from an
uninterrupted run by about what two uninterrupted runs differ by. With --deterministic, torch's deterministic
algorithms are forced (CUBLAS_WORKSPACE_CONFIG set), as a second row.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpu_throughput import device_and_shape, model_arguments, shaped_encoder, toy_frame  # noqa: E402

from defsent_plus.dictionary.table import read_dataset, training_pairs  # noqa: E402
from defsent_plus.encoders.models import load_encoder  # noqa: E402
from defsent_plus.methods.defsent_plus.objective import EntryProjection  # noqa: E402
from defsent_plus.pipeline.model_store import resolve_model  # noqa: E402
from defsent_plus.training.trainer import TrainConfig, train_epoch  # noqa: E402


def one_run(model_dir: Path, texts: list[str], targets: np.ndarray, space: torch.Tensor, device: torch.device
            ) -> tuple[dict[str, torch.Tensor], list[float]]:
    """Weights and per-step losses of one training run from the saved weights."""
    encoder = load_encoder(model_dir).to(device)
    objective = EntryProjection(space, encoder.pooler, "cls")
    cfg = TrainConfig(lr=5e-5, batch_size=32, seed=0, max_length=128, bucket_by_length=True, log_every=1)
    summary = train_epoch(encoder, texts, targets, objective, cfg, progress=False)
    losses = summary["loss_curve"] + [summary["loss_first"], summary["loss_last"], summary["loss_mean"]]
    return {k: v.detach().float().cpu() for k, v in encoder.model.state_dict().items()}, losses


def compare(model_dir: Path, texts, targets, space, device, label: str) -> dict:
    first, first_losses = one_run(model_dir, texts, targets, space, device)
    second, second_losses = one_run(model_dir, texts, targets, space, device)
    weight_diff = max((first[k] - second[k]).abs().max().item() for k in first)
    loss_diff = float(np.max(np.abs(np.subtract(first_losses, second_losses))))
    identical = all(torch.equal(first[k], second[k]) for k in first)
    return {"mode": label, "max_weight_diff": weight_diff, "max_loss_diff": loss_diff, "bit_identical": identical}


def main(argv: list[str] | None = None) -> int:
    parser = model_arguments(__doc__)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--deterministic", action="store_true", help="also a run with deterministic algorithms")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    device, shape = device_and_shape(args)
    if args.smoke:
        args.steps = 4
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True  # as the train jobs
    frame = toy_frame(200) if args.smoke else read_dataset(args.dataset)
    texts, targets = training_pairs(frame)
    chosen = np.random.default_rng(0).permutation(len(texts))[: args.steps * 32]
    texts, targets = [texts[i] for i in chosen], targets[chosen]
    space = torch.nn.functional.normalize(torch.randn(len(frame), shape.config["hidden_size"],
                                                       generator=torch.Generator().manual_seed(0)), dim=1)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        shaped_encoder(shape, resolve_model(args.tokenizer), Path(tmp))
        model_dir = Path(tmp) / shape.name
        rows.append(compare(model_dir, texts, targets, space, device, "default"))
        if args.deterministic:
            os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
            torch.use_deterministic_algorithms(True)
            rows.append(compare(model_dir, texts, targets, space, device, "deterministic"))
            torch.use_deterministic_algorithms(False)
    environment = {"torch": torch.__version__, "device": device.type, "shape": shape.name, "steps": args.steps,
                   "gpu": torch.cuda.get_device_name() if device.type == "cuda" else None}
    for row in rows:
        print(json.dumps(row))
    if args.json:
        args.json.write_text(json.dumps({"environment": environment, "rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
