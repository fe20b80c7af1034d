"""Incremental rebuilds on the tiny config: after a complete run, a config change re-plans exactly the jobs
it affects (Snakemake's default rerun triggers: mtime, params, input, software-env, code); an interrupted
run resumes; a second invocation on the same directory is refused by Snakemake's lock."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import FIXTURES, REPO
from safetensors.numpy import load_file
from workflow_utils import (
    TRAIN_TARGET,
    copy_run,
    one_sentence_batches,
    snakemake,
    validated,
    wait_for,
    workflow_env,
    write_tiny_config,
)

from defsent_plus.pipeline import dag
from defsent_plus.pipeline.dag import EncoderId
from defsent_plus.pipeline.locks import record_holder
from defsent_plus.pipeline.plan import Plan
from defsent_plus.training.resume import STATE_FILE

pytestmark = pytest.mark.workflow

Job = tuple[str, dict[str, str]]  # (rule, wildcards)


@pytest.fixture(scope="module")
def complete_run(tmp_path_factory, tiny_run) -> Path:
    """A copy of the session's finished tiny DAG: these tests edit its config (restoring it after each plan)."""
    return copy_run(tiny_run, tmp_path_factory.mktemp("incremental") / "run")


def parse_jobs(output: str) -> list[Job]:
    """The jobs Snakemake announced (``rule x:`` blocks and their ``wildcards:`` lines)."""
    jobs: list[Job] = []
    for line in output.splitlines():
        if match := re.match(r"^(?:local)?(?:rule|checkpoint) (\w+):$", line):
            jobs.append((match.group(1), {}))
        elif (match := re.match(r"^\s+wildcards: (.*)$", line)) and jobs:
            jobs[-1][1].update(item.split("=", 1) for item in match.group(1).split(", "))
    return jobs


def counts(jobs: list[Job]) -> dict[str, int]:
    result: dict[str, int] = {}
    for rule, _ in jobs:
        result[rule] = result.get(rule, 0) + 1
    return result


def values(jobs: list[Job], rule: str, wildcard: str) -> set[str]:
    return {wildcards[wildcard] for name, wildcards in jobs if name == rule}


def edit_config(workdir: Path, change: Callable[[dict], None]) -> str:
    """Apply ``change`` to the workdir's config; returns the previous text."""
    path = workdir / "config.yaml"
    original = path.read_text()
    config = yaml.safe_load(original)
    change(config)
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return original


def plan_after(workdir: Path, change: Callable[[dict], None]) -> tuple[list[Job], dict]:
    """Jobs of a dry run with ``change`` applied to the config (restored afterwards), and that config."""
    original = edit_config(workdir, change)
    try:
        config = yaml.safe_load((workdir / "config.yaml").read_text())
        result = snakemake(workdir, "--dry-run")
    finally:
        (workdir / "config.yaml").write_text(original)
    return parse_jobs(result.stdout + result.stderr), config


# What the tiny config implies (the expectations follow the fixture config rather than repeating its numbers).


def plan_of(config: dict) -> Plan:
    return Plan(validated(config), selection=lambda run, step: {})


def candidates(config: dict, run: str, step: int) -> list[str]:
    return [c.name for c in plan_of(config).candidates(run, step)]


def final_sts_encoders(config: dict, run: str) -> set[str]:
    return {row.encoder.name for row in plan_of(config).evaluated(run) if row.step > 0}


def transforms(config: dict, run: str, step: int) -> int:
    """Transform jobs of the entry space built for ``step``: the analysed spaces and the step's own."""
    spaces = config["entry_space"]["analyse"] + config["runs"][run]["steps"][step - 1]["spaces"]
    return len({space for space in spaces if "." in space})


def poolings(config: dict) -> int:
    return len(config["evaluation"]["poolings"])


def plan_with_config_text(workdir: Path, rewrite: Callable[[str], str]) -> list[Job]:
    """Jobs of a dry run with the config file's text rewritten (restored afterwards)."""
    path = workdir / "config.yaml"
    original = path.read_text()
    path.write_text(rewrite(original))
    try:
        result = snakemake(workdir, "--dry-run")
    finally:
        path.write_text(original)
    return parse_jobs(result.stdout + result.stderr)


