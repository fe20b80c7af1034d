"""The GPU acceptance harness (bench/gpu_acceptance.py) in its CPU smoke mode, and the checks it is made of.

The smoke run (~60 s on 2 cores) runs every section at toy size: the tiny DAG on CPU and through the workstation
profile with two fake GPUs (identical outputs, one device per GPU job, none for CPU jobs), fp32 inference and
training twice (bit-identical), bf16 autocast on CPU against fp32 (the bf16 tolerances on real bf16 rounding),
torch FastICA against scikit-learn, and the throughput rows. The unit tests show each comparison can fail.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO

sys.path.insert(0, str(REPO / "bench"))
pytestmark = pytest.mark.workflow  # the smoke run runs the tiny DAG twice

import gpu_acceptance  # noqa: E402
import gpu_carry  # noqa: E402
from gpu_compare import (  # noqa: E402
    bf16_checks,
    exact_checks,
    fp32_checks,
    ica_check,
    loss_curve_check,
)


@pytest.fixture(scope="module")
def smoke(tmp_path_factory) -> dict:
    workdir = tmp_path_factory.mktemp("gpu_smoke")
    result = subprocess.run([sys.executable, str(REPO / "bench" / "gpu_acceptance.py"), "--smoke", "--workdir",
                             str(workdir)], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    return json.loads((workdir / "gpu_acceptance.json").read_text())


@pytest.mark.slow
@pytest.mark.workflow
def test_smoke_mode_passes_every_section(smoke):
    assert smoke["passed"] and smoke["mode"] == "smoke"
    checks = smoke["checks"]
    assert {c["section"] for c in checks} == {"dag", "slots", "inference", "training", "ica", "goal"}
    assert not [c for c in checks if c["passed"] is False]
    judged = {(c["section"], c["metric"]) for c in checks if c["passed"] is True}
    assert ("dag", "loss curve (exact)") in judged and ("dag", "STS-B dev |diff| (exact)") in judged
    assert ("inference", "bf16 Spearman of pair cosines") in judged
    assert ("ica", "float64 max |diff| (x100 scale)") in judged
    assert any("minilm" in c["name"] for c in checks), "the MiniLM slice is installed here and must be compared"


@pytest.mark.slow
@pytest.mark.workflow
def test_smoke_slots_and_throughput_rows(smoke):
    records = smoke["slot_records"]
    gpu_jobs = [r for r in records if r["requested"]]
    assert {r["rule"] for r in gpu_jobs} == {"entry_space", "train", "dev_score"}
    assert all(r["visible"] in ("0", "1") for r in gpu_jobs)
    assert [r["visible"] for r in records if r["rule"] == "transform_space"] == [""]
    rows = {row["what"]: row for row in smoke["throughput"]}
    assert rows["entry space"]["definitions"] == smoke["dataset"]["definitions"] > 0
    assert rows["training"]["steps"] == 5 and rows["training"]["sentences_per_second"] > 0
    assert rows["ica"]["backend"] == "torch"


def test_exact_and_fp32_checks_catch_a_difference():
    a = np.random.default_rng(0).normal(size=(20, 8)).astype(np.float32)
    b = a.copy()
    b[3, 2] += 1e-3
    assert exact_checks("s", "n", a, a.copy())[0].passed
    assert not exact_checks("s", "n", b, a)[0].passed
    assert fp32_checks("s", "n", a + 1e-6, a)[0].passed
    assert not fp32_checks("s", "n", b, a)[0].passed


def test_bf16_checks_accept_bf16_rounding_and_reject_a_broken_space():
    import torch

    a = np.random.default_rng(0).normal(size=(300, 64)).astype(np.float32)
    rounded = torch.from_numpy(a).bfloat16().float().numpy()
    assert all(check.passed for check in bf16_checks("s", "n", rounded, a))
    shuffled = a[np.random.default_rng(1).permutation(len(a))]  # right values, wrong rows (e.g. a broken order)
    assert not any(check.passed for check in bf16_checks("s", "n", shuffled, a))


def test_loss_curve_and_ica_checks():
    assert loss_curve_check("s", "n", [4.0, 3.0], [4.0, 3.0], exact=True).passed
    assert not loss_curve_check("s", "n", [4.0, 3.0 + 1e-7], [4.0, 3.0], exact=True).passed
    assert loss_curve_check("s", "n", [4.01, 3.0], [4.0, 3.0], exact=False).passed
    assert not loss_curve_check("s", "n", [4.2, 3.0], [4.0, 3.0], exact=False).passed
    reference = np.zeros((10, 4))
    assert all(c.passed for c in ica_check("s", "n", reference + 1e-4, reference, "float64", (7, 7)))
    assert not all(c.passed for c in ica_check("s", "n", reference, reference, "float64", (7, 8)))
    assert ica_check("s", "n", reference + 0.2, reference, "float32", (7, 9))[0].passed


def job(log: str, visible: str, start: str, end: str, requested: int = 1) -> dict:
    return {"log": log, "rule": "train", "visible": visible, "requested": requested,
            "start": f"2026-01-01 00:00:{start},000", "end": f"2026-01-01 00:00:{end},000"}


def test_slot_checks_find_two_jobs_on_one_device_at_once(tmp_path):
    apart = [job("a", "0", "01", "05"), job("b", "0", "06", "09"), job("c", "1", "02", "08")]
    assert gpu_acceptance.overlapping_same_device(apart) == []
    clash = [job("a", "0", "01", "05"), job("b", "0", "04", "09")]
    assert gpu_acceptance.overlapping_same_device(clash) == ["a and b on 0"]
    checks = gpu_acceptance.slot_checks([*clash, job("t", "1", "01", "02", requested=0)], [0, 1], False, tmp_path)
    verdicts = {c.name: c.passed for c in checks}
    assert verdicts["jobs at the same time"] is False
    assert verdicts["1 CPU jobs with a slot"] is False, "a CPU job that sees a GPU fails"
    outside = gpu_acceptance.slot_checks([job("a", "2", "01", "02")], [0, 1], False, tmp_path)
    assert outside[0].passed is False, "a device outside the machine's pool fails"


def test_carry_leaves_out_what_the_target_has():
    needed = gpu_carry.installed_closure(["snakemake"])
    present = gpu_carry.installed_closure(["transformers"])
    carried = gpu_carry.carried_distributions(needed, present)
    assert "snakemake" in carried and "connection-pool" in carried
    assert not set(carried) & set(present) and "pyyaml" in needed and "pyyaml" not in carried


def test_carry_installs_offline_without_dependencies(tmp_path):
    """A carried wheel (built here from a two-line package) installs with no index and is importable."""
    package = tmp_path / "src"
    (package / "carried_probe").mkdir(parents=True)
    (package / "carried_probe" / "__init__.py").write_text("VALUE = 42\n")
    (package / "pyproject.toml").write_text('[project]\nname = "carried-probe"\nversion = "1.0"\n'
                                            'dependencies = ["a-package-that-does-not-exist"]\n'
                                            '[build-system]\nrequires = ["setuptools"]\n'
                                            'build-backend = "setuptools.build_meta"\n')
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--no-index", "--wheel-dir", str(tmp_path / "carry" / "wheels"), str(package)], check=True)
    site = gpu_carry.install_carry(tmp_path / "carry", tmp_path / "site")
    probe = subprocess.run([sys.executable, "-c", "import carried_probe; print(carried_probe.VALUE)"],
                           env={"PYTHONPATH": str(site)}, capture_output=True, text=True)
    assert probe.stdout.strip() == "42"
    assert gpu_carry.install_carry(tmp_path / "carry", tmp_path / "site") == site  # installed once


def test_rule_of_job_logs():
    assert gpu_acceptance.rule_of(Path("eval/tiny/dev.log")) == "dev_score"
    assert gpu_acceptance.rule_of(Path("eval/tiny/sts_mean.log")) == "score"
    assert gpu_acceptance.rule_of(Path("entry_spaces/tiny/a/amp.ica.log")) == "transform_space"
    assert gpu_acceptance.rule_of(Path("tiny/step1/amp/seed0/train.log")) == "train"
