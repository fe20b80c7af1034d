"""``defsent-plus estimate``: a config's GPU-hours, training memory and disk counted without running it, in
agreement with what a rehearsal's cost sheet projects from the jobs it ran."""

from __future__ import annotations

import itertools

import pytest
import yaml
from conftest import REPO
from workflow_utils import validated

from defsent_plus.cli import main
from defsent_plus.errors import DefSentError
from defsent_plus.pipeline.model_architectures import architecture_of
from defsent_plus.rehearsal import costs
from defsent_plus.rehearsal.context import Context
from defsent_plus.rehearsal.estimate import estimate, read_config
from defsent_plus.rehearsal.models import parameter_count

BERT_BASE_ENCODER = 109_482_240  # parameters with the pooler (tests/test_rehearsal.py)


def test_the_estimate_agrees_with_the_cost_sheet_of_the_configs_tiny_rehearsal(tiny_rehearsal, senteval_dir):
    """The sheet counts the real jobs from the rehearsal's log (× real seeds), the estimate from the plan: the same
    vectors, spaces and checkpoints (a tiny rehearsal's are counted from the real model), and each run's training
    peak from the same batch, length, classes and passes (one formula, each reading them its own way)."""
    _, memory, disk, _ = costs.cost_sheet(tiny_rehearsal, senteval_dir)
    counted = estimate(read_config(REPO / "configs" / "defsent-roberta-base.yaml"))
    assert counted.training_memory_gb == pytest.approx(dict(zip(memory["run"], memory["peak_gpu_gb"], strict=True)))
    for key in ("embeddings_gb", "spaces_gb", "checkpoints_gb", "every_candidate_gb", "transient_gb"):
        assert getattr(counted, key) == pytest.approx(disk[key]), key
    assert counted.gpu_hours["train"] > 0 and counted.gpu_hours["reverse_dictionary"] > 0


def test_checkpoints_count_every_candidate_and_each_steps_selected_copy():
    config = read_config(REPO / "configs" / "bert-base.yaml")  # 3 steps: 1 + 1 + 2 spaces x 10 seeds
    counted = estimate(config)
    checkpoint = 4 * BERT_BASE_ENCODER / 1e9
    assert counted.every_candidate_gb == pytest.approx(40 * checkpoint)
    assert counted.checkpoints_gb == pytest.approx(3 * checkpoint)  # keep_weights: selected
    assert counted.transient_gb == pytest.approx(20 * checkpoint)  # step 3's candidates before its selection
    config["selection"]["keep_weights"] = "all"
    assert estimate(config).checkpoints_gb == pytest.approx(43 * checkpoint)
    defsent = estimate(read_config(REPO / "configs" / "defsent-bert-base.yaml"))  # 3 runs of 10 seeds, one step each
    with_head = 4 * parameter_count(architecture_of("bert-base-uncased"), encoder_only=False) / 1e9
    assert defsent.transient_gb == pytest.approx(30 * with_head)  # each run prunes its own: all may train at once


def test_centring_and_whitening_are_not_gpu_hours_fastica_is():
    config = read_config(REPO / "configs" / "bert-base.yaml")  # analyses amp, amp.center, amp.whiten, amp.ica

    def transform_hours(analyse: list[str]) -> float:
        return estimate({**config, "entry_space": {**config["entry_space"], "analyse": analyse}}).gpu_hours[
            "transform_space"]

    assert transform_hours(["amp", "amp.ica"]) == pytest.approx(transform_hours(config["entry_space"]["analyse"]))
    assert transform_hours(["amp"]) < transform_hours(["amp", "amp.ica"])


def test_the_jobs_of_a_slurm_job_group_pay_one_start():
    """profiles/slurm groups an encoder's embeddings (eval_<encoder>): its GPU-hours lack a start for every grouped
    embed job but one per encoder; without groups each job pays its own."""
    from defsent_plus.pipeline import job_model, placement, requests
    from defsent_plus.pipeline.plan import Plan

    config = read_config(REPO / "configs" / "bert-base.yaml")
    groups = placement.slurm_groups()
    assert groups["embed"] == "eval_{encoder}"
    jobs = job_model.distinct_jobs(job_model.JOB_KINDS["embed"].jobs(Plan(config, lambda run, step: {})))
    encoders = {job["encoder"] for job in jobs}
    assert len(jobs) > len(encoders) > 1
    grouped = estimate_hours(config, groups)["embed"]
    separate = estimate_hours(config, {})["embed"]
    assert separate - grouped == pytest.approx((len(jobs) - len(encoders)) * requests.START_SECONDS / 3600)


def estimate_hours(config: dict, groups: dict[str, str]) -> dict[str, float]:
    from defsent_plus.pipeline.plan import Plan
    from defsent_plus.rehearsal.estimate import hours_by_rule, modelled_gpu_jobs

    return hours_by_rule(modelled_gpu_jobs(config, Plan(config, lambda run, step: {}), groups))


