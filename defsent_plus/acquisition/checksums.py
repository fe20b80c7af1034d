"""SHA-256 manifests in ``sha256sum`` format (``<hex>  <relative path>`` a line), written and checked."""

from __future__ import annotations

from pathlib import Path

from defsent_plus.errors import DefSentError
from defsent_plus.io import file_sha256


def read_manifest(path: str | Path) -> dict[str, str]:
    """Relative path -> SHA-256 from a ``sha256sum`` manifest; malformed lines are errors naming the line."""
    manifest: dict[str, str] = {}
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        digest, _, name = line.partition("  ")
        if len(digest) != 64 or not name or Path(name).is_absolute() or ".." in Path(name).parts:
            raise DefSentError(path, "expected '<64 hex digits>  <relative path>'", line=number)
        manifest[name] = digest.lower()
    if not manifest:
        raise DefSentError(path, "checksum manifest lists no files")
    return manifest


def manifest_of(root: str | Path) -> dict[str, str]:
    """The manifest of every file under ``root`` (sorted, POSIX relative paths)."""
    root = Path(root)
    files = sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith("."))
    return {p.relative_to(root).as_posix(): file_sha256(p) for p in files}


def write_manifest(manifest: dict[str, str], path: str | Path) -> None:
    Path(path).write_text("".join(f"{digest}  {name}\n" for name, digest in sorted(manifest.items())),
                          encoding="utf-8")
