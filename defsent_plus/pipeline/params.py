"""Rule params in one canonical form, so that formatting or key order of the config never re-runs a job.

Snakemake compares a job's params by ``repr``, and a mapping's ``repr`` lists its keys in insertion order: the same
config with its keys in another order would re-plan every job. :func:`canonical` rebuilds mappings with sorted keys
(recursively, lists keep their order: their order is a value), so only a change of value changes the ``repr``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from typing import Any


def canonical(value: Any) -> Any:
    """``value`` with every mapping's keys sorted, recursively (tuples become lists)."""
    if isinstance(value, Mapping):
        return {key: canonical(value[key]) for key in sorted(value, key=str)}
    if isinstance(value, list | tuple):
        return [canonical(item) for item in value]
    return value


def canonical_of(function: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A params function (of the job's wildcards) whose value is :func:`canonical`."""
    return lambda wildcards: canonical(function(wildcards))


def digest(value: Any, length: int = 12) -> str:
    """A short SHA-256 of :func:`canonical` ``value`` as JSON: the same for any key order."""
    return hashlib.sha256(json.dumps(canonical(value), sort_keys=True, default=str).encode()).hexdigest()[:length]
