"""The GPU path against the CPU (docs/gpu.md, which gives the tolerances' reasons): entry spaces, training, FastICA,
GPU slots, throughput. The comparisons run on CPU too, so CI covers them: there the "device" run is the CPU with bf16
autocast forced on (real bf16 rounding), and fp32 must repeat bit for bit. The ``gpu`` variants skip without CUDA.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from conftest import REPO
from helpers import one_thread  # noqa: F401 (an autouse fixture)
from scipy import stats
from test_transforms import FLOAT32_ATOL, TORCH_FLOAT64_ATOL, aligned_components, mixed_sources, paper_pipeline
from tiny_models import WORDS
from workflow_utils import snakemake, write_tiny_config

from defsent_plus.dictionary.table import definition_pairs
from defsent_plus.encoders import encoding
from defsent_plus.encoders.models import load_encoder
from defsent_plus.methods.defsent_plus.objective import EntryProjection
from defsent_plus.spaces.entry_space import entry_embeddings
from defsent_plus.spaces.transforms import apply_transform
from defsent_plus.training import trainer
from defsent_plus.training.trainer import TrainConfig, train_epoch

FP32_ATOL = 1e-4  # max |difference|: device fp32 (no autocast, no TF32) vs CPU fp32
BF16_REL_FRO, BF16_MIN_COSINE, BF16_SPEARMAN = 5e-2, 0.99, 0.99  # bf16 + TF32 vs CPU fp32, see the entry-space test
BF16_LOSS_ATOL = 0.05  # nats, per segment mean of one epoch's loss curve
CUDA = torch.cuda.is_available()
needs_cuda = [pytest.mark.gpu, pytest.mark.skipif(not CUDA, reason="no CUDA device")]


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=needs_cuda)])
def device(request) -> torch.device:
    return torch.device(request.param)


# (encoder, device): the tiny random BERT everywhere, all-MiniLM-L6-v2 (real weights) on CUDA
ENCODER_CASES = pytest.mark.parametrize("encoder_name, device", [
    pytest.param("tiny_bert", torch.device("cpu"), id="tiny_bert-cpu"),
    pytest.param("tiny_bert", torch.device("cuda"), marks=needs_cuda, id="tiny_bert-cuda"),
    pytest.param("minilm_path", torch.device("cuda"), marks=needs_cuda, id="minilm-cuda"),
])


def word_frame(entries: int = 150, seed: int = 0) -> pd.DataFrame:
    """Entries of 1-3 definitions of 3-12 random words (all in the tiny models' vocabulary)."""
    rng = np.random.default_rng(seed)
    definitions = [[" ".join(rng.choice(WORDS, rng.integers(3, 13))) for _ in range(rng.integers(1, 4))]
                   for _ in range(entries)]
    return pd.DataFrame({"entry": [f"e{i}" for i in range(entries)], "definitions": definitions})


@contextmanager
def precision(device: torch.device, bf16: bool):
    """bf16: the workflow's GPU path (encoding.autocast_for, TF32 on as the jobs set it), forced on CPU too;
    otherwise exact float32 (no autocast, no TF32)."""
    def forced(dev):
        return torch.autocast(device_type=dev.type, dtype=torch.bfloat16, enabled=bf16)

    flags = (torch.backends.cuda.matmul, torch.backends.cudnn)
    saved = [flag.allow_tf32 for flag in flags]
    workflow_autocast = encoding.autocast_for
    with pytest.MonkeyPatch.context() as patch:
        for module in (encoding, trainer):
            patch.setattr(module, "autocast_for", workflow_autocast if bf16 and device.type == "cuda" else forced)
        try:
            for flag in flags:
                flag.allow_tf32 = bf16
            yield
        finally:
            for flag, value in zip(flags, saved, strict=True):
                flag.allow_tf32 = value


def spaces(encoder_dir, frame, device, bf16: bool) -> dict[str, np.ndarray]:
    encoder = load_encoder(encoder_dir).to(device)
    with precision(device, bf16):
        return entry_embeddings(encoder, frame, batch_size=32, max_length=32)


def row_cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


@ENCODER_CASES
def test_entry_spaces_on_the_device_match_cpu_fp32(encoder_name, device, request):
    """fp32 (autocast and TF32 off) within 1e-4 (CPU: exactly); bf16 keeps directions and similarities."""
    encoder_dir, frame = request.getfixturevalue(encoder_name), word_frame()
    reference = spaces(encoder_dir, frame, torch.device("cpu"), bf16=False)
    fp32, bf16 = spaces(encoder_dir, frame, device, bf16=False), spaces(encoder_dir, frame, device, bf16=True)
    left, right = np.random.default_rng(0).integers(0, len(frame), (2, 2000))
    for name, b in reference.items():
        assert np.abs(fp32[name] - b).max() <= (0 if device.type == "cpu" else FP32_ATOL), name
        a = bf16[name]
        assert not np.array_equal(a, b), f"{name}: the bf16 path did not run"
        assert np.linalg.norm(a - b) / np.linalg.norm(b) <= BF16_REL_FRO, name
        assert row_cosines(a, b).min() >= BF16_MIN_COSINE, name
        spearman = stats.spearmanr(row_cosines(a[left], a[right]), row_cosines(b[left], b[right])).statistic
        assert spearman >= BF16_SPEARMAN, name


def without_dropout(model_dir: Path, out: Path) -> Path:
    """A copy of the model with dropout off: CUDA draws other dropout masks than the CPU from the same seed (0.117
    nats apart on an H200 in fp32, docs/gpu.md), so the precision is compared without them."""
    shutil.copytree(model_dir, out)
    config = json.loads((out / "config.json").read_text())
    config.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    (out / "config.json").write_text(json.dumps(config))
    return out


def test_bf16_training_follows_the_cpu_loss_curve(tiny_bert, device, tmp_path):
    tiny_bert = without_dropout(tiny_bert, tmp_path / "tiny")
    frame = word_frame(entries=60)
    texts, entry_ids = definition_pairs(frame)
    space = torch.from_numpy(np.random.default_rng(0).normal(size=(len(frame), 32)).astype(np.float32))

    def curve(where: torch.device, bf16: bool) -> list[float]:
        encoder = load_encoder(tiny_bert).to(where)
        cfg = TrainConfig(lr=1e-3, batch_size=8, seed=0, max_length=32, bucket_by_length=True)
        with precision(where, bf16):
            return train_epoch(encoder, texts, entry_ids, EntryProjection(space, encoder.pooler, "cls"), cfg,
                               progress=False)["loss_curve"]

    reference, found = curve(torch.device("cpu"), False), curve(device, True)
    assert found != reference, "the bf16 path did not run"
    assert np.abs(np.subtract(found, reference)).max() <= BF16_LOSS_ATOL


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="no CUDA device")
@pytest.mark.parametrize("precision_", ["float64", "float32"])
def test_torch_fastica_on_the_gpu_matches_sklearn(precision_):
    torch.backends.cuda.matmul.allow_tf32 = False  # as in the ICA job's own process
    E = mixed_sources(rows=20_000, cols=32, seed=1)
    reference, model = paper_pipeline(E)
    out, info = apply_transform(E, "ica", backend="auto", precision=precision_)
    assert info["backend"] == "torch" and info["device"] == "cuda"
    if precision_ == "float64":
        assert np.abs(out - reference).max() <= TORCH_FLOAT64_ATOL
    else:  # float32 ordered two bimodal sources (11 and 27) the other way round on an H200 (docs/gpu.md)
        assert np.abs(aligned_components(out, reference) - reference).max() <= FLOAT32_ATOL
    assert precision_ == "float32" or info["n_iter"] == model.n_iter_


