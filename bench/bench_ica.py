"""Time the paper's ICA recipe (plain scikit-learn FastICA) against the fast path, same matrix and precision.

    .venv/bin/python bench/bench_ica.py                      # synthetic 20,000 x 384, max_iter 1000
    .venv/bin/python bench/bench_ica.py --npy entries.npy    # a real entry space
    .venv/bin/python bench/bench_ica.py --precision float64 --candidates torch:float64,sklearn:float64:2

Every run goes through ``defsent_plus.spaces.transforms.apply_transform(E, "ica", ...)``: StandardScaler, FastICA
(logcosh, unit-variance, tol 1e-4, random_state 42), x 100. The reference is sklearn on one BLAS thread in
``--precision`` (default float32, as the reference script and the workflow compute it); "default config" is what
the workflow runs in that precision (backend "auto": torch on a GPU when CUDA is present, else sklearn on
entry_space.ica.threads, default 1). Prints wall and
CPU seconds, the speedup, iterations, the max |difference| of outputs and the mean excess kurtosis of the
components (ICA quality). The load average is printed too: timings on shared cores vary a lot.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from defsent_plus.io import read_npy  # noqa: E402
from defsent_plus.spaces.transforms import (  # noqa: E402
    apply_transform,
    available_threads,
    cuda_available,
    resolve_backend,
)


def synthetic_entry_space(rows: int, cols: int, seed: int = 0) -> np.ndarray:
    """A realistic anisotropic space: common offset (narrow cone), decaying spectrum, heavy-tailed and
    Gaussian latent factors mixed by a random rotation, isotropic noise; rows L2-normalized like sentence
    embeddings."""
    rng = np.random.default_rng(seed)
    n_heavy = cols // 2
    latent = np.hstack(
        [
            rng.standard_t(df=4, size=(rows, n_heavy)),  # heavy-tailed: what ICA can separate
            rng.laplace(size=(rows, cols // 4)) / np.sqrt(2),
            rng.normal(size=(rows, cols - n_heavy - cols // 4)),  # Gaussian: unidentifiable, slows ICA
        ]
    )
    spectrum = 1.0 / np.sqrt(np.arange(1, cols + 1))
    rotation, _ = np.linalg.qr(rng.normal(size=(cols, cols)))
    offset = rng.normal(size=cols)
    offset *= 2.0 / np.linalg.norm(offset)
    space = (latent * spectrum) @ rotation * 0.1 + offset / np.sqrt(cols) * 3 + 0.01 * rng.normal(size=(rows, cols))
    space /= np.linalg.norm(space, axis=1, keepdims=True)
    return space.astype(np.float32)


def timed_ica(E: np.ndarray, **params) -> tuple[np.ndarray, dict]:
    cpu, wall = time.process_time(), time.perf_counter()
    out, info = apply_transform(E, "ica", **params)
    info["wall_seconds"] = round(time.perf_counter() - wall, 2)
    info["cpu_seconds"] = round(time.process_time() - cpu, 2)
    info["mean_excess_kurtosis"] = round(float(np.mean(stats.kurtosis(out.astype(np.float64), axis=0))), 4)
    return out, info


def describe(label: str, info: dict) -> str:
    return (
        f"{label:<30} wall {info['wall_seconds']:8.1f} s  cpu {info['cpu_seconds']:8.1f} s  "
        f"n_iter {info['n_iter']:>4}/{info['max_iter']}  converged {str(info['converged']):<5}  "
        f"threads {info['threads']}  device {info['device']}  kurtosis {info['mean_excess_kurtosis']}"
    )


def compare(reference: np.ndarray, ref_info: dict, out: np.ndarray, info: dict) -> dict:
    difference = np.abs(out.astype(np.float64) - reference.astype(np.float64))
    return {
        "speedup_wall": round(ref_info["wall_seconds"] / info["wall_seconds"], 2),
        "max_abs_diff": float(difference.max()),
        "mean_abs_diff": float(difference.mean()),
    }


def parse_candidate(text: str) -> dict:
    """``backend:precision[:threads]`` -> apply_transform parameters."""
    backend, precision, *threads = text.split(":")
    return {"backend": backend, "precision": precision, "threads": int(threads[0]) if threads else None}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=20_000, help="entries of the synthetic space")
    parser.add_argument("--cols", type=int, default=384, help="hidden size of the synthetic space")
    parser.add_argument("--max-iter", type=int, default=1000)
    parser.add_argument("--npy", type=Path, help="load this entry space instead of a synthetic one")
    parser.add_argument("--seed", type=int, default=0, help="seed of the synthetic space")
    parser.add_argument("--threads", type=int, default=None,
                        help="BLAS threads of the default-config run (default: the workflow's, 1 for sklearn)")
    parser.add_argument("--reference-threads", type=int, default=1, help="BLAS threads of the reference")
    parser.add_argument("--precision", choices=["float32", "float64"], default="float32",
                        help="precision of the reference and of the default-config run")
    parser.add_argument("--candidates", default="", help="extra runs, comma-separated backend:precision[:threads]")
    parser.add_argument("--no-default", action="store_true", help="run only the reference and --candidates")
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    args = parser.parse_args(argv)

    E = read_npy(args.npy) if args.npy else synthetic_entry_space(args.rows, args.cols, args.seed)
    default_backend = resolve_backend("auto", "unit-variance", "logcosh", "parallel")
    print(f"entry space {E.shape[0]} x {E.shape[1]} ({'file ' + str(args.npy) if args.npy else 'synthetic'})")
    print(f"cuda available: {cuda_available()}; default backend: {default_backend}; cores: {available_threads()}")
    print(f"load average before: {os.getloadavg()}", flush=True)

    reference, ref_info = timed_ica(
        E, backend="sklearn", precision=args.precision, max_iter=args.max_iter, threads=args.reference_threads
    )
    print(describe(f"reference sklearn {args.precision}", ref_info), flush=True)
    default_run = {"backend": "auto", "precision": args.precision, "threads": args.threads}
    runs = [] if args.no_default else [("fast path (default config)", default_run)]
    runs += [(f"candidate {text}", parse_candidate(text)) for text in filter(None, args.candidates.split(","))]
    result = {"shape": list(E.shape), "reference": ref_info, "runs": []}
    for label, params in runs:
        out, info = timed_ica(E, max_iter=args.max_iter, **params)
        numbers = compare(reference, ref_info, out, info)
        print(describe(label, info), flush=True)
        print(
            f"{'':<30} speedup x{numbers['speedup_wall']}  max |diff| {numbers['max_abs_diff']:.3g}  "
            f"mean |diff| {numbers['mean_abs_diff']:.3g}  (max |reference| {np.abs(reference).max():.3g})",
            flush=True,
        )
        result["runs"].append({"label": label, **numbers, "info": info})
    result["load_average_after"] = os.getloadavg()
    print(f"load average after: {result['load_average_after']}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
