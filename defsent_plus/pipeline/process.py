"""A job process's fixed cost from Python's cyclic garbage collector.

Importing torch and transformers creates about 700,000 objects, nearly all of them alive until the job ends. Left
alone, the collector walks the growing heap again and again while they load, and all of it once more when the
interpreter exits: about 1 s each in every job that runs a model, on the 2-core machine (docs/results.md). A job
therefore imports its libraries with the collector paused and then freezes what exists (``gc.freeze``: never walked
again; the few reference cycles the imports dropped stay in memory until the job ends), and freezes whatever it made
at exit, which the operating system frees. Garbage the job makes while it works is collected as always; nothing here
touches a result.
"""

from __future__ import annotations

import atexit
import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """Run the block (a job's imports) with the cyclic collector off; then freeze every object that exists, and
    restore the collector as it was."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def exit_without_last_collection() -> None:
    """Freeze every object when the interpreter exits: the other exit handlers (log files, trackers) still run after
    it, and objects outside reference cycles are still freed (and files closed) as usual; only the collector's last
    walk over the job's whole heap is left out."""
    atexit.register(gc.freeze)