JOB = """
import json, sys, time, torch
from pathlib import Path
from defsent_plus.encoders.devices import hold_gpus
visible = hold_gpus(int(sys.argv[1]), sys.argv[2])  # what every GPU-capable workflow script does first
print(json.dumps([visible, torch.cuda.is_available() and str(torch.cuda.get_device_properties(0).uuid)]), flush=True)
while not Path(sys.argv[3]).exists():
    time.sleep(0.05)
"""


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="no CUDA device")
@pytest.mark.parametrize("requested", [0, 1])
def test_concurrent_jobs_compute_on_different_gpus(requested, tmp_path):
    """Two jobs holding their slots at once: GPU jobs see one distinct real GPU each, CPU jobs none."""
    if requested and torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs (one GPU: the second job waits, tests/test_devices.py)")
    env = {k: v for k, v in os.environ.items() if k not in ("CUDA_VISIBLE_DEVICES", "DEFSENT_GPUS")}
    jobs = [subprocess.Popen([sys.executable, "-c", JOB, str(requested), str(tmp_path / "locks"),
                              str(tmp_path / "release")], stdout=subprocess.PIPE, text=True, env=env)
            for _ in range(2)]
    seen = [json.loads(job.stdout.readline()) for job in jobs]  # both hold their slots now
    (tmp_path / "release").touch()
    assert [job.wait(timeout=60) for job in jobs] == [0, 0]
    if not requested:
        assert seen == [["", False]] * 2, "a CPU job must not see a GPU"
        return
    assert seen[0][0] != seen[1][0] and seen[0][1] != seen[1][1]
    assert all(uuid == str(torch.cuda.get_device_properties(int(visible)).uuid) for visible, uuid in seen)


SLOT = re.compile(r"^(\S+ \S+) INFO \S+: CUDA_VISIBLE_DEVICES='([^']*)' \((\d+) GPU\(s\) requested\)", re.M)


def job_slots(logs) -> list[tuple[str, str, int]]:
    """(log name, CUDA_VISIBLE_DEVICES, GPUs requested) of every job log with a slot line."""
    return [(name, visible, requested) for name, visible, requested, _ in job_holds(logs)]


