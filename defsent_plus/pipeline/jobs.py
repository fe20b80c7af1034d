"""The start of every workflow script: its log file, its GPU slot, its CPU threads and its garbage collector.

Importing torch and transformers creates objects that live until the job ends, which Python's cyclic collector would
walk again and again (docs/results.md): the package turns the collector off when a script job first imports it
(``defsent_plus/__init__.py``), and :func:`start_job` freezes what the imports made, turns the collector back on
for the job's work and freezes whatever exists at exit. Nothing here touches a result.
"""

from __future__ import annotations

import atexit
import gc
import json
import logging
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def start_job(snakemake: Any, gpu: bool = False) -> None:
    """Work in a prefixed module's folder; log to the job's log file; put a rehearsal's banner (``params.banner``) on
    its tables and plots; register the config's method and evaluator plugins (their jobs ask their declarations);
    with ``gpu``, take the job's own GPU slot (none for CPU jobs) before CUDA starts and limit torch to its threads;
    then the garbage collector as the module says."""
    from defsent_plus import banner
    from defsent_plus.evaluation.evaluators import load_plugins as load_evaluators
    from defsent_plus.methods import load_plugins
    from defsent_plus.pipeline.snakemake_api import enter_prefix

    enter_prefix(snakemake)  # a prefixed module's job works in its prefix folder
    record_declared_paths(snakemake)
    log_to(snakemake.log[0] if snakemake.log else None)
    banner.activate(snakemake.params.get("banner"))
    load_plugins(snakemake.config.get("method_plugins") or [])
    load_evaluators(snakemake.config.get("evaluator_plugins") or [])
    if gpu:
        import torch

        from defsent_plus.encoders.devices import hold_gpus

        hold_gpus(getattr(snakemake.resources, "gpu", 0))
        torch.set_num_threads(snakemake.threads)
    gc.freeze()
    gc.enable()
    atexit.register(gc.freeze)  # the exit handlers registered before (log files, trackers) run after it


def log_to(path: str | Path | None, level: int = logging.INFO) -> None:
    """Send this package's log records (and Python warnings) to ``path`` and to stderr."""
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(path, mode="w", encoding="utf-8"))
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", handlers=handlers,
                        force=True)
    logging.captureWarnings(True)
    sys.excepthook = _log_uncaught


def _log_uncaught(kind, error, traceback) -> None:
    """Uncaught errors go to the job's log file too, where Snakemake tells the user to look."""
    package = logging.getLogger(__package__.partition(".")[0])
    package.critical("%s: %s", kind.__name__, error, exc_info=(kind, error, traceback))


JOB_RECORDS = "DEFSENT_JOB_RECORDS"  # a folder: each job writes its declared paths there (tests/test_read_audit.py)


def record_declared_paths(snakemake: Any) -> None:
    """Where the environment names a folder (``DEFSENT_JOB_RECORDS``), write ``<pid>.json`` there: the job's process,
    rule, folder and declared input, output and log paths, which the read audit compares with the files the process
    opens (its benchmark file is Snakemake's, not the job's). Nothing otherwise."""
    folder = os.environ.get(JOB_RECORDS)
    if not folder:
        return
    declared = {kind: [str(path) for path in getattr(snakemake, kind, None) or []]
                for kind in ("input", "output", "log")}
    record = {"pid": os.getpid(), "rule": snakemake.rule, "wildcards": dict(snakemake.wildcards.items()),
              "cwd": os.getcwd(), **declared}
    Path(folder, f"{os.getpid()}.json").write_text(json.dumps(record))


@contextmanager
def work_clock(path: str | Path) -> Iterator[dict]:
    """Time the block (a job's work, past its start) and write ``{"seconds": ...}`` to ``path`` when it completes
    (:func:`defsent_plus.pipeline.dag.work_clock_file`); nothing when it fails. The block gets a dict for the work's
    own timings (a pace; ``seconds``, where the work times itself, replaces the block's: a training loop's, a resumed
    job's earlier seconds included), written with it, so that ``results/`` holds no timing and two runs' results
    compare byte for byte."""
    from defsent_plus.io import write_json

    start = time.perf_counter()
    timings: dict = {}
    yield timings
    write_json(path, {"seconds": round(time.perf_counter() - start, 3), **timings})
