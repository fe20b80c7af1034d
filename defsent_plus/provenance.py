"""What can change a number besides the data and the model: library versions, the project's commit, the device and
its precision, the thread count. Every stored embedding and score records it, so a gap between two runs (a
transformers upgrade, bf16 on a GPU against fp32 on a CPU) can be diagnosed from the files."""

from __future__ import annotations

import platform
import subprocess
from importlib import metadata
from pathlib import Path

LIBRARIES = ("torch", "transformers", "scikit-learn", "numpy", "scipy", "sentence-transformers")


def library_versions() -> dict[str, str]:
    """Installed versions of the libraries a score depends on (without importing them)."""
    versions = {}
    for name in LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def project_commit(root: str | Path | None = None) -> str:
    """The git commit of the project's checkout (``+dirty`` with uncommitted changes), else its package version."""
    root = Path(root) if root is not None else Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                                check=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        from defsent_plus import __version__

        return f"defsent-plus {__version__} (no git checkout)"
    return commit + ("+dirty" if dirty else "")


def compute_record(device: str, threads: int) -> dict:
    """The device (with the GPU's model), the precision the encoders run in there, and the CPU threads."""
    record = {"device": device, "precision": "bf16 autocast" if device.startswith("cuda") else "fp32",
              "threads": threads}
    if device.startswith("cuda"):
        import torch

        record["gpu"] = torch.cuda.get_device_name(torch.device(device))
    return record


def provenance(device: str, threads: int, seeds: dict | None = None) -> dict:
    """Everything above, plus the seeds that drew this number (``seeds``: name -> value)."""
    return {"project": project_commit(), "python": platform.python_version(), **library_versions(),
            **compute_record(device, threads), **({"seeds": seeds} if seeds else {})}


def with_training(record: dict, training: dict) -> dict:
    """A score's ``record`` with its model's training provenance (``trained_with``: the training card's
    ``provenance``; a model this workflow did not train has none)."""
    return {**record, "trained_with": training} if training else record


FOOTER_KEYS = ("project", "torch", "transformers", "scikit-learn", "device", "gpu", "precision", "threads", "seeds")


def footer_parts(records: list[dict]) -> list[str]:
    """``key value`` for every footer key the records hold; a key whose value differs between records lists every
    value."""
    parts = []
    for key in FOOTER_KEYS:
        values = list(dict.fromkeys(str(r[key]) for r in records if key in r))
        if values:
            parts.append(f"{key} {' / '.join(values)}")
    return parts


def provenance_footer(records: list[dict]) -> str:
    """A markdown footer naming what the table's numbers were computed with, and (where recorded) what its trained
    models were trained with; a key whose value differs between rows lists every value (so a mixed table says so)."""
    records = [r for r in records if r]
    if not records:
        return ""
    text = "\n---\nComputed with: " + "; ".join(footer_parts(records)) + ".\n"
    trained = [r["trained_with"] for r in records if r.get("trained_with")]
    if trained:
        text += "\nTrained with: " + "; ".join(footer_parts(trained)) + ".\n"
    return text
