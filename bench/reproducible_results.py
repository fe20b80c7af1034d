"""Whether two runs of a DAG wrote the same results: every file under each workdir's ``results/`` hashed (SHA-256)
and compared, and each run's results searched for timing fields (a JSON key or TSV column named like a duration or
a pace), which belong in ``benchmarks/`` (work clocks) and ``logs/``, not in results.

    .venv/bin/python bench/reproducible_results.py WORKDIR_A WORKDIR_B

Prints the files that differ or exist in one run only and the timing fields found; exits 1 if there is any
(docs/results.md: two default runs from empty).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

TIMING = re.compile(r"seconds|per_second|_time$|^date$|^(start|end)(ed)?(_at)?$|^saved_at$")
VOCABULARIES = {"tokenizer.json", "vocab.json"}  # a saved model's tokens: keys, not fields


def digests(results: Path) -> dict[str, str]:
    """Relative path -> SHA-256 of every file under ``results``."""
    return {str(path.relative_to(results)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(results.rglob("*")) if path.is_file()}


def differences(a: Path, b: Path) -> list[str]:
    """The files of ``a`` and ``b`` (two results folders) that differ, or exist in one of them only."""
    first, second = digests(a), digests(b)
    return sorted(name for name in first.keys() | second.keys() if first.get(name) != second.get(name))


def timing_fields(results: Path) -> list[str]:
    """``file: field`` for every JSON key (at any depth, its value set) and TSV column under ``results`` named like a
    timing (a tokenizer's vocabulary aside)."""
    found = []
    for path in sorted(results.rglob("*")):
        if path.suffix == ".json" and path.name not in VOCABULARIES:
            names = set(json_keys(json.loads(path.read_text(encoding="utf-8"))))
        elif path.suffix == ".tsv":
            names = set(tsv_header(path))
        else:
            continue
        found += [f"{path.relative_to(results)}: {name}" for name in sorted(names) if TIMING.search(name)]
    return found


def json_keys(value: object) -> Iterator[str]:
    """Every key at any depth whose value is set (MTEB's result files keep their timing keys, nulled)."""
    if isinstance(value, dict):
        for key, item in value.items():
            if item is not None:
                yield str(key)
            yield from json_keys(item)
    elif isinstance(value, list):
        for item in value:
            yield from json_keys(item)


def tsv_header(path: Path) -> list[str]:
    """A TSV's column names (past a rehearsal's ``#`` banner line)."""
    with path.open(encoding="utf-8") as lines:
        header = next((line for line in lines if not line.startswith("#")), "")
    return header.rstrip("\n").split("\t")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workdirs", type=Path, nargs=2)
    a, b = (workdir / "results" for workdir in parser.parse_args(argv).workdirs)
    files, differ = len(digests(a)), differences(a, b)
    timings = [f"{run.parent.name}/results/{field}" for run in (a, b) for field in timing_fields(run)]
    print(f"{files} files under {a}; {len(differ)} differ from {b} or exist in one run only")
    print("\n".join(f"  differs: {name}" for name in differ) or "  every file byte-identical")
    print("\n".join(f"  timing field: {field}" for field in timings) or "  no timing field in either run's results")
    return 1 if differ or timings else 0


if __name__ == "__main__":
    sys.exit(main())
