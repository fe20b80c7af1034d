"""A job process's garbage collector (defsent_plus/pipeline/process.py): paused for its imports, frozen at exit,
collecting as always in between."""

import ast
import gc
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from defsent_plus.pipeline.process import collector_paused


@pytest.fixture
def restored_collector():
    """Leave the test process's collector as it found it (enabled, nothing frozen by the test)."""
    enabled = gc.isenabled()
    yield
    gc.unfreeze()
    (gc.enable if enabled else gc.disable)()


class Cycle:
    def __init__(self):
        self.me = self


def test_the_collector_is_off_in_the_block_then_on_with_what_existed_frozen(restored_collector):
    gc.enable()
    frozen_before = gc.get_freeze_count()
    with collector_paused():
        assert not gc.isenabled()
        imported = [Cycle() for _ in range(100)]
    assert gc.isenabled()
    assert gc.get_freeze_count() >= frozen_before + len(imported)
    del imported
    Cycle()  # garbage made after the imports, while the job works
    assert gc.collect() >= 1


def test_the_collector_comes_back_when_the_block_fails_and_stays_off_if_it_was(restored_collector):
    gc.enable()
    with pytest.raises(ImportError), collector_paused():
        raise ImportError("no such library")
    assert gc.isenabled()
    gc.disable()
    with collector_paused():
        pass
    assert not gc.isenabled()


def run_script(tmp_path, body: str) -> subprocess.CompletedProcess:
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(f"""
        import atexit, gc, logging
        atexit.register(lambda: open({str(tmp_path / 'frozen')!r}, 'w').write(str(gc.get_freeze_count())))
        from defsent_plus.pipeline.process import exit_without_last_collection
        logging.basicConfig(filename={str(tmp_path / 'job.log')!r}, level=logging.INFO)
        exit_without_last_collection()
        class Cycle:
            def __init__(self):
                self.me = self
        made = [Cycle() for _ in range(1000)]
        logging.info("work done")
    """) + textwrap.dedent(body))
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)


def test_a_job_exits_with_its_heap_frozen_its_log_written_and_its_status_kept(tmp_path):
    done = run_script(tmp_path, "")
    assert done.returncode == 0, done.stderr
    assert int((tmp_path / "frozen").read_text()) >= 1000  # the handlers registered before it see the frozen heap
    assert "work done" in (tmp_path / "job.log").read_text()

    failed = run_script(tmp_path, 'raise RuntimeError("the job failed")\n')
    assert failed.returncode == 1 and "the job failed" in failed.stderr
    assert "work done" in (tmp_path / "job.log").read_text()


def package_imports_outside_the_pause(script) -> list[str]:
    """The package modules a workflow script imports at its top level outside ``with collector_paused():``."""
    tree = ast.parse(script.read_text())
    return [node.module for node in tree.body
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("defsent_plus")
            and node.module != "defsent_plus.pipeline.process"]


def test_every_workflow_script_loads_its_libraries_with_the_collector_paused():
    scripts = sorted((Path(__file__).parent.parent / "workflow" / "scripts").glob("*.py"))
    assert scripts
    assert {script.name: package_imports_outside_the_pause(script) for script in scripts} == {
        script.name: [] for script in scripts}
