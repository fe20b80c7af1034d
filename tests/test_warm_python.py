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
    script = ("import os, sys, torch\n"
              "print(sys.argv[1], os.getcwd(), os.environ['JOB_VALUE'], torch.get_num_threads(), sys.path[0])\n"
              "print('to stderr', file=sys.stderr)\n"
              "sys.exit(3)\n")
    for threads in ("1", "2"):
        result = run(warm_python, script, tmp_path, JOB_VALUE="from the job", OMP_NUM_THREADS=threads)
        assert result.returncode == 3, result.stderr
        assert result.stdout == f"an argument {tmp_path} from the job {threads} {tmp_path}\n"
        assert result.stderr == "to stderr\n"


def test_a_failing_script_fails_with_its_traceback(warm_python, tmp_path):
    result = run(warm_python, "raise ValueError('no such entry')\n", tmp_path)
    assert result.returncode == 1 and "ValueError: no such entry" in result.stderr


def test_what_is_not_a_script_runs_on_the_real_interpreter(warm_python):
    result = subprocess.run([str(warm_python.executable), "-c", "import sys; print(sys.executable)"],
                            capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == sys.executable