def with_own_tsv(workdir: Path, model: Path, path: str) -> None:
    """The tiny config with its TSV source at ``path`` (relative to the working directory, as a user writes it)."""
    config = write_tiny_config(workdir, model)
    config["dictionary"]["sources"][1]["path"] = path
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))


def test_an_edited_dictionary_source_replans_the_dictionary_stage_only(tmp_path, tiny_bert):
    shutil.copy(FIXTURES / "tiny" / "dictionary.tsv", tmp_path / "mine.tsv")
    with_own_tsv(tmp_path, tiny_bert, "mine.tsv")
    stats = dag.dictionary_file("stats.tsv")
    snakemake(tmp_path, stats)  # the dictionary stage and the tokenizer's pinned copy
    assert parse_jobs(snakemake(tmp_path, stats, "--dry-run").stdout) == []
    with (tmp_path / "mine.tsv").open("a") as tsv:
        tsv.write("zebra\ta striped animal\n")
    later = (tmp_path / stats).stat().st_mtime + 10
    os.utime(tmp_path / "mine.tsv", (later, later))
    result = snakemake(tmp_path, stats, "--dry-run")
    assert counts(parse_jobs(result.stdout)) == {"dictionary": 1}
    assert "mine.tsv" in result.stdout  # the reason: updated input files


def test_a_missing_dictionary_source_fails_the_dry_run_naming_its_key(tmp_path, tiny_bert):
    with_own_tsv(tmp_path, tiny_bert, "missing.tsv")
    result = snakemake(tmp_path, "--dry-run", check=False)
    assert result.returncode != 0
    assert ("config: dictionary.sources[1].path: source 'tiny': missing.tsv not found (expected a file of "
            "entry<TAB>definition lines)") in result.stdout + result.stderr


def test_the_same_config_with_its_keys_sorted_plans_nothing(complete_run):
    def sorted_keys(text: str) -> str:
        resorted = yaml.safe_dump(yaml.safe_load(text), sort_keys=True)
        assert resorted.splitlines()[:3] != text.splitlines()[:3]  # the file really is written differently
        return resorted

    assert plan_with_config_text(complete_run, sorted_keys) == []


def test_a_changed_value_inside_a_mapping_param_plans_its_jobs(complete_run):
    def more_pairs(text: str) -> str:
        config = yaml.safe_load(text)
        config["entry_space"]["isotropy"]["n_pairs"] += 1
        return yaml.safe_dump(config, sort_keys=True)

    assert set(counts(plan_with_config_text(complete_run, more_pairs))) == {"isotropy", "all"}


def test_step2_learning_rate_reruns_steps_2_and_3_only(complete_run):
    def set_step2_lr(config: dict) -> None:
        config["runs"]["tiny"]["steps"][1]["lr"] *= 2

    jobs, config = plan_after(complete_run, set_step2_lr)
    trained = candidates(config, "tiny", 2) + candidates(config, "tiny", 3)
    final = final_sts_encoders(config, "tiny")
    assert counts(jobs) == {"train": len(trained), "dev_score": len(trained), "select_best": 2, "keep_best": 2,
                            "entry_space": 1,
                            "transform_space": transforms(config, "tiny", 3), "isotropy": 1,
                            "embed": len(trained) + len(final) * poolings(config),
                            "score": len(final) * poolings(config), "score_table": 1, "steps_report": 1,
                            "compare_sts": 1, "summary": 1, "all": 1}
    assert values(jobs, "train", "step") == values(jobs, "select_best", "step") == {"2", "3"}
    for rule in ("entry_space", "transform_space", "isotropy"):
        assert values(jobs, rule, "encoder") == {EncoderId.selected("tiny", 2).name}, rule
    assert values(jobs, "score", "encoder") == final
    assert values(jobs, "embed", "sentences") == {"sts", "stsb-dev"}


def add_pooling(config: dict) -> None:
    config["evaluation"]["poolings"].append(next(p for p in ("cls", "mean", "prompt")
                                                 if p not in config["evaluation"]["poolings"]))


def test_an_added_pooling_scores_only_with_it(complete_run):
    jobs, config = plan_after(complete_run, add_pooling)
    encoders = {"tiny"} | final_sts_encoders(config, "tiny")
    assert counts(jobs) == {"embed": len(encoders), "score": len(encoders), "score_table": 1, "compare_sts": 1,
                            "summary": 1, "all": 1}
    assert values(jobs, "score", "encoder") == values(jobs, "embed", "encoder") == encoders
    added = config["evaluation"]["poolings"][-1]
    assert values(jobs, "score", "pooling") == values(jobs, "embed", "pooling") == {added}


