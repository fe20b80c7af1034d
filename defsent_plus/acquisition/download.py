"""One file over HTTP(S): resumes a partial download, retries with back-off, shows progress, checks SHA-256."""

from __future__ import annotations

import logging
import os
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from tqdm.auto import tqdm

from defsent_plus.errors import DefSentError
from defsent_plus.io import file_sha256

log = logging.getLogger(__name__)
CHUNK = 1 << 16
PERMANENT = {400, 401, 403, 404, 410, 451}  # HTTP statuses a retry cannot fix


@dataclass(frozen=True)
class Retry:
    """How often and how patiently a download is retried (``data.download`` in config)."""

    attempts: int = 5
    backoff_seconds: float = 2.0  # wait backoff * 2**(attempt-1) before the next attempt
    timeout_seconds: float = 60.0


DEFAULT_RETRY = Retry()


class _Incomplete(Exception):
    """The connection ended before the announced length arrived."""


def partial_path(dest: Path) -> Path:
    return dest.with_name(dest.name + ".part")


def fetch(url: str, dest: str | Path, sha256: str | None = None, retry: Retry = DEFAULT_RETRY) -> Path:
    """Download ``url`` to ``dest`` (kept as ``dest.part`` until complete, resumed from there) and check its
    SHA-256 when one is given. An existing ``dest`` (e.g. placed by hand) is only checked."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    if not dest.is_file():
        _download_with_retries(url, dest, retry)
    if sha256 is not None:
        check_sha256(dest, sha256, url)
    return dest


def check_sha256(path: Path, expected: str, url: str) -> None:
    """Remove ``path`` and fail, saying what to do, unless its SHA-256 is ``expected``."""
    actual = file_sha256(path)
    if actual != expected.lower():
        path.unlink()
        raise DefSentError(path, f"SHA-256 mismatch for {url}: expected {expected}, got {actual}; the file was "
                                 "removed. The host may serve a changed or broken file: download it from another "
                                 f"copy, check it (sha256sum), and place it by hand at {path}")


def _download_with_retries(url: str, dest: Path, retry: Retry) -> None:
    for attempt in range(1, retry.attempts + 1):
        try:
            _download_once(url, dest, retry.timeout_seconds)
            return
        except urllib.error.HTTPError as err:
            if err.code in PERMANENT:
                raise DefSentError(url, f"HTTP {err.code} {err.reason}: the file is not there (moved or removed "
                                        f"host?). Get it elsewhere and place it by hand at {dest}") from err
            problem = f"HTTP {err.code} {err.reason}"
        except (urllib.error.URLError, OSError, _Incomplete) as err:
            problem = str(getattr(err, "reason", err))
        if attempt < retry.attempts:
            wait = retry.backoff_seconds * 2 ** (attempt - 1)
            log.warning("%s: %s (attempt %d/%d); retrying in %.1f s", url, problem, attempt, retry.attempts, wait)
            time.sleep(wait)
    raise DefSentError(url, f"download failed after {retry.attempts} attempts ({problem}); the partial file "
                            f"{partial_path(dest)} is kept and resumed next time, or place the file by hand at "
                            f"{dest}")


def _download_once(url: str, dest: Path, timeout: float) -> None:
    """One attempt: continue ``dest.part`` where it ends (HTTP Range), rename it to ``dest`` when complete."""
    part = partial_path(dest)
    have = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(url, headers={"Range": f"bytes={have}-"} if have else {})
    try:
        response = urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as err:
        if err.code == 416 and have:  # asked beyond the end: the part file is already complete
            os.replace(part, dest)
            return
        raise
    with response:
        if have and response.status != 206:  # the server ignored the range: start over
            log.info("%s: server does not resume; downloading from the start", url)
            have = 0
        length = response.headers.get("Content-Length")
        total = have + int(length) if length is not None else None
        with open(part, "ab" if have else "wb") as out, tqdm(
            total=total, initial=have, unit="B", unit_scale=True, desc=Path(dest).name, mininterval=1.0,
        ) as progress:
            while chunk := response.read(CHUNK):
                out.write(chunk)
                progress.update(len(chunk))
    size = part.stat().st_size
    if total is not None and size < total:
        raise _Incomplete(f"connection closed at {size} of {total} bytes")
    os.replace(part, dest)
