"""The workflow as a module of another workflow (docs/module/Snakefile): its own config, every output under its
prefix, the same results as the workflow run by itself."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import REPO
from workflow_utils import copy_run, workflow_env, write_tiny_config

from defsent_plus.errors import DefSentError
from defsent_plus.pipeline.snakemake_api import PREFIX_VARIABLE, declare_prefix, relative_to_prefix

WRAPPER = REPO / "docs" / "module" / "Snakefile"
PREFIX = "defsent"


def module_snakemake(workdir: Path, *args: str, python=None) -> subprocess.CompletedProcess:
    """Snakemake on ``workdir``'s own Snakefile (the wrapper), as its user would start it."""
    start = python.snakemake_command() if python else [sys.executable, "-m", "snakemake"]
    result = subprocess.run([*start, "--directory", str(workdir), "--cores", "2", *args], capture_output=True,
                            text=True, env=workflow_env(), cwd=workdir)
    if result.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-6000:]}")
    return result


def files_under(folder: Path) -> set[str]:
    return {str(path.relative_to(folder)) for path in folder.rglob("*") if path.is_file()}


@pytest.fixture(scope="module")
def module_run(tmp_path_factory, tiny_bert, tiny_run, warm_python) -> Path:
    """The tiny config (as tiny_run's, trackers included) run through the documented wrapper."""
    workdir = tmp_path_factory.mktemp("module_run")
    wrapper = WRAPPER.read_text(encoding="utf-8")
    assert '"../defsent-plus/Snakefile"' in wrapper
    (workdir / "Snakefile").write_text(wrapper.replace('"../defsent-plus/Snakefile"', repr(str(REPO / "Snakefile"))))
    (workdir / "config").mkdir()
    write_tiny_config(workdir / "config", tiny_bert, logging={"report_to": ["tensorboard"], "dir": "logs/trackers"})
    (workdir / "config" / "config.yaml").rename(workdir / "config" / "defsent.yaml")
    module_snakemake(workdir, python=warm_python)
    return workdir


@pytest.mark.workflow
def test_the_module_runs_the_whole_dag_with_every_output_under_its_prefix(module_run, tiny_run):
    top = {path.name for path in module_run.iterdir()}
    assert top == {"Snakefile", "config", ".snakemake", PREFIX}  # nothing of the module outside its prefix
    assert files_under(module_run / PREFIX / "results") == files_under(tiny_run / "results")
    logs = files_under(module_run / PREFIX / "logs")  # the trackers' files (their event files carry times)
    assert any(name.startswith("trackers/tensorboard/tiny/step1/") for name in logs)
    for table in ("compare/sts.tsv", "compare/sts_uncertainty.tsv", "tiny/eval/sts.tsv"):
        assert (module_run / PREFIX / "results" / table).read_bytes() == (tiny_run / "results" / table).read_bytes()
    again = module_snakemake(module_run, "--dry-run")
    assert "Nothing to be done" in again.stdout + again.stderr


@pytest.mark.workflow
def test_a_wordnet_source_is_read_under_the_prefix_or_the_error_names_the_folder_and_key(module_run, tmp_path):
    """The documented default ``path: nltk_data`` lies in the prefix folder: missing, planning says where it looked
    and which key to set; there (as `defsent-plus setup-wordnet --target defsent/nltk_data` makes it), the
    dictionary is built from it."""
    from test_dictionary import WORDNET_DATA, write_wordnet

    workdir = copy_run(module_run, tmp_path / "host")
    config_file = workdir / "config" / "defsent.yaml"
    config = yaml.safe_load(config_file.read_text())
    config["dictionary"]["sources"].append({"name": "wordnet", "type": "wordnet", "path": "nltk_data"})
    config_file.write_text(yaml.safe_dump(config, sort_keys=False))
    index = len(config["dictionary"]["sources"]) - 1
    target = f"{PREFIX}/results/dictionary/stats.tsv"
    with pytest.raises(AssertionError) as planning:
        module_snakemake(workdir, "--dry-run", target)
    assert (f"config: dictionary.sources[{index}].path: source 'wordnet': {PREFIX}/nltk_data/corpora/wordnet/"
            in str(planning.value))
    assert "set the key to one, or run `defsent-plus setup-wordnet --target <dir>`" in str(planning.value)
    write_wordnet(workdir / PREFIX / "nltk_data", WORDNET_DATA)  # a small WordNet, where the docs say
    module_snakemake(workdir, target)
    assert "source:wordnet\tdefinitions_read\t15\n" in (workdir / target).read_text()  # WORDNET_DATA's lemmas


def test_a_jobs_own_paths_are_made_relative_to_the_prefix_and_their_names_follow():
    from snakemake.io import Namedlist

    files = Namedlist(fromdict={"tsv": "defsent/results/a.tsv", "md": "defsent/results/a.md"})
    files.extend(["/abs/elsewhere.txt", "../shared/data"])  # absolute, and relative but not prefixed
    relative_to_prefix(files, "defsent/")
    assert list(files) == ["results/a.tsv", "results/a.md", "/abs/elsewhere.txt", "../../shared/data"]
    assert files.tsv == "results/a.tsv" and files.md == "results/a.md"


def test_the_prefix_reaches_the_jobs_and_a_second_one_is_refused(monkeypatch):
    monkeypatch.delenv(PREFIX_VARIABLE, raising=False)
    declare_prefix("defsent/")
    assert os.environ[PREFIX_VARIABLE] == "defsent/"
    declare_prefix("defsent/")  # the same module parsed again (a cluster job's own Snakemake)
    with pytest.raises(DefSentError, match="second prefix"):
        declare_prefix("other/")
    declare_prefix(None)  # used as a workflow: its jobs work where Snakemake runs
    assert PREFIX_VARIABLE not in os.environ
