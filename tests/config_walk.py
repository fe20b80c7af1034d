"""Planning in-process with Snakemake's API: which jobs a finished working directory would run for its config.yaml, and
why (tests/test_config_walk.py)."""

from __future__ import annotations

from pathlib import Path

from conftest import REPO


def replanned(workdir: Path) -> dict[str, set[str]]:
    """Rule -> the reasons (Snakemake's names) of its jobs that would run in ``workdir``, planned as a dry run does,
    except the jobs that run only because a job before them does ("input files updated by another job")."""
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import DAGSettings, OutputSettings, Quietness, ResourceSettings

    with SnakemakeApi(OutputSettings(quiet={Quietness.ALL})) as api:
        workflow_api = api.workflow(resource_settings=ResourceSettings(cores=2), snakefile=REPO / "Snakefile",
                                    workdir=workdir)
        workflow_api.dag(DAGSettings())
        workflow = workflow_api._workflow  # the parsed workflow; its DAG as a dry run builds it (snakemake <9.10)
        workflow._prepare_dag(forceall=False, ignore_incomplete=False, lock_warn_only=True, nolock=True)
        workflow._build_dag()
        planned: dict[str, set[str]] = {}
        for job in workflow.dag.needrun_jobs():
            reasons = set(workflow.dag.reason(job).get_names()) - {"input files updated by another job"}
            if reasons and job.rule.name != "all":
                planned.setdefault(job.rule.name, set()).update(reasons)
        return planned
