"""A dataset's directory, built all or nothing from a local mirror or the catalog's archives, then verified.

The directory is assembled in a temporary sibling and renamed into place only when every layout file is there and
matches its checksum, so a failed or interrupted acquisition never leaves a complete-looking directory. Checksums
are SHA-256 manifests in ``sha256sum`` format (``<hex>  <relative path>`` a line), read, written and checked here.
"""

from __future__ import annotations

import logging
import os
import shutil
import tarfile
import zipfile
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from defsent_plus.acquisition.catalog import Archive, DataSpec
from defsent_plus.acquisition.download import DEFAULT_RETRY, Retry, fetch
from defsent_plus.errors import DefSentError
from defsent_plus.io import atomic_path, file_sha256, write_json

log = logging.getLogger(__name__)
LINKS = ("copy", "symlink")
RECORD = "ACQUIRED.json"  # what was acquired from where, written last
SUMS = "SHA256SUMS"  # the acquired files' checksums (pin them by pointing data.<name>.checksums here)


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


@dataclass
class Layout:
    """The files a dataset needs and, where known, their SHA-256."""

    files: tuple[str, ...]
    checksums: dict[str, str] = field(default_factory=dict)

    def accepts(self, name: str, path: Path) -> str | None:
        """Why ``path`` cannot be the layout file ``name`` (None: it can)."""
        expected = self.checksums.get(name)
        if expected is not None and (actual := file_sha256(path)) != expected:
            return f"{path}: SHA-256 {actual}, expected {expected} for {name}"
        return None


def acquire(spec: DataSpec, out_dir: str | Path, mirror: str | Path | None, link: str,
            manifest: str | Path | None, downloads: str | Path, retry: Retry = DEFAULT_RETRY,
            archives: tuple[Archive, ...] | None = None) -> dict:
    """Fill ``out_dir`` with ``spec``'s layout from ``mirror`` (copied or linked) or else by downloading
    ``archives`` (default: the catalog's) into ``downloads``; verify it and write its record."""
    checksums = {} if manifest is None else read_manifest(manifest)
    layout = Layout(tuple(checksums), checksums) if checksums else Layout(spec.files)
    if not layout.files and mirror is not None and Path(mirror).is_dir():
        layout = Layout(mirror_files(Path(mirror)))  # no manifest: the mirror's whole layout, recorded below
    if not layout.files:
        raise DefSentError(f"config: data.{spec.name}", "no files to acquire: without a checksum manifest "
                                                       "(checksums: null) this dataset's layout is unknown; set "
                                                       "checksums: default or a manifest, or a mirror holding files")
    with atomic_path(out_dir) as tmp:
        tmp.mkdir()
        if mirror is not None:
            source = from_mirror(layout, Path(mirror), tmp, link)
        else:
            source = from_archives(layout, archives or spec.archives, Path(downloads) / spec.name, tmp, retry)
        # every file was checked as it was taken: a verified layout's checksums are its manifest's
        write_manifest(layout.checksums or manifest_of(tmp), tmp / SUMS)
        record = {"dataset": spec.name, **source, "files": len(layout.files), "verified": bool(layout.checksums),
                  "manifest": None if manifest is None else str(manifest)}
        write_json(tmp / RECORD, record)
    if not layout.checksums:
        log.warning("%s: no checksum manifest configured; recorded the acquired files' SHA-256 in %s (point "
                    "data.%s.checksums at a copy of it to pin them)", spec.name, Path(out_dir) / SUMS, spec.name)
    log.info("%s: %d files from %s", spec.name, len(layout.files), record["source"])
    return record


def from_mirror(layout: Layout, mirror: Path, out: Path, link: str) -> dict:
    """Copy (or symlink) every layout file from a local copy of the layout, checking each one."""
    if link not in LINKS:
        raise DefSentError("config: data.*.link", f"{link!r}; expected one of {list(LINKS)}")
    if not mirror.is_dir():
        raise DefSentError(mirror, "data mirror not found (a local copy of the dataset's layout was expected)")
    missing = [name for name in layout.files if not (mirror / name).is_file()]
    if missing:
        raise DefSentError(mirror, f"mirror lacks {len(missing)} of {len(layout.files)} layout files, e.g. "
                                   f"{missing[:5]}")
    wrong = [why for name in layout.files if (why := layout.accepts(name, mirror / name))]
    if wrong:
        raise DefSentError(mirror, f"{len(wrong)} mirror files differ from the checksums kept in the repository "
                                   f"(another version or processing of the data?): {'; '.join(wrong[:3])}")
    for name in layout.files:
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        if link == "symlink":
            os.symlink((mirror / name).resolve(), out / name)
        else:
            shutil.copyfile(mirror / name, out / name)
    return {"source": f"mirror {mirror.resolve()}", "link": link}