def test_scoring_earlier_steps_scores_only_their_bests(complete_run):
    jobs, config = plan_after(complete_run, lambda c: c["evaluation"].update(steps="all"))
    assert counts(jobs) == {"embed": 2 * poolings(config), "score": 2 * poolings(config), "score_table": 1,
                            "compare_sts": 1, "summary": 1, "all": 1}
    assert values(jobs, "score", "encoder") == {EncoderId.selected("tiny", k).name for k in (1, 2)}


def test_evaluation_batch_size_reruns_only_sts_scores(complete_run):
    jobs, config = plan_after(complete_run, lambda c: c["evaluation"].update(batch_size=8))
    encoders = {"tiny"} | final_sts_encoders(config, "tiny")
    assert counts(jobs) == {"embed": len(encoders) * poolings(config), "score": len(encoders) * poolings(config),
                            "score_table": 1, "compare_sts": 1, "summary": 1, "all": 1}
    assert values(jobs, "embed", "sentences") == {"sts"}


def test_an_evaluator_option_reruns_no_forward_pass(complete_run):
    """The STS aggregation changes every STS score, and no embedding: the scores read the stored vectors."""
    jobs, config = plan_after(complete_run, lambda c: c["evaluation"].update(sts_aggregation="wmean"))
    encoders = {"tiny"} | final_sts_encoders(config, "tiny")
    assert counts(jobs) == {"score": len(encoders) * poolings(config), "score_table": 1, "compare_sts": 1, "summary": 1,
                            "all": 1}


def test_each_encoder_embeds_each_sentence_set_and_pooling_once(complete_run):
    """The whole finished DAG, planned anew: the evaluation sets are encoded only by embed jobs, each (encoder,
    sentence set, pooling) once, and the jobs that score them read no model."""
    result = snakemake(complete_run, "--dry-run", "--forceall", "--printshellcmds")
    jobs = parse_jobs(result.stdout + result.stderr)
    embedded = [(w["encoder"], w["sentences"], w["pooling"]) for rule, w in jobs if rule == "embed"]
    assert len(embedded) == len(set(embedded)) > 0
    config = yaml.safe_load((complete_run / "config.yaml").read_text())
    trained = {c for step in (1, 2, 3) for c in candidates(config, "tiny", step)}
    assert {e for e, s, _ in embedded if s == "stsb-dev"} == trained | {"tiny"}
    assert {e for e, s, _ in embedded if s == "sts"} == {"tiny"} | final_sts_encoders(config, "tiny")
    inputs = input_lines(result.stdout + result.stderr)
    for rule in ("score", "dev_score"):
        assert inputs[rule] and not any("/model" in line or "resources/models" in line for line in inputs[rule])


def test_scoring_every_final_candidate_scores_no_model_twice(complete_run):
    """With ``evaluation.final: candidates`` the run's table scores every final candidate, and the comparison's
    paired tests read the winning candidate's similarities: no job embeds or scores the selected model again under
    its own name (the comparison's per-pair inputs wait for the selection: test_dag checks which they are)."""
    original = edit_config(complete_run, lambda c: c["evaluation"].update(final="candidates"))
    try:
        config = yaml.safe_load((complete_run / "config.yaml").read_text())
        result = snakemake(complete_run, "--dry-run", "--forceall", "--printshellcmds")
    finally:
        (complete_run / "config.yaml").write_text(original)
    jobs = parse_jobs(result.stdout + result.stderr)
    final = final_sts_encoders(config, "tiny")
    assert EncoderId.selected("tiny", 3).name not in final and len(final) > 1
    assert values(jobs, "score", "encoder") == {"tiny"} | final
    assert {w["encoder"] for rule, w in jobs if rule == "embed" and w["sentences"] == "sts"} == {"tiny"} | final


