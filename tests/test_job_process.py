"""A script job's garbage collector, in its one place (defsent_plus/__init__.py pauses it when a Snakemake script job
first imports the package; defsent_plus/pipeline/jobs.py start_job freezes and re-enables it): paused while the job
imports its libraries, collecting as always while it works, its heap frozen at exit; elsewhere left alone."""

import gc
import json
import subprocess
import sys
import textwrap

import defsent_plus

SNAKEFILE = """
rule ok:
    output: "ok.json", "frozen_at_exit"
    log: "ok.log"
    script: "job.py"

rule fails:
    output: "fails.json", "fails_frozen_at_exit"
    log: "fails.log"
    script: "job.py"
"""

JOB = """
import atexit, gc, json, sys
from pathlib import Path
state = {"on_before_the_package": gc.isenabled()}
from defsent_plus.pipeline.jobs import start_job
state["on_while_importing"] = gc.isenabled()
atexit.register(lambda: Path(snakemake.output[1]).write_text(str(gc.get_freeze_count())))  # runs after start_job's
start_job(snakemake)
state["on_while_working"] = gc.isenabled()
state["frozen_by_start"] = gc.get_freeze_count()
class Cycle:
    def __init__(self):
        self.me = self
Cycle()  # garbage made while the job works
state["collected_while_working"] = gc.collect()
Path(snakemake.output[0]).write_text(json.dumps(state))
if snakemake.rule == "fails":
    raise RuntimeError("the job failed")
"""


def test_a_script_job_imports_with_the_collector_paused_and_works_and_exits_as_intended(tmp_path):
    (tmp_path / "Snakefile").write_text(textwrap.dedent(SNAKEFILE))
    (tmp_path / "job.py").write_text(textwrap.dedent(JOB))
    run = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", "--keep-going", "ok", "fails"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    ok = json.loads((tmp_path / "ok.json").read_text())
    assert ok == {"on_before_the_package": True, "on_while_importing": False, "on_while_working": True,
                  "frozen_by_start": ok["frozen_by_start"], "collected_while_working": ok["collected_while_working"]}
    assert ok["frozen_by_start"] > 10_000 and ok["collected_while_working"] >= 1
    assert int((tmp_path / "frozen_at_exit").read_text()) > ok["frozen_by_start"]
    assert run.returncode != 0 and "the job failed" in (tmp_path / "fails.log").read_text()  # status and log kept


def test_outside_a_script_job_the_package_leaves_the_collector_alone():
    assert gc.isenabled() and defsent_plus.__version__
    check = "import gc, defsent_plus.pipeline.jobs; assert gc.isenabled()"
    assert subprocess.run([sys.executable, "-c", check], capture_output=True).returncode == 0
