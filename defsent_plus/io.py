"""Small file helpers: atomic writes (a killed job never leaves complete-looking output) and JSON."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from defsent_plus import banner
from defsent_plus.errors import DefSentError


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary sibling of ``path`` (a file or directory), renamed onto ``path`` only if the block
    succeeds and removed on failure."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)) / path.name
    try:
        yield tmp
        if path.is_dir():
            shutil.rmtree(path)
        os.replace(tmp, path)
    finally:
        shutil.rmtree(tmp.parent, ignore_errors=True)


def file_sha256(path: str | Path) -> str:
    """SHA-256 hex digest of a file, read in 1 MiB blocks (``hashlib.file_digest`` needs Python 3.11)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_json(path: str | Path, data: dict) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n", encoding="utf-8")


def read_json(path: str | Path) -> dict:
    """Read a JSON file, naming the file when it is missing or not valid JSON."""
    path = Path(path)
    if not path.is_file():
        raise DefSentError(path, "file not found")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise DefSentError(path, f"invalid JSON: {err.msg}", line=err.lineno) from err


def write_npy(path: str | Path, array: np.ndarray) -> None:
    with atomic_path(path) as tmp, open(tmp, "wb") as handle:
        np.save(handle, array)


def read_npy(path: str | Path) -> np.ndarray:
    """Load an .npy array without ever unpickling."""
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError) as err:
        raise DefSentError(path, f"cannot read as a .npy array: {err}") from err


def sentences_digest(sentences: Sequence[str]) -> str:
    """A short fingerprint of a sentence list (stored embeddings record it; their readers check it)."""
    digest = hashlib.sha256()
    for sentence in sentences:
        digest.update(sentence.encode("utf-8") + b"\n")
    return digest.hexdigest()[:16]


def read_parquet_file(path: str | Path):
    """A parquet table as a pandas DataFrame, naming the file when it is missing or unreadable."""
    import pandas as pd

    path = Path(path)
    if not path.is_file():
        raise DefSentError(path, "file not found")
    try:
        return pd.read_parquet(path)
    except (OSError, ValueError) as err:
        raise DefSentError(path, f"cannot read as parquet: {err}") from err


def write_page(path: str | Path, text: str) -> None:
    """A markdown or reStructuredText page (a rehearsal's banner first)."""
    with atomic_path(path) as tmp:
        tmp.write_text(banner.on_text(text), encoding="utf-8")


def write_tsv(path: str | Path, table, **options) -> None:
    """A pandas table as TSV without its index (a rehearsal's banner as a ``#`` comment line first); ``options``:
    more of ``DataFrame.to_csv``'s."""
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8", newline="") as handle:
        handle.write(banner.comment_line())
        table.to_csv(handle, sep="\t", index=False, **options)


def read_tsv_table(path: str | Path):
    """A TSV table :func:`write_tsv` wrote (a banner line skipped)."""
    import pandas as pd

    return pd.read_csv(path, sep="\t", comment="#")


def save_figure(path: str | Path, figure, dpi: int) -> None:
    """A matplotlib figure as PNG (a rehearsal's banner drawn on it and in its Description text chunk)."""
    banner.on_figure(figure)
    metadata = {"Description": banner.active()} if banner.active() else None
    with atomic_path(path) as tmp:
        figure.savefig(tmp, format="png", dpi=dpi, metadata=metadata)