def job_holds(logs) -> list[tuple[str, str, int, tuple[float, float]]]:
    """:func:`job_slots` with each job's hold: from its slot line's time to its log's last write (the slot is
    released later, at exit, so two holds that overlap here overlapped for the locks too)."""
    holds = []
    for log in sorted(logs.rglob("*.log")):
        if found := SLOT.search(log.read_text(errors="replace")):
            claimed = datetime.strptime(found[1], "%Y-%m-%d %H:%M:%S,%f").timestamp()
            holds.append((log.stem, found[2], int(found[3]), (claimed, log.stat().st_mtime)))
    return holds


def overlap(first: tuple[float, float], second: tuple[float, float]) -> bool:
    return first[0] < second[1] and second[0] < first[1]


@pytest.mark.workflow
def test_workstation_profile_gives_each_gpu_job_a_device_of_its_own(tiny_bert, device, tmp_path, monkeypatch,
                                                                     warm_python):
    """The tiny DAG through profiles/workstation: on CPU with two fake GPUs (DEFSENT_GPUS=2), on CUDA with the real
    ones. Each GPU job gets one device, jobs at the same time different ones; CPU jobs get none."""
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("DEFSENT_GPUS", raising=False)
    if device.type == "cpu":
        monkeypatch.setenv("DEFSENT_GPUS", "2")
    pool = {"0", "1"} if device.type == "cpu" else {str(i) for i in range(torch.cuda.device_count())}
    config = write_tiny_config(tmp_path, tiny_bert)
    config["runs"]["tiny"].update(seeds=[0, 1], steps=[{"lr": 1.0e-3, "spaces": ["amp"]}])
    config["entry_space"]["analyse"] = ["amp"]
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    profile = ("--profile", str(REPO / "profiles" / "workstation"), "--cores", "3")
    # the trains first, alone: both become ready together, so the two seeds run at once (the dev score's embed
    # job would otherwise hold a GPU while one of them waits, and the wait decides which device it gets)
    snakemake(tmp_path, *profile, "results/tiny/step1/amp/seed0/train.json", "results/tiny/step1/amp/seed1/train.json",
              "results/entry_spaces/tiny/a/amp.center.npy", python=warm_python)
    snakemake(tmp_path, *profile, "results/eval/tiny/dev.json", python=warm_python)
    jobs = job_slots(tmp_path / "logs")
    # the dev score reads the vectors of its embed job (log stsb-dev_mean): that job asks for the GPU
    assert sorted(name for name, _, requested in jobs if requested == 1) == ["entry_space", "stsb-dev_mean", "train",
                                                                            "train"]
    assert all(visible in pool for _, visible, requested in jobs if requested)
    center_log = tmp_path / "logs" / "entry_spaces" / "tiny" / "a" / "amp.center.log"
    assert center_log.is_file() and "amp.center" not in {name for name, _, _ in jobs}  # numpy: no GPU slot, no torch
    # which jobs run at once is the scheduler's choice (on a loaded machine one seed may finish before the other
    # starts, and then both rightly get GPU 0): the claim is that jobs holding GPUs at the same time hold different ones
    holds = [(visible, hold) for _, visible, requested, hold in job_holds(tmp_path / "logs") if requested]
    together = [(a, b) for i, (a, hold_a) in enumerate(holds) for b, hold_b in holds[i + 1:] if overlap(hold_a, hold_b)]
    assert all(a != b for a, b in together), f"GPU jobs at the same time shared a device: {together}"
    records = [*tmp_path.glob("results/entry_spaces/*/*/entry_space.json"),
               *tmp_path.glob("results/tiny/*/*/*/train.json")]
    assert len(records) == 3 and {json.loads(path.read_text())["device"] for path in records} == {device.type}


def test_throughput_script_smoke(tmp_path, monkeypatch):
    """bench/gpu_throughput.py at toy size on CPU: every row measured (the job step too), nothing judged against the
    H100 goals."""
    monkeypatch.syspath_prepend(str(REPO / "bench"))
    import gpu_throughput

    assert gpu_throughput.main(["--smoke", "--job-step", "--json", str(tmp_path / "rows.json")]) == 0
    rows = {row["what"]: row for row in json.loads((tmp_path / "rows.json").read_text())["rows"]}
    assert set(rows) == {"entry space", "training", "job step", "ica"}
    assert rows["entry space"]["per_second"] > 0 and rows["training"]["steps"] == 5
    assert rows["job step"]["steps"] == 3 and rows["job step"]["ms_per_step"] > 0
    assert rows["ica"]["backend"] == "torch" and all(row["goal_ratio"] is None for row in rows.values())


def test_repeatability_script_smoke(tmp_path, monkeypatch):
    """bench/gpu_repeatability.py at toy size on CPU: two identical trainings are bit-identical there."""
    monkeypatch.syspath_prepend(str(REPO / "bench"))
    import gpu_repeatability

    assert gpu_repeatability.main(["--smoke", "--json", str(tmp_path / "rows.json")]) == 0
    rows = json.loads((tmp_path / "rows.json").read_text())["rows"]
    assert rows == [{"mode": "default", "max_weight_diff": 0.0, "max_loss_diff": 0.0, "bit_identical": True}]
