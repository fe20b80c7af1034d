"""What a GPU job's start costs before its first unit of work: interpreter, imports, CUDA initialisation, model load.

    python bench/gpu_job_start.py --model DIR [--repeats 3]     # each stage's seconds in a fresh interpreter

Each repeat starts a new Python process (as every Snakemake script job does) that times, in order: its own start
up to the first line, importing torch, importing transformers and the package's training and encoding modules,
initialising CUDA (the first tensor on the device; skipped without one), and loading the encoder at ``--model`` onto
the device. The medians are the job start the cost model charges each GPU job (config ``costs.gpu``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

CHILD = r"""
import json, sys, time
t = {"entered": time.time()}
import torch
t["torch"] = time.time()
import transformers
from defsent_plus.encoders.models import load_encoder
from defsent_plus.training import trainer
t["package"] = time.time()
if torch.cuda.is_available():
    torch.zeros(1, device="cuda"); torch.cuda.synchronize()
t["cuda"] = time.time()
encoder = load_encoder(sys.argv[1]).to("cuda" if torch.cuda.is_available() else "cpu")
if torch.cuda.is_available():
    torch.cuda.synchronize()
t["model"] = time.time()
print(json.dumps(t))
"""
STAGES = ("interpreter", "torch", "package", "cuda", "model")


def one_start(model: str) -> dict[str, float]:
    launched = time.time()
    out = subprocess.run([sys.executable, "-c", CHILD, model], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1]).stdout
    t = json.loads(out.strip().splitlines()[-1])
    marks = [launched, t["entered"], t["torch"], t["package"], t["cuda"], t["model"]]
    return {stage: round(b - a, 2) for stage, a, b in zip(STAGES, marks[:-1], marks[1:], strict=True)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    runs = [one_start(args.model) for _ in range(args.repeats)]
    medians = {stage: statistics.median(run[stage] for run in runs) for stage in STAGES}
    medians["total"] = round(sum(medians.values()), 2)
    print(json.dumps({"runs": runs, "median": medians}))
    if args.json:
        args.json.write_text(json.dumps({"runs": runs, "median": medians}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
