"""One GPU per job on a workstation: device slots claimed with ``flock`` lock files.

Snakemake's ``--resources gpu=N`` caps how many GPU jobs run at once but does not say *which* GPU each
job gets. :func:`gpu_slot` makes concurrent jobs agree: each job locks ``<lock_dir>/gpu<i>.lock`` for the
devices it uses and sets ``CUDA_VISIBLE_DEVICES`` before CUDA is initialised. The kernel drops a
``flock`` when its holder dies, so a killed job never leaves a slot taken.

* A job requesting 0 GPUs gets ``CUDA_VISIBLE_DEVICES=""``: CPU jobs must not silently run on (and fill
  the memory of) a GPU that a concurrent GPU job claimed.
* When ``CUDA_VISIBLE_DEVICES`` is already set for a GPU job, a scheduler (SLURM with ``--gpus``/
  ``--gres``) or the user chose the devices: they are used as they are, no lock is taken.
"""

from __future__ import annotations

import atexit
import fcntl
import itertools
import logging
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

log = logging.getLogger(__name__)

GPUS_ENV = "DEFSENT_GPUS"
VISIBLE_ENV = "CUDA_VISIBLE_DEVICES"
NVIDIA_PROC = Path("/proc/driver/nvidia/gpus")


def device_ids() -> list[int]:
    """This machine's GPU ids, without initialising CUDA.

    ``$DEFSENT_GPUS`` overrides detection: a count (``"2"`` = GPUs 0 and 1) or a list (``"2,3"``);
    otherwise the NVIDIA driver's ``/proc`` entries, else ``nvidia-smi -L``, else none.
    """
    override = os.environ.get(GPUS_ENV, "").strip()
    if "," in override:
        return [int(part) for part in override.split(",") if part.strip()]
    if override:
        return list(range(int(override)))
    if NVIDIA_PROC.is_dir():
        return list(range(len(list(NVIDIA_PROC.iterdir()))))
    return list(range(_nvidia_smi_count()))


def _nvidia_smi_count() -> int:
    if shutil.which("nvidia-smi") is None:
        return 0
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(line.startswith("GPU ") for line in out.splitlines())


def device_count() -> int:
    """Number of GPUs on this machine (see :func:`device_ids`; the workstation profile's ``gpu`` resource)."""
    return len(device_ids())


@contextmanager
def gpu_slot(
    requested: int,
    lock_dir: str | Path = ".snakemake/gpu-slots",
    n_devices: int | None = None,
    poll_seconds: float = 1.0,
) -> Iterator[str]:
    """Run the block with ``requested`` GPUs of its own; yields the ``CUDA_VISIBLE_DEVICES`` value.

    Waits (polling every ``poll_seconds``) while fewer than ``requested`` slots are free. ``n_devices``
    restricts the pool to GPUs ``0..n-1`` (default: :func:`device_ids`). The previous environment is
    restored on exit and the slots are released.
    """
    previous = os.environ.get(VISIBLE_ENV)
    if requested > 0 and previous is not None:
        log.info("using the GPU(s) assigned by the scheduler: %s=%s", VISIBLE_ENV, previous)
        yield previous
        return
    with ExitStack() as held:
        pool = device_ids() if n_devices is None else list(range(n_devices))
        devices = _claim(requested, Path(lock_dir), pool, poll_seconds, held) if requested else []
        visible = ",".join(str(device) for device in devices)
        os.environ[VISIBLE_ENV] = visible
        log.info("%s=%r (%d GPU(s) requested)", VISIBLE_ENV, visible, requested)
        try:
            yield visible
        finally:
            if previous is None:
                os.environ.pop(VISIBLE_ENV, None)
            else:
                os.environ[VISIBLE_ENV] = previous


_HELD = ExitStack()
atexit.register(_HELD.close)


def hold_gpus(requested: int, lock_dir: str | Path = ".snakemake/gpu-slots") -> str:
    """:func:`gpu_slot` for the rest of the process (a job script's first line, before CUDA is used)."""
    return _HELD.enter_context(gpu_slot(requested, lock_dir))


def _claim(requested: int, lock_dir: Path, pool: list[int], poll_seconds: float, held: ExitStack) -> list[int]:
    """Lock ``requested`` devices of ``pool``; their locks are released when ``held`` closes."""
    if requested > len(pool):
        raise RuntimeError(
            f"the job requests {requested} GPU(s) but this machine has {len(pool)} ({GPUS_ENV} overrides "
            "detection); on a CPU-only machine set resources.gpu: 0 in the config or use the workstation profile"
        )
    lock_dir.mkdir(parents=True, exist_ok=True)
    for attempt_number in itertools.count():
        attempt = ExitStack()  # free devices of pool locked in order, up to requested of them
        free = (device for device in pool if _try_lock(lock_dir / f"gpu{device}.lock", attempt))
        devices = list(itertools.islice(free, requested))
        if len(devices) == requested:
            held.enter_context(attempt)
            return devices
        attempt.close()
        if attempt_number == 0:
            log.info("waiting for %d free GPU slot(s) of %s in %s", requested, pool, lock_dir)
        time.sleep(poll_seconds)


def _try_lock(path: Path, stack: ExitStack) -> bool:
    """Take ``path``'s exclusive lock without blocking; on success ``stack`` releases it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return False
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    stack.callback(os.close, fd)
    stack.callback(fcntl.flock, fd, fcntl.LOCK_UN)
    return True
