"""The tiny rehearsal DAGs of the shipped configs (tests/test_shipped_configs.py), run in the background from the
session's start: niced, two at a time, they fill the core that the other tests, mostly one process at a time,
leave idle, instead of running alone near the session's end.

One config of each class (tests/config_classes.py) runs its whole DAG; defsent-roberta-base's comes first,
as conftest's ``tiny_rehearsal``, whose train and entry space jobs start fresh interpreters for its cost sheet.
"""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from config_classes import shape_classes
from conftest import REPO

SHIPPED = [*sorted((REPO / "configs").glob("*.yaml")), REPO / "config.yaml"]
CLASSES = shape_classes(SHIPPED)
REHEARSED = "defsent-roberta-base"  # conftest's tiny_rehearsal
FRESH = {REHEARSED: ("train.py", "entry_space.py")}  # its cost sheet reads these jobs' memory
NICENESS = 10  # below the test in the foreground
# A process that prepares the rehearsals of the configs its arguments name (runner.prepare), after root and SentEval.
PREPARE = ("import sys; from pathlib import Path; from defsent_plus.rehearsal.runner import prepare; "
           "[prepare(Path(path), 'tiny', root=Path(sys.argv[1]), senteval=Path(sys.argv[2])) for path in sys.argv[3:]]")


@dataclass
class ShippedDags:
    """Each shipped config's rehearsal working directory, and the runs of each class's first config."""

    workdirs: dict[str, Path]
    runs: dict[str, Future]
    pool: ThreadPoolExecutor

    def finished(self, name: str) -> Path:
        """The working directory of a class's first config once its DAG has run (its Snakemake's error if any)."""
        self.runs[name].result()
        return self.workdirs[name]

    def stop(self) -> None:
        for run in self.runs.values():
            run.cancel()
        self.pool.shutdown(wait=True)


def selected(items) -> list[list[Path]]:
    """The classes whose test the session runs (``REHEARSED``'s first)."""
    names = {item.callspec.params["members"][0].stem for item in items if item.get_closest_marker("shipped_configs")}
    return sorted((members for members in CLASSES if members[0].stem in names),
                  key=lambda members: members[0].stem != REHEARSED)


def start(classes: list[list[Path]], root: Path, senteval: Path, python) -> ShippedDags:
    """In the background: prepare every config of ``classes`` for its tiny rehearsal (one niced process, one config
    after another: they share models and stand-ins), then run the first config of each class, in order."""
    from workflow_utils import snakemake

    from defsent_plus.rehearsal.runner import rehearsal_name

    paths = [path for members in classes for path in members]
    workdirs = {path.stem: root / rehearsal_name(path, "tiny") for path in paths}
    preparing = subprocess.Popen(["nice", "-n", str(NICENESS), sys.executable, "-c", PREPARE, str(root),
                                  str(senteval), *map(str, paths)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 text=True)
    prepared = ThreadPoolExecutor(max_workers=1).submit(preparing.communicate)

    def run(name: str) -> None:
        output, _ = prepared.result()
        if preparing.returncode != 0:
            raise AssertionError(f"preparing the shipped configs' rehearsals failed:\n{output[-6000:]}")
        snakemake(workdirs[name], python=python, niceness=NICENESS, fresh=FRESH.get(name, ()))

    pool = ThreadPoolExecutor(max_workers=2)
    return ShippedDags(workdirs, {first.stem: pool.submit(run, first.stem) for first, *_ in classes}, pool)
