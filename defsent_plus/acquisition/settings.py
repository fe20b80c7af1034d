"""A dataset's acquisition settings resolved from config (``data.<name>``), and the identity that decides re-runs.

Where the files come from (a mirror path, a host) is not part of the identity: with a checksum manifest the
content is pinned, so moving the mirror or switching to a download re-runs nothing. Without a manifest the
archives listed are the identity.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from defsent_plus.acquisition.catalog import Archive, DataSpec, archives_from_config, spec_of
from defsent_plus.acquisition.download import Retry
from defsent_plus.errors import DefSentError
from defsent_plus.io import file_sha256


def mirror_variable(name: str) -> str:
    """The environment variable naming a local mirror of dataset ``name`` (it wins over config)."""
    return f"DEFSENT_{name.upper()}"


@dataclass(frozen=True)
class Acquisition:
    spec: DataSpec
    mirror: str | None
    link: str
    manifest: Path | None
    archives: tuple[Archive, ...]
    retry: Retry


def resolve(name: str, data_config: dict, repo: str | Path) -> Acquisition:
    """The settings of ``data.<name>``; ``checksums: default`` is the repository's manifest for it, if any."""
    spec = spec_of(name)
    block = data_config[name]
    where = f"config: data.{name}"
    manifest = block["checksums"]
    if manifest == "default":
        manifest = None if spec.manifest is None else Path(repo) / spec.manifest
    if manifest is not None and not Path(manifest).is_file():
        raise DefSentError(f"{where}.checksums", f"checksum manifest {manifest} not found")
    archives = archives_from_config(block["archives"], f"{where}.archives") if block["archives"] else spec.archives
    return Acquisition(spec, os.environ.get(mirror_variable(name)) or block["mirror"], block["link"],
                       None if manifest is None else Path(manifest), archives, Retry(**data_config["download"]))


def identity(settings: Acquisition) -> dict:
    """What the acquired content is: its manifest's SHA-256, or (unverified) the archives it comes from."""
    if settings.manifest is not None:
        return {"manifest_sha256": file_sha256(settings.manifest)}
    return {"archives": [[a.url, a.sha256] for a in settings.archives]}
