"""A Python interpreter for workflow scripts that starts warm: a server imports torch, transformers and the package
once, then forks a fresh child for every ``python script.py`` a job runs (the child gets the job's arguments,
working directory, environment, niceness, standard streams and thread count, and its exit status goes back to the
job).

Snakemake runs a ``script:`` job as ``sys.executable <script>``; ``WarmPython.snakemake_command`` starts Snakemake
with ``sys.executable`` set to this module's client, so each job skips the ~4 s of imports that dominate a tiny
job. The rules, scripts and package code are the ones a user's run executes; only how the interpreter starts
differs. Test-only: a job's benchmark file then measures the client (its wall seconds are right, its memory and CPU
are not), so the cost model's measurements (tests/test_rehearsal*.py) keep the plain interpreter. Anything the
client is not given as ``python <file.py> [args]`` runs the real interpreter, and so does a job whose environment sets
what an interpreter or a preloaded library reads when it starts (``started_differently``). Unlike a fresh
interpreter's end, a child's skips the teardown of modules: an object a module's globals keep (an open file's
unwritten buffer) is not finalized; the workflow's scripts close what they write.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

# What every job of the tier would import by itself; the server imports it once before the first fork.
PRELOAD = ("numpy", "pandas", "pyarrow.parquet", "scipy.stats", "sklearn.decomposition", "torch", "transformers",
           "transformers.models.bert.modeling_bert", "transformers.models.roberta.modeling_roberta",
           "snakemake.script", "defsent_plus.pipeline.jobs", "defsent_plus.evaluation.embeddings",
           "defsent_plus.training.trainer", "defsent_plus.spaces.isotropy",
           "defsent_plus.evaluation.report", "defsent_plus.evaluation.curves", "mteb")
MESSAGE_BYTES = 1 << 20
CHILD: dict = {}  # in a child: the connection to its client, the job's pid and the script's exit status
START_PREFIXES = ("PYTHON", "HF_", "HUGGINGFACE_", "TRANSFORMERS_", "TOKENIZERS_", "TORCH", "OMP_SCHEDULE",
                  "CUBLAS_", "KMP_", "MKL_CBWR")
SERVER_ENV: dict[str, str] = {}
# Scripts the client runs in a fresh interpreter, comma-separated names (``train.py``; Snakemake runs a copy named
# ``tmp….train.py``): their benchmark files then measure the job's own memory and CPU (``snakemake_command``).
FRESH_SCRIPTS = "WARM_PYTHON_FRESH_SCRIPTS"
BASE_PATH: list[str] = []  # the server's sys.path without its own folders: a child's, after its script's

CLIENT = '''#!{python} -IS
import json, os, signal, socket, sys
args = sys.argv[1:]
fresh = tuple("." + name for name in os.environ.get({fresh_variable!r}, "").split(",") if name)
if len(args) < 1 or not args[0].endswith(".py") or not os.path.isfile(args[0]) or args[0].endswith(fresh):
    os.execv({python!r}, [{python!r}, *args])
conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
conn.connect({socket!r})
request = json.dumps({{"argv": args, "cwd": os.getcwd(), "env": dict(os.environ),
                      "nice": os.getpriority(os.PRIO_PROCESS, 0)}}).encode()
try:
    socket.send_fds(conn, [request], [0, 1, 2])
except OSError:  # an environment past the socket's buffer: a fresh interpreter
    os.execv({python!r}, [{python!r}, *args])
pid = conn.recv(64)
if not pid:
    sys.exit(1)

def forward(signum, frame):
    try:
        os.kill(int(pid), signum)
    except ProcessLookupError:
        pass

for signum in (signal.SIGTERM, signal.SIGINT):
    signal.signal(signum, forward)
status = conn.recv(64)
sys.exit(int(status) if status else 1)
'''


def serve(path: str, preload: tuple[str, ...] = PRELOAD) -> None:
    """Import ``preload``, then fork one child per request on the Unix socket ``path`` until terminated."""
    import atexit
    import importlib

    global BASE_PATH, SERVER_ENV
    BASE_PATH = [entry for entry in sys.path if entry not in ("", str(Path(__file__).parent))]
    SERVER_ENV = dict(os.environ)
    atexit.register(report_exit)  # registered before any module's handler: a child runs it after all of theirs
    for module in preload:
        importlib.import_module(module)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel; each reports to its client
    server = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    server.bind(path)
    server.listen(64)
    while True:
        conn, _ = server.accept()
        if os.fork() == 0:
            server.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            CHILD.update(conn=conn, pid=os.getpid(), status=run_request(conn))
            sys.exit(CHILD["status"])  # an interpreter's exit: the atexit handlers run, report_exit last
        conn.close()


def run_request(conn: socket.socket) -> int:
    """In a fresh child: take over the client's streams, niceness, directory, environment and threads, run its script as
    ``__main__``; returns its exit status."""
    import runpy

    message, fds, _, _ = socket.recv_fds(conn, MESSAGE_BYTES, 3)
    request = json.loads(message)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    status = 1
    conn.send(str(os.getpid()).encode())
    os.setpriority(os.PRIO_PROCESS, 0, request["nice"])  # a niced Snakemake's jobs stay niced
    os.chdir(request["cwd"])
    if started_differently(request["env"]):
        return subprocess.call([sys.executable, *request["argv"]], env=request["env"])
    os.environ.clear()
    os.environ.update(request["env"])
    tempfile.tempdir = None  # the job's TMPDIR
    limit_threads(os.environ.get("OMP_NUM_THREADS"))
    sys.argv = request["argv"]
    sys.path[:] = [os.path.dirname(os.path.abspath(sys.argv[0])),
                   *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep)), *BASE_PATH]
    try:
        runpy.run_path(sys.argv[0], run_name="__main__")
        status = 0
    except SystemExit as stop:
        status = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        if isinstance(stop.code, str):
            print(stop.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 - a script's failure is its exit status, as in a fresh interpreter
        import traceback

        traceback.print_exc()
    return status


def started_differently(env: dict[str, str]) -> bool:
    """Whether the job's environment sets what an interpreter or the preloaded libraries read when they start
    (PYTHONWARNINGS, PYTHONHASHSEED, HF_HUB_OFFLINE, ...) otherwise than the server's: then it runs fresh."""
    def read_at_start(variables: dict[str, str]) -> dict[str, str]:
        return {k: v for k, v in variables.items() if k.startswith(START_PREFIXES) and k != "PYTHONPATH"}

    return read_at_start(env) != read_at_start(SERVER_ENV)


