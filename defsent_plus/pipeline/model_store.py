"""Configured models: where a spec points, what identifies it, and its pinned copy under ``resources/models``.

A spec is ``package:<python package>`` (a model shipped in a wheel, its ``get_model_path()``), ``hub:<id>[@<revision>]``
(online users) or a local directory. The workflow copies each configured model once to a stable path and every
rule depends on that copy, so Snakemake decides re-runs by the model's *identity* (package + version, hub id +
revision, content checksum of a local directory), never by the file times of an installed directory.

Light on purpose (no torch): the workflow computes identities while parsing.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import json
import logging
import shutil
from pathlib import Path

from defsent_plus.errors import DefSentError
from defsent_plus.io import atomic_path, write_json
from defsent_plus.model_specs import SOURCE_CARD, spec_kind, split_revision

log = logging.getLogger(__name__)
CHECKSUM_CACHE = Path(".snakemake") / "defsent-model-checksums.json"


def resolve_model(spec: str, where: str = "config: models") -> str:
    """A spec -> the local directory (or ``hub:<id>`` for transformers to download)."""
    kind, value = spec_kind(spec, where)
    if kind == "package":
        return str(_package_module(where, value).get_model_path())
    if kind == "hub":
        return f"hub:{split_revision(value)[0]}"
    return value


def _package_module(where: str, name: str):
    try:
        module = importlib.import_module(name)
    except ImportError as err:
        raise DefSentError(where, f"package {name!r} is not installed") from err
    if not hasattr(module, "get_model_path"):
        raise DefSentError(where, f"package {name!r} has no get_model_path()")
    return module


def model_identity(spec: str, cache: Path | None = CHECKSUM_CACHE, where: str = "config: models") -> dict:
    """What the pinned copy of ``spec`` depends on: package + installed version, hub id + revision, or the
    SHA-256 of a local directory's files (names and contents; cached by size and mtime in ``cache``).
    ``where`` names the config key in errors."""
    kind, value = spec_kind(spec, where)
    if kind == "package":
        return {"package": value, "version": package_version(where, value)}
    if kind == "hub":
        name, revision = split_revision(value)
        return {"hub": name, "revision": revision}
    path = Path(value)
    if not path.is_dir():
        raise DefSentError(where, f"model directory {spec!r} not found (expected a local Hugging Face model "
                                  "directory, package:<name> or hub:<id>[@<revision>])")
    return {"sha256": directory_checksum(path, cache)}


def package_version(where: str, module: str) -> str:
    """The installed version of the distribution that provides ``module``."""
    for name in (module.replace("_", "-"), module):
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    for name in importlib.metadata.packages_distributions().get(module, []):  # ~0.2 s: only when needed
        return importlib.metadata.version(name)
    raise DefSentError(where, f"package {module!r} is not installed")


IGNORED = ("__pycache__",)  # besides hidden files: never part of a model's identity nor of its pinned copy


def model_files(path: Path) -> list[Path]:
    """The files that make up a model directory, sorted: hidden files and ``__pycache__`` excluded."""
    def ignored(file: Path) -> bool:
        return any(part.startswith(".") or part in IGNORED for part in file.relative_to(path).parts)

    return sorted(p for p in path.rglob("*") if p.is_file() and not ignored(p))


def directory_checksum(path: Path, cache: Path | None = None) -> str:
    """SHA-256 over the relative names and contents of a model directory's files (:func:`model_files`)."""
    files = model_files(path)
    stamp = [[str(p.relative_to(path)), p.stat().st_size, p.stat().st_mtime_ns] for p in files]
    known = _read_cache(cache)
    key = str(path.resolve())
    if key in known and known[key]["stamp"] == stamp:
        return known[key]["sha256"]
    digest = hashlib.sha256()
    for file in files:
        digest.update(str(file.relative_to(path)).encode() + b"\0")
        with open(file, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    checksum = digest.hexdigest()
    if cache is not None:
        known[key] = {"stamp": stamp, "sha256": checksum}
        _write_cache(cache, known)
    return checksum


def _read_cache(cache: Path | None) -> dict:
    try:
        return json.loads(cache.read_text()) if cache is not None else {}
    except (OSError, json.JSONDecodeError):  # none yet, or unreadable: computed afresh
        return {}


def _write_cache(cache: Path, known: dict) -> None:
    try:
        write_json(cache, known)
    except OSError as err:  # a read-only checkout only loses the cache
        log.warning("cannot write the model checksum cache %s: %s", cache, err)


def pin_model(spec: str, identity: dict, out_dir: str | Path, where: str = "config: models") -> Path:
    """Copy the model of ``spec`` to ``out_dir`` (atomically) with a card naming its spec and identity.

    A hub model is downloaded at its revision and saved; a package or local directory is copied file by file.
    The copy is checked against ``identity`` so a model changed between planning and copying is refused.
    """
    kind, value = spec_kind(spec, where)
    with atomic_path(out_dir) as tmp:
        if kind == "hub":
            _download_hub_model(*split_revision(value), tmp)
        else:
            source = Path(resolve_model(spec, where))
            shutil.copytree(source, tmp, ignore=shutil.ignore_patterns(".*", *IGNORED))
            if kind == "local":
                copied = directory_checksum(tmp)
                if copied != identity.get("sha256"):
                    raise DefSentError(source, "the model directory changed while the workflow ran "
                                               "(its checksum differs from the planned one); run again")
        write_json(Path(tmp) / SOURCE_CARD, {"spec": spec, "identity": identity})
    log.info("pinned %s (%s) at %s", spec, identity, out_dir)
    return Path(out_dir)


def _download_hub_model(name: str, revision: str, out_dir: Path) -> None:
    from huggingface_hub import snapshot_download

    # weights as safetensors only (no pickle), plus config and tokenizer files
    snapshot_download(name, revision=revision, local_dir=out_dir,
                      allow_patterns=["*.json", "*.txt", "*.safetensors", "*.model"])