def input_lines(output: str) -> dict[str, list[str]]:
    """Rule -> the ``input:`` lines of its announced jobs."""
    lines: dict[str, list[str]] = {}
    rule = None
    for line in output.splitlines():
        if match := re.match(r"^(?:local)?(?:rule|checkpoint) (\w+):$", line):
            rule = match.group(1)
        elif (match := re.match(r"^\s+input: (.*)$", line)) and rule:
            lines.setdefault(rule, []).append(match.group(1))
    return lines


def test_a_second_run_reuses_the_dictionary_and_the_base_entry_space(complete_run):
    def add_run(config: dict) -> None:
        config["runs"]["tiny2"] = {**config["runs"]["tiny"], "training_pooling": "mean"}

    jobs, config = plan_after(complete_run, add_run)
    steps = len(config["runs"]["tiny2"]["steps"])
    trained = [c for step in range(1, steps + 1) for c in candidates(config, "tiny2", step)]
    assert counts(jobs) == {
        "train": len(trained), "dev_score": len(trained), "select_best": steps, "keep_best": steps,
        "entry_space": steps - 1,
        "transform_space": sum(transforms(config, "tiny2", step) for step in range(2, steps + 1)),
        "isotropy": steps - 1, "score": len(final_sts_encoders(config, "tiny2")) * poolings(config),
        "embed": len(trained) + len(final_sts_encoders(config, "tiny2")) * poolings(config),
        "score_table": 1, "steps_report": 1, "compare_sts": 1, "summary": 1, "all": 1,
    }
    assert values(jobs, "entry_space", "encoder") == {EncoderId.selected("tiny2", k).name for k in range(1, steps)}
    assert {wildcards["run"] for _, wildcards in jobs if "run" in wildcards} == {"tiny2"}


def test_a_run_started_from_another_runs_model_trains_only_itself(complete_run):
    def add_chained_run(config: dict) -> None:
        tiny = {key: value for key, value in config["runs"]["tiny"].items() if key != "model"}
        config["runs"]["chain"] = {**tiny, "start_from": "tiny"}

    jobs, config = plan_after(complete_run, add_chained_run)
    plan = plan_of(config)
    steps = plan.final_step("chain")
    builders = {plan.space_builder("chain", k).name for k in range(1, steps + 1)}
    trained = [c for step in range(1, steps + 1) for c in candidates(config, "chain", step)]
    assert builders == {EncoderId.selected("tiny", plan.final_step("tiny")).name} | {
        EncoderId.selected("chain", k).name for k in range(1, steps)}
    assert counts(jobs) == {
        "train": len(trained), "dev_score": len(trained), "select_best": steps, "keep_best": steps,
        "entry_space": len(builders),
        "transform_space": sum(transforms(config, "chain", step) for step in range(1, steps + 1)),
        "isotropy": len(builders), "score": (1 + len(final_sts_encoders(config, "chain"))) * poolings(config),
        "embed": len(trained) + (1 + len(final_sts_encoders(config, "chain"))) * poolings(config),
        "score_table": 1, "steps_report": 1, "compare_sts": 1, "summary": 1, "all": 1,
    }
    assert values(jobs, "entry_space", "encoder") == builders
    assert {wildcards["run"] for _, wildcards in jobs if "run" in wildcards} == {"chain"}


def best_candidates(workdir: Path, steps: int) -> dict[int, str]:
    """Step -> the model directory of its dev-selected candidate."""
    return {step: json.loads((workdir / dag.best_json("tiny", step)).read_text())["best"]["model"]
            for step in range(1, steps + 1)}


def add_seed(config: dict) -> None:
    config["runs"]["tiny"]["seeds"].append(max(config["runs"]["tiny"]["seeds"]) + 1)


def test_adding_a_seed_trains_only_the_new_seed_unless_a_selection_changes(complete_run, tmp_path, warm_python):
    # A real run, not a dry run: selection is a checkpoint, so a dry run cannot know which candidate wins and
    # lists every later job as pending; after each re-selection Snakemake keeps only what the outcome changed.
    workdir = copy_run(complete_run, tmp_path / "run")
    config = yaml.safe_load((workdir / "config.yaml").read_text())
    add_seed(config)
    new_seed = str(config["runs"]["tiny"]["seeds"][-1])
    steps = len(config["runs"]["tiny"]["steps"])
    before = best_candidates(workdir, steps)
    edit_config(workdir, add_seed)
    result = snakemake(workdir, python=warm_python)
    jobs = parse_jobs(result.stdout + result.stderr)
    after = best_candidates(workdir, steps)
    expected = set()
    for step, cfg in enumerate(config["runs"]["tiny"]["steps"], start=1):
        unchanged = step == 1 or before[step - 1] == after[step - 1]
        seeds = [new_seed] if unchanged else [str(seed) for seed in config["runs"]["tiny"]["seeds"]]
        expected |= {(str(step), space, seed) for space in cfg["spaces"] for seed in seeds}
    assert {(w["step"], w["space"], w["seed"]) for rule, w in jobs if rule == "train"} == expected
    assert values(jobs, "select_best", "step") == {str(step) for step in range(1, steps + 1)}
    assert not {"dictionary", "dictionary_subset"} & set(counts(jobs))
    assert "tiny" not in values(jobs, "entry_space", "encoder")


