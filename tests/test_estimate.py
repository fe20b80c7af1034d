"""``defsent-plus estimate``: a config's GPU-hours, training memory and disk counted without running it, in
agreement with what a rehearsal's cost sheet projects from the jobs it ran."""

from __future__ import annotations

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
    from defsent_plus.pipeline import job_model, requests
    from defsent_plus.pipeline.plan import Plan

    config = read_config(REPO / "configs" / "bert-base.yaml")
    groups = job_model.slurm_groups()
    assert groups["embed"] == "eval_{encoder}"
    jobs = job_model.distinct_jobs(job_model.JOB_KINDS["embed"].jobs(Plan(config, lambda run, step: {})))
    encoders = {job["encoder"] for job in jobs}
    assert len(jobs) > len(encoders) > 1
    grouped = estimate_hours(config, groups)["embed"]
    separate = estimate_hours(config, {})["embed"]
    assert separate - grouped == pytest.approx((len(jobs) - len(encoders)) * requests.START_SECONDS / 3600)


def estimate_hours(config: dict, groups: dict[str, str]) -> dict[str, float]:
    from defsent_plus.pipeline.plan import Plan
    from defsent_plus.rehearsal.estimate import gpu_hours

    return gpu_hours(config, Plan(config, lambda run, step: {}), groups)


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
    assert disk["every_candidate_gb"] == pytest.approx(10 * checkpoint)
    assert disk["checkpoints_gb"] == pytest.approx(3 * checkpoint)


def test_the_command_prints_a_row_per_config_and_names_a_missing_one(capsys):
    main(["estimate", str(REPO / "configs" / "bert-base.yaml"), str(REPO / "config.yaml")])
    rows = capsys.readouterr().out.splitlines()
    assert rows[0].startswith("| config | GPU-hours") and [r.split("|")[1].strip() for r in rows[2:]] == [
        "bert-base.yaml", "config.yaml"]
    with pytest.raises(DefSentError, match="nope.yaml: no such config file"):
        read_config(REPO / "configs" / "nope.yaml")
