"""The SLURM test cluster's own clean-up (tests/slurm_cluster.py), without starting a cluster."""

from __future__ import annotations

import subprocess
from pathlib import Path

from slurm_cluster import kill_processes_under


def test_a_process_left_working_in_the_clusters_root_is_killed_when_it_stops(tmp_path):
    (tmp_path / "job").mkdir()
    left = subprocess.Popen(["sleep", "600"], cwd=tmp_path / "job")
    elsewhere = subprocess.Popen(["sleep", "600"], cwd=Path("/"))
    try:
        assert kill_processes_under(tmp_path) == [left.pid]
        assert left.wait(timeout=10) == -9 and elsewhere.poll() is None
    finally:
        left.kill()
        elsewhere.kill()