# ---------------------------------------------------------------- keeping only the selected weights


def keep_selected_only(config: dict) -> None:
    config.setdefault("selection", {})["keep_weights"] = "selected"
    config["runs"]["tiny"]["steps"] = config["runs"]["tiny"]["steps"][:2]  # two steps show it; a third costs time


@pytest.fixture(scope="module")
def selected_only_run(tmp_path_factory, tiny_run, warm_python) -> Path:
    """The tiny run trained from scratch with ``selection.keep_weights: selected``: a copy of the session's tiny DAG
    without anything its trained models wrote, so every training, selection, pruning and later step runs in one
    invocation, while the jobs of the starting model (data, dictionary, its entry space and scores) are kept."""
    workdir = copy_run(tiny_run, tmp_path_factory.mktemp("keep_selected") / "run")
    results = workdir / "results"
    for trained in [results / "tiny", *results.glob("*/tiny.step*")]:
        shutil.rmtree(trained)
    edit_config(workdir, keep_selected_only)
    result = snakemake(workdir, python=warm_python)
    jobs = parse_jobs(result.stdout + result.stderr)
    assert "train" in counts(jobs) and "dictionary" not in counts(jobs)  # the starting model's jobs did not run again
    assert "tiny" not in values(jobs, "entry_space", "encoder")
    return workdir


def test_keeping_only_selected_weights_deletes_every_candidates_and_replans_nothing(selected_only_run):
    config = yaml.safe_load((selected_only_run / "config.yaml").read_text())
    plan = plan_of(config)
    for step in range(1, plan.final_step("tiny") + 1):
        for candidate in plan.candidates("tiny", step):
            assert not (selected_only_run / dag.trained_model(candidate)).exists(), candidate
            assert (selected_only_run / dag.train_summary(candidate)).is_file(), candidate
        assert (selected_only_run / dag.best_dir("tiny", step) / "model.safetensors").is_file()
        record = json.loads((selected_only_run / dag.pruned_record("tiny", step)).read_text())
        assert len(record["removed"]) + record["already_gone"] == len(plan.candidates("tiny", step))
    # later steps were trained against spaces the selected copies built
    space = json.loads((selected_only_run / dag.space_meta(EncoderId.selected("tiny", 1), "a")).read_text())
    assert space["encoder"] == "tiny.step1"
    assert "Nothing to be done" in snakemake(selected_only_run, "--dry-run").stdout


def test_a_deleted_candidate_is_retrained_only_when_a_job_that_must_run_needs_it(selected_only_run):
    jobs, config = plan_after(selected_only_run, add_seed)  # step 1's old seeds: deleted, and not needed
    new_seed = str(config["runs"]["tiny"]["seeds"][-1])
    assert {w["seed"] for rule, w in jobs if rule == "train" and w["step"] == "1"} == {new_seed}

    def another_pooling(config: dict) -> None:
        config["evaluation"]["poolings"].append(next(p for p in ("cls", "max") if p not in config["evaluation"]
                                                     ["poolings"]))

    assert config["evaluation"]["final"] == "candidates"
    jobs, config = plan_after(selected_only_run, another_pooling)  # the final candidates' STS with it needs them
    last = plan_of(config).final_step("tiny")
    assert {(w["step"], w["space"], w["seed"]) for rule, w in jobs if rule == "train"} == {
        (str(last), c.space, str(c.seed)) for c in plan_of(config).candidates("tiny", last)}


# ---------------------------------------------------------------- interruption and the directory lock