def mirror_files(mirror: Path) -> tuple[str, ...]:
    """Every file under a mirror (POSIX relative paths, sorted), an earlier acquisition's record and sums aside."""
    return tuple(sorted(path.relative_to(mirror).as_posix() for path in mirror.rglob("*")
                        if path.is_file() and path.relative_to(mirror).as_posix() not in (RECORD, SUMS)))


def from_archives(layout: Layout, archives: tuple[Archive, ...], downloads: Path, out: Path, retry: Retry) -> dict:
    """Download archives in order until every layout file is there; each file is checked as it is taken."""
    needed = set(layout.files)
    used, failures = [], []
    for archive in archives:
        if not needed or (archive.kind == "file" and archive.root not in needed):  # a plain file not needed
            continue
        try:
            path = fetch(archive.url, downloads / archive.filename, archive.sha256, retry)
            taken, rejected = take_from(archive, path, layout, needed, out)
        except DefSentError as err:
            failures.append(str(err))
            log.warning("%s", err)
            continue
        failures += rejected
        needed -= taken
        if taken:
            used.append(archive.url)
    if needed:
        raise DefSentError(out.parent.name + "/" + out.name.lstrip("."),
                           f"{len(needed)} of {len(layout.files)} layout files could not be obtained (e.g. "
                           f"{sorted(needed)[:5]}). Tried: {'; '.join(failures) or 'no archive provides them'}. "
                           f"Place the archives by hand in {downloads}/ (names as in the URLs), list other copies "
                           "under data.<name>.archives, or point data.<name>.mirror (or its environment variable) "
                           "at a local copy of the layout")
    return {"source": "download", "archives": used}


def take_from(archive: Archive, path: Path, layout: Layout, needed: set[str], out: Path) -> tuple[set[str], list[str]]:
    """Copy the needed layout files the archive holds into ``out``; files failing their checksum are refused."""
    taken, rejected = set(), []
    for name, handle in layout_members(archive, path, needed):
        dest = out / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        with handle, open(dest, "wb") as target:
            shutil.copyfileobj(handle, target)
        if why := layout.accepts(name, dest):
            dest.unlink()
            rejected.append(f"{archive.url}: {why}")
        else:
            taken.add(name)
    return taken, rejected


def layout_members(archive: Archive, path: Path, needed: set[str]) -> Iterator[tuple[str, BinaryIO]]:
    """(layout name, open member) for each needed file in the archive, under its root (auto-detected if empty)."""
    if archive.kind == "file":
        yield archive.root, open(path, "rb")
        return
    with _open_archive(archive, path) as (names, opener):
        root = archive.root.strip("/") or detect_root(names, needed)
        for member in names:
            relative = _relative_to(member, root)
            if relative in needed:
                yield relative, opener(member)


def detect_root(members: list[str], needed: set[str]) -> str:
    """The archive folder under which most layout files sit (e.g. ``SentEval/data/downstream``)."""
    roots = Counter()
    for member in members:
        for name in needed:
            if member == name or member.endswith("/" + name):
                roots[member[: len(member) - len(name)].rstrip("/")] += 1
    return roots.most_common(1)[0][0] if roots else ""


def _relative_to(member: str, root: str) -> str | None:
    member = str(PurePosixPath(member))
    if not root:
        return member
    return member[len(root) + 1:] if member.startswith(root + "/") else None


@contextmanager
def _open_archive(archive: Archive, path: Path) -> Iterator[tuple[list[str], Callable[[str], BinaryIO]]]:
    """An archive's file member names and a function opening one of them; an unreadable archive is removed."""
    try:
        handle = zipfile.ZipFile(path) if archive.kind == "zip" else tarfile.open(path)
    except (zipfile.BadZipFile, tarfile.TarError, EOFError) as err:
        path.unlink(missing_ok=True)
        raise DefSentError(path, f"not a readable {archive.kind} archive ({err}); removed it, so the next run "
                                 f"downloads {archive.url} again") from err
    with handle:
        if isinstance(handle, zipfile.ZipFile):
            yield [i.filename for i in handle.infolist() if not i.is_dir()], handle.open
        else:
            yield [m.name for m in handle.getmembers() if m.isfile()], handle.extractfile
