"""A stale Snakemake lock (left by a killed run) is told apart from one a running Snakemake holds."""

from __future__ import annotations

import subprocess
import sys
import time

from defsent_plus.pipeline.locks import LOCK_DIR, main, remove_stale_lock, snakemake_processes_in, stale_lock


def locked(workdir):
    (workdir / LOCK_DIR).mkdir(parents=True)
    for name in ("0.input.lock", "0.output.lock"):
        (workdir / LOCK_DIR / name).write_text("")
    return workdir


def test_a_lock_no_running_snakemake_holds_is_stale_and_removed_with_a_message(tmp_path, capsys):
    workdir = locked(tmp_path)
    assert stale_lock(workdir)
    assert main([str(workdir)]) == 0
    assert not list((workdir / LOCK_DIR).glob("*.lock"))
    assert "removed a stale Snakemake lock" in capsys.readouterr().err


def test_a_lock_held_by_a_running_snakemake_in_that_directory_stays(tmp_path, capsys):
    workdir = locked(tmp_path / "work")
    fake = tmp_path / "fake_snakemake.py"  # its command line names snakemake, as a real run's does
    fake.write_text("import time\nprint('up', flush=True)\ntime.sleep(60)\n")
    process = subprocess.Popen([sys.executable, str(fake)], cwd=workdir, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline().strip() == "up"
        assert snakemake_processes_in(workdir) == [process.pid]
        assert not stale_lock(workdir) and remove_stale_lock(workdir) == []
        main([str(workdir)])
        assert len(list((workdir / LOCK_DIR).glob("*.lock"))) == 2
        assert f"another Snakemake is running in {workdir.resolve()}" in capsys.readouterr().err
    finally:
        process.kill()
        process.wait()
    time.sleep(0.1)
    assert stale_lock(workdir)  # once that process is gone the same lock is stale


def test_no_lock_is_not_stale(tmp_path):
    assert not stale_lock(tmp_path) and remove_stale_lock(tmp_path) == []