def snakemake_command(workdir: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir),
            "--configfile", str(workdir / "config.yaml"), "--cores", "2", *args]


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory, tiny_bert) -> dict:
    """Step-1 training started by one invocation; a second invocation tried the same directory meanwhile; then
    the first was SIGKILLed (process group) mid-epoch, once the training job had saved a state."""
    workdir = tmp_path_factory.mktemp("interrupted")
    one_sentence_batches(workdir, tiny_bert)
    first = subprocess.Popen(snakemake_command(workdir, TRAIN_TARGET), start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    record_holder(workdir, first.pid)  # as bin/run records the process it execs into Snakemake
    try:
        wait_for(lambda: any((workdir / ".snakemake" / "locks").glob("*")), 120, "lock of the first invocation")
        # --rerun-incomplete as in the profiles: without it, the first run's running jobs look incomplete and
        # Snakemake stops with IncompleteFilesException before it even tries the lock.
        second = subprocess.run(snakemake_command(workdir, "--rerun-incomplete", TRAIN_TARGET), capture_output=True,
                                text=True)
        wait_for(lambda: any((workdir / "results" / ".resume").glob(f"*/{STATE_FILE}")), 300, "a saved state")
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
        wait_for(lambda: not group_alive(first.pid), 30, "end of the killed process group", poll=0.2)
    return {"workdir": workdir, "second": second, "finished_before_kill": (workdir / TRAIN_TARGET).exists()}


def test_second_invocation_is_refused_by_the_lock(interrupted):
    second = interrupted["second"]
    assert second.returncode != 0
    assert "LockException" in second.stderr and "Directory cannot be locked" in second.stderr
    assert "--unlock" in second.stderr


def test_killed_training_resumes_to_the_uninterrupted_result(interrupted, tmp_path, tiny_bert):
    workdir = interrupted["workdir"]
    assert not interrupted["finished_before_kill"], "training finished before the kill: nothing was interrupted"
    reference = tmp_path / "uninterrupted"
    reference.mkdir()
    one_sentence_batches(reference, tiny_bert)
    with open(tmp_path / "uninterrupted.out", "w") as out:  # the uninterrupted run, meanwhile (the other core)
        clean_run = subprocess.Popen(snakemake_command(reference, TRAIN_TARGET), stdout=out, stderr=subprocess.STDOUT,
                                     env=workflow_env())
    try:
        resume(workdir)
    finally:
        clean_run.wait()
    assert clean_run.returncode == 0, (tmp_path / "uninterrupted.out").read_text()[-6000:]

    resumed, clean = (json.loads((d / TRAIN_TARGET).read_text()) for d in (workdir, reference))
    assert resumed["resumed_after_steps"] and "resumed_after_steps" not in clean  # it continued mid-epoch
    log = (workdir / dag.log_file("tiny", "step1", "amp", "seed0", "train")).read_text()
    assert f"resuming training from the state saved after step {resumed['resumed_after_steps'][0]}" in log
    assert not any((workdir / "results" / ".resume").iterdir()), "the state outlived the job's outputs"
    for key in ("steps", "loss_first", "loss_last", "loss_mean", "loss_curve"):
        assert resumed[key] == clean[key], key
    model_file = Path(TRAIN_TARGET).parent / "model" / "model.safetensors"
    resumed_model, clean_model = (load_file(d / model_file) for d in (workdir, reference))
    assert resumed_model.keys() == clean_model.keys()
    for name in clean_model:
        np.testing.assert_array_equal(resumed_model[name], clean_model[name], err_msg=name)


def resume(workdir: Path) -> None:
    """What a user does after a crash: the stale lock stops Snakemake, bin/run's lock removal, then the rerun."""
    stale = subprocess.run(snakemake_command(workdir, "--rerun-incomplete", TRAIN_TARGET), capture_output=True,
                           text=True)
    assert stale.returncode != 0 and "LockException" in stale.stderr, "a SIGKILL leaves the lock behind"
    unlocked = subprocess.run([sys.executable, "-m", "defsent_plus.pipeline.locks", str(workdir)],
                              capture_output=True, text=True, check=True)  # what bin/run does before Snakemake
    assert "removed a stale Snakemake lock" in unlocked.stderr
    snakemake(workdir, "--rerun-incomplete", TRAIN_TARGET)