def test_a_sheet_of_a_rehearsal_without_keep_best_jobs_counts_its_checkpoints(tmp_path):
    """A cost sheet re-written from a rehearsal older than rule keep_best reported 0.0 GB of checkpoints."""
    real = validated(yaml.safe_load((REPO / "configs" / "bert-base.yaml").read_text()))
    architecture = architecture_of("bert-base-uncased")
    rehearsal = {**real, "rehearsal": {"size": "full"}}
    context = Context(real=real, rehearsal=rehearsal, architectures={"bert_base": architecture}, real_sets={})
    rows = [{"rule": "train", "run": "bert_base", "step": "1", "real_jobs": 10.0, "model": "bert_base",
             "outputs": []}]
    disk = costs.disk_gb(rows, context, tmp_path)
    checkpoint = 4 * parameter_count(architecture) / 1e9
    assert disk["every_candidate_gb"] == pytest.approx(40 * checkpoint)  # counted from the plan, as estimate's
    assert disk["checkpoints_gb"] == pytest.approx(3 * checkpoint)


def test_the_command_prints_a_row_per_config_and_names_a_missing_one(capsys):
    main(["estimate", str(REPO / "configs" / "bert-base.yaml"), str(REPO / "config.yaml")])
    rows = capsys.readouterr().out.split("\n\n")[0].splitlines()  # the first table; the reservations follow
    assert rows[0].startswith("| config | GPU-hours") and [r.split("|")[1].strip() for r in rows[2:]] == [
        "bert-base.yaml", "config.yaml"]
    with pytest.raises(DefSentError, match="nope.yaml: no such config file"):
        read_config(REPO / "configs" / "nope.yaml")


# ---------------------------------------------------------------- what the hours assume, reserve and take on N GPUs


def test_the_command_states_its_assumptions_and_the_hours_the_slurm_requests_reserve(capsys):
    paths = [REPO / "configs" / "bert-base.yaml", REPO / "configs" / "defsent-bert-base.yaml", REPO / "config.yaml"]
    main(["estimate", *map(str, paths), "--gpus", "4"])
    first, reservations, stated = capsys.readouterr().out.strip().split("\n\n")
    header, _, *rows = reservations.splitlines()
    assert header == ("| config | GPU-hours (work) | requested GPU-hours (SLURM) | critical path | wall on 4 GPUs | "
                      "step times of | margin / min runtime |")
    for path, row, work_row in zip(paths, rows, first.splitlines()[2:], strict=True):
        cells = [cell.strip() for cell in row.split("|")[1:-1]]
        assert cells[0] == path.name and cells[1] == work_row.split("|")[2].strip()  # the same work hours
        assert float(cells[2]) >= float(cells[1]) and cells[5:] == ["NVIDIA H200", "x3 / 60 min"]
    assert stated.startswith("Assumptions:")
    for phrase in ("measured on the GPU named under 'step times of'", "without costs.margin and without "
                   "costs.min_runtime_minutes", "requested runtime (its projection x costs.margin, at least "
                   "costs.min_runtime_minutes) x 1 GPU", "Wall on 4 GPUs (--gpus)", "Never below the critical path"):
        assert phrase in stated, phrase
    assert main(["estimate", str(paths[-1]), "--gpus", "0"]) == 2
    assert capsys.readouterr().err == "error: --gpus: expected at least 1 GPU, got 0\n"


def test_requested_hours_cover_the_work_and_the_wall_time_shrinks_with_gpus_down_to_the_critical_path():
    for name in ("bert-base.yaml", "defsent-bert-base.yaml", "minilm-full.yaml"):
        counted = estimate(read_config(REPO / "configs" / name))
        work = sum(counted.gpu_hours.values())
        assert counted.requested_gpu_hours >= work > 0, name
        walls = [counted.wall_hours(gpus) for gpus in (1, 2, 3, 4, 8, 16, 64, 1000)]
        assert all(later <= earlier for earlier, later in itertools.pairwise(walls)), (name, walls)
        assert min(walls) >= counted.critical_path_hours - 1e-9, name
        assert walls[0] == pytest.approx(work)  # one GPU runs every job in turn
        assert walls[-1] == pytest.approx(counted.critical_path_hours)  # enough GPUs: only the chain is left
        assert counted.critical_path_hours < work, name


def test_the_critical_path_runs_through_every_step_of_the_training_chain():
    """bert-base.yaml: three steps; step k+1 trains from step k's selection, which waits for all of step k's
    candidates, so the chain holds each step's longest training, one after another."""
    counted = estimate(read_config(REPO / "configs" / "bert-base.yaml"))
    jobs = {job.key: job for job in counted.gpu_jobs}
    trains = [job for job in counted.gpu_jobs if job.key[0] == "train"]
    step2 = next(job for job in trains if dict(job.key[1])["step"] == "2")
    step1 = {job.key for job in trains if dict(job.key[1])["step"] == "1"}
    assert step1 <= set(step2.after)
    assert any(key[0] == "entry_space" and dict(key[1])["encoder"] == "bert_base.step1" for key in step2.after)
    longest = sum(max(job.seconds for job in trains if dict(job.key[1])["step"] == step) for step in "123")
    assert counted.critical_path_hours * 3600 >= longest
    assert all(before in jobs for job in counted.gpu_jobs for before in job.after)
