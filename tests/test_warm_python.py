"""The warm interpreter (tests/warm_python.py) behaves as ``python script.py`` for what a job gives it: arguments,
working directory, environment, streams, thread count and exit status (a failing script fails its job)."""

from __future__ import annotations

import os
import subprocess
import sys


def run(warm_python, script, tmp_path, **env) -> subprocess.CompletedProcess:
    path = tmp_path / "script.py"
    path.write_text(script)
    return subprocess.run([str(warm_python.executable), str(path), "an argument"], cwd=tmp_path, text=True,
                          capture_output=True, env={**os.environ, **env}, timeout=60)


def test_a_script_gets_its_jobs_arguments_folder_environment_and_threads_and_returns_its_status(warm_python,
                                                                                                 tmp_path):
    script = ("import os, sys, tempfile, torch\n"
              "print(sys.argv[1], os.getcwd(), os.environ['JOB_VALUE'], torch.get_num_threads(), sys.path[0],\n"
              "      tempfile.gettempdir(), os.getppid())\n"
              "print('to stderr', file=sys.stderr)\n"
              "sys.exit(3)\n")
    for threads in ("1", "2"):
        result = run(warm_python, script, tmp_path, JOB_VALUE="from the job", OMP_NUM_THREADS=threads,
                     TMPDIR=str(tmp_path))
        assert result.returncode == 3, result.stderr
        server = warm_python.pid  # a fork of the warm server, not a fresh interpreter
        assert result.stdout == f"an argument {tmp_path} from the job {threads} {tmp_path} {tmp_path} {server}\n"
        assert result.stderr == "to stderr\n"


def test_what_an_interpreter_reads_when_it_starts_gets_a_fresh_one(warm_python, tmp_path):
    script = "import os, warnings\nprint(os.getppid())\nwarnings.warn('a warning')\n"
    assert run(warm_python, script, tmp_path).returncode == 0
    fresh = run(warm_python, script, tmp_path, PYTHONWARNINGS="error")
    assert fresh.returncode == 1 and "UserWarning: a warning" in fresh.stderr
    assert int(fresh.stdout) != warm_python.pid


def test_a_process_the_script_forks_does_not_report_the_scripts_status(warm_python, tmp_path):
    script = "import os, sys\nif os.fork() == 0:\n    sys.exit(7)\nos.wait()\nprint('after the fork')\n"
    result = run(warm_python, script, tmp_path)
    assert (result.returncode, result.stdout) == (0, "after the fork\n"), result.stderr
def test_a_failing_script_fails_with_its_traceback(warm_python, tmp_path):
    result = run(warm_python, "raise ValueError('no such entry')\n", tmp_path)
    assert result.returncode == 1 and "ValueError: no such entry" in result.stderr


def test_what_is_not_a_script_runs_on_the_real_interpreter(warm_python):
    result = subprocess.run([str(warm_python.executable), "-c", "import sys; print(sys.executable)"],
                            capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == sys.executable


def test_an_environment_too_large_for_the_socket_runs_on_a_fresh_interpreter(warm_python, tmp_path):
    large = {f"LARGE{i}": "x" * 100_000 for i in range(3)}  # past the socket's 212,992-byte buffer
    script = "import os\nprint(os.getppid(), sum(len(v) for k, v in os.environ.items() if k.startswith('LARGE')))\n"
    result = run(warm_python, script, tmp_path, **large)
    parent, size = map(int, result.stdout.split())
    assert result.returncode == 0 and size == 300_000 and parent != warm_python.pid
