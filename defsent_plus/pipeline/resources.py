"""How many CPU threads a torch or scikit-learn job gets (config ``resources.threads``)."""

from __future__ import annotations

AUTO = "auto"


def threads_per_job(setting: int | str, cores: int | None) -> int:
    """``resources.threads``: a number, or ``auto``: half the cores Snakemake was given (at least 1), so two jobs run
    side by side. On 2 cores two 1-thread jobs encode 2x as fast as one, one 2-thread job only 1.45x (measured with
    all-MiniLM-L6-v2, 2026-11-23), and the DAG has two independent branches most of the time."""
    if setting != AUTO:
        return int(setting)
    return max(1, (cores or 2) // 2)