def report_exit() -> None:
    """A child's last exit handler: flush its streams, send its status to the client and end without tearing down
    torch's and transformers' modules (seconds of work a job does not need)."""
    if CHILD.get("pid") == os.getpid():  # not a process the job forked
        import logging

        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        CHILD["conn"].send(str(CHILD["status"]).encode())
        os._exit(CHILD["status"])


def limit_threads(threads: str | None) -> None:
    """The job's thread count (Snakemake's OMP_NUM_THREADS) for BLAS, OpenMP and torch, already loaded here."""
    if not threads:
        return
    import threadpoolctl
    import torch

    threadpoolctl.threadpool_limits(int(threads))
    torch.set_num_threads(int(threads))


TRACED_CALLS = "open,openat,openat2,mkdir,mkdirat,clone,clone3,fork,vfork,execve"  # opened, made, started, run


def traced(folder: Path | None) -> list[str]:
    """The command prefix that traces a process and all it starts: ``folder/trace.<thread id>`` lists each thread's
    opened files (absolute paths, ``-y``) and the threads and processes it started (tests/test_read_audit.py)."""
    if folder is None:
        return []
    return ["strace", "-f", "-ff", "-qq", "-y", "--seccomp-bpf", "-e", f"trace={TRACED_CALLS}", "-e", "signal=none",
            "-o", str(folder / "trace")]


class WarmPython:
    """The server and its client for one test session; ``stop()`` ends the server."""

    def __init__(self, folder: Path, env: dict[str, str], timeout: float = 120.0, trace: Path | None = None) -> None:
        self.socket = str(folder / "warm.sock")
        self.executable = folder / "python"
        self.executable.write_text(CLIENT.format(python=sys.executable, socket=self.socket,
                                                 fresh_variable=FRESH_SCRIPTS))
        self.executable.chmod(0o755)
        code = f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import warm_python; " \
               f"warm_python.serve({self.socket!r})"
        self.log = tempfile.TemporaryFile()
        server_env = {key: value for key, value in env.items() if key != "PYTHONPATH"}  # each job brings its own
        self.trace = trace  # where each of its processes' opened files are traced (``traced``), if anywhere
        self.server = subprocess.Popen([*traced(trace), sys.executable, "-c", code], env=server_env, stdout=self.log,
                                       stderr=self.log)
        deadline = time.monotonic() + timeout
        while not os.path.exists(self.socket):
            if self.server.poll() is not None or time.monotonic() > deadline:
                self.log.seek(0)
                raise RuntimeError(f"the warm Python server did not start:\n{self.log.read().decode()[-3000:]}")
            time.sleep(0.05)

    def snakemake_command(self, fresh: Sequence[str] = ()) -> list[str]:
        """``python -m snakemake`` whose script jobs run on this server, except the scripts named in ``fresh``."""
        code = f"import os, sys; sys.executable = {str(self.executable)!r}; sys.argv[0] = 'snakemake'; " \
               f"os.environ[{FRESH_SCRIPTS!r}] = {','.join(fresh)!r}; from snakemake.cli import main; main()"
        return [sys.executable, "-c", code]

    @property
    def pid(self) -> int:
        """The serving interpreter's process (under strace, the tracer's child), whose forks run the scripts."""
        children = Path(f"/proc/{self.server.pid}/task/{self.server.pid}/children")
        if self.trace is not None and children.exists():
            return int(children.read_text().split()[0])
        return self.server.pid

    def stop(self) -> None:
        if self.pid != self.server.pid:  # strace ends with the process it traces
            os.kill(self.pid, signal.SIGTERM)
        else:
            self.server.terminate()
        self.server.wait(timeout=30)
        self.log.close()
