"""GPU slots without GPUs: lock files decide which job gets which device (DEFSENT_GPUS fakes the count)."""

from __future__ import annotations

import fcntl
import os
import select
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from defsent_plus.encoders.devices import device_count, device_ids, gpu_slot

CLAIMER = """
import sys, time
from pathlib import Path
from defsent_plus.encoders.devices import gpu_slot
requested, lock_dir, release = int(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
with gpu_slot(requested, lock_dir, poll_seconds=0.05) as visible:
    print(repr(visible), flush=True)
    while not release.exists():
        time.sleep(0.02)
"""


class Claimer:
    """A process that takes ``requested`` GPU slots and holds them until :meth:`release`."""

    def __init__(self, tmp_path: Path, name: str, requested: int = 1, gpus: str = "2"):
        self.release_file = tmp_path / f"release-{name}"
        env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"} | {"DEFSENT_GPUS": gpus}
        self.process = subprocess.Popen(
            [sys.executable, "-c", CLAIMER, str(requested), str(tmp_path / "locks"), str(self.release_file)],
            stdout=subprocess.PIPE, text=True, env=env,
        )

    def visible(self, timeout: float = 30.0) -> str | None:
        """CUDA_VISIBLE_DEVICES of the claimer once it holds its slots, None while it still waits."""
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        return eval(self.process.stdout.readline()) if ready else None

    def release(self) -> None:
        self.release_file.touch()
        assert self.process.wait(timeout=30) == 0

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)


@pytest.fixture(autouse=True)
def no_visible_devices(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setenv("DEFSENT_GPUS", "2")


def test_device_count_override(monkeypatch):
    assert device_ids() == [0, 1] and device_count() == 2
    monkeypatch.setenv("DEFSENT_GPUS", "2,3")
    assert device_ids() == [2, 3]
    monkeypatch.setenv("DEFSENT_GPUS", "0")
    assert device_count() == 0


def test_two_concurrent_jobs_get_different_devices_and_a_third_waits(tmp_path):
    first, second = Claimer(tmp_path, "first"), Claimer(tmp_path, "second")
    taken = {first.visible(), second.visible()}
    assert taken == {"0", "1"}
    third = Claimer(tmp_path, "third")
    assert third.visible(timeout=1.5) is None, "the third job must wait while both devices are held"
    second.release()
    assert third.visible() in taken
    third.release()
    first.release()


def test_a_killed_job_frees_its_device(tmp_path):
    holder = Claimer(tmp_path, "holder", gpus="1")
    assert holder.visible() == "0"
    holder.kill()
    with gpu_slot(1, tmp_path / "locks", poll_seconds=0.05) as visible:
        assert visible == "0"


def test_a_job_requesting_two_gets_two(tmp_path):
    with gpu_slot(2, tmp_path, n_devices=3) as visible:
        assert visible == "0,1" and os.environ["CUDA_VISIBLE_DEVICES"] == "0,1"
    assert "CUDA_VISIBLE_DEVICES" not in os.environ


def test_held_lock_is_skipped_in_process(tmp_path):
    fd = os.open(tmp_path / "gpu0.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        with gpu_slot(1, tmp_path) as visible:
            assert visible == "1"
    finally:
        os.close(fd)
    with gpu_slot(1, tmp_path) as visible:
        assert visible == "0"


def test_cpu_job_sees_no_gpu_even_under_a_scheduler(tmp_path, monkeypatch):
    with gpu_slot(0, tmp_path) as visible:
        assert visible == "" and os.environ["CUDA_VISIBLE_DEVICES"] == ""
    assert "CUDA_VISIBLE_DEVICES" not in os.environ
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    with gpu_slot(0, tmp_path):
        assert os.environ["CUDA_VISIBLE_DEVICES"] == ""
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "3"
    assert not list(tmp_path.iterdir()), "a CPU job takes no slot"


def test_scheduler_assigned_devices_are_respected(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    monkeypatch.setenv("DEFSENT_GPUS", "0")
    with gpu_slot(1, tmp_path / "locks") as visible:
        assert visible == "3" and os.environ["CUDA_VISIBLE_DEVICES"] == "3"
    assert not (tmp_path / "locks").exists(), "no lock is taken for scheduler-assigned devices"


def test_more_gpus_than_the_machine_has_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv("DEFSENT_GPUS", "0")
    with pytest.raises(RuntimeError, match="requests 1 GPU"), gpu_slot(1, tmp_path):
        pass


def test_hold_gpus_keeps_the_slot_until_the_process_exits(tmp_path):
    code = ("import os, fcntl; from defsent_plus.encoders.devices import hold_gpus; "
            f"print(repr(hold_gpus(1, {str(tmp_path)!r})), repr(os.environ['CUDA_VISIBLE_DEVICES']), "
            f"repr(hold_gpus(0, {str(tmp_path)!r})), repr(os.environ['CUDA_VISIBLE_DEVICES'])); "
            f"fd = os.open({str(tmp_path / 'gpu0.lock')!r}, os.O_RDWR); "
            "fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)")
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert result.stdout.split() == ["'0'", "'0'", "''", "''"]
    assert "BlockingIOError" in result.stderr, "the slot is still held while the process runs"
    with gpu_slot(1, tmp_path) as visible:
        assert visible == "0", "and free once it exited"
