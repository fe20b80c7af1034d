"""Snakemake's directory lock: bin/run records which host and process hold it, and removes only a lock whose
recorded process on this host is gone; a lock held on another host, by a live process, or with no record stays."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

from defsent_plus.pipeline.locks import (
    HOLDER_FILE,
    LOCK_DIR,
    lock_verdict,
    main,
    read_holder,
    record_holder,
    snakemake_processes_in,
)


def stale(workdir) -> bool:
    """Whether ``workdir`` has a lock that ``bash bin/run`` removes before it starts Snakemake."""
    verdict = lock_verdict(workdir)
    return verdict is not None and verdict.remove


def locked(workdir):
    (workdir / LOCK_DIR).mkdir(parents=True)
    for name in ("0.input.lock", "0.output.lock"):
        (workdir / LOCK_DIR / name).write_text("")
    return workdir


def lock_count(workdir) -> int:
    return len(list((workdir / LOCK_DIR).glob("*.lock")))


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_a_lock_whose_recorded_process_on_this_host_is_gone_is_removed_with_a_message(tmp_path, capsys):
    workdir = locked(tmp_path)
    record_holder(workdir, dead_pid())
    assert stale(workdir)
    assert main([str(workdir)]) == 0
    assert lock_count(workdir) == 0 and not (workdir / HOLDER_FILE).exists()
    err = capsys.readouterr().err
    assert "removed a stale Snakemake lock" in err and f"on host {socket.gethostname()}" in err and "is gone" in err


def test_a_lock_recorded_by_another_host_is_kept_and_the_message_names_the_host_and_unlock(tmp_path, capsys):
    workdir = locked(tmp_path)
    record_holder(workdir, dead_pid())  # a pid that is gone here says nothing about the other machine
    record = read_holder(workdir)
    (workdir / HOLDER_FILE).write_text(json.dumps({**record, "host": "node-b.cluster", "pid": 4242}))
    assert not stale(workdir)
    main([str(workdir), "--pid", "99", "--", "--cores", "2"])
    assert lock_count(workdir) == 2 and read_holder(workdir)["host"] == "node-b.cluster"  # nor overwritten
    err = capsys.readouterr().err
    assert err.startswith("bin/run: kept the Snakemake lock")
    assert "held by process 4242 on host node-b.cluster" in err and "another machine" in err
    assert "bash bin/run --unlock" in err


def test_a_lock_with_no_record_is_never_removed_and_the_message_says_so(tmp_path, capsys):
    workdir = locked(tmp_path)
    assert not stale(workdir)
    main([str(workdir), "--pid", "99", "--"])
    assert lock_count(workdir) == 2 and read_holder(workdir) is None
    err = capsys.readouterr().err
    assert "has no record of the run that holds it" in err and "plain `snakemake` run" in err
    assert "bash bin/run --unlock" in err


def test_a_lock_recorded_by_a_running_snakemake_on_this_host_stays(tmp_path, capsys):
    workdir = locked(tmp_path / "work")
    fake = tmp_path / "fake_snakemake.py"  # its command line names snakemake, as a real run's does
    fake.write_text("import time\nprint('up', flush=True)\ntime.sleep(60)\n")
    process = subprocess.Popen([sys.executable, str(fake)], cwd=workdir, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline().strip() == "up"
        record_holder(workdir, process.pid)
        assert snakemake_processes_in(workdir) == [process.pid]
        assert not stale(workdir)
        main([str(workdir)])
        assert lock_count(workdir) == 2
        assert f"held by a running Snakemake on this host (PIDs [{process.pid}])" in capsys.readouterr().err
    finally:
        process.kill()
        process.wait()
    time.sleep(0.1)
    assert stale(workdir)  # once that process is gone the same lock is stale


def test_bin_run_records_the_holder_before_snakemake_but_not_for_a_dry_run_or_unlock(tmp_path, capsys):
    main([str(tmp_path), "--pid", "1234", "--", "-n"])
    assert read_holder(tmp_path) is None
    main([str(tmp_path), "--pid", "1234", "--", "--cores", "2"])
    record = read_holder(tmp_path)
    assert record["pid"] == 1234 and record["host"] == socket.gethostname() and record["started"]
    main([str(tmp_path), "--pid", "1234", "--", "--unlock"])
    assert read_holder(tmp_path) is None and capsys.readouterr().err == ""


def test_no_lock_is_not_stale(tmp_path):
    assert not stale(tmp_path)
