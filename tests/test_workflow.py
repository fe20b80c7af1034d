"""The whole DAG on the tiny config: it runs, it is complete, a rerun is a no-op, models are pinned by identity
and the HTML report renders. ``tiny_run`` (tests/conftest.py) is the finished DAG; the tests that change it work on
a copy."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from workflow_utils import copy_run, planned_jobs, snakemake, validated, write_tiny_config

from defsent_plus.model_specs import SOURCE_CARD
from defsent_plus.pipeline import dag
from defsent_plus.pipeline.dag import EncoderId
from defsent_plus.pipeline.plan import Plan

pytestmark = pytest.mark.workflow
RUN, STEPS = "tiny", 3


def read(workdir: Path, path: str) -> dict:
    return json.loads((workdir / path).read_text())


def test_dictionary_stage_outputs(tiny_run):
    a = pd.read_parquet(tiny_run / dag.dictionary_file("a.parquet"))
    b = pd.read_parquet(tiny_run / dag.dictionary_file("b.parquet"))
    assert set(b["entry"]) <= set(a["entry"]) and len(a) > len(b) > 32
    stats = pd.read_csv(tiny_run / dag.dictionary_file("stats.tsv"), sep="\t")
    assert {"dataset:a", "dataset:b", "dataset:c", "source:oxford"} <= set(stats["scope"])


def test_every_step_has_a_dev_selected_best_model(tiny_run):
    for step in range(1, STEPS + 1):
        best = read(tiny_run, dag.best_json(RUN, step))
        scores = [c["dev_score"] for c in best["candidates"]]
        assert best["best"]["dev_score"] == max(scores)
        assert (tiny_run / dag.best_dir(RUN, step) / "model.safetensors").is_file()
    spaces = {c["space"] for c in read(tiny_run, dag.best_json(RUN, STEPS))["candidates"]}
    assert spaces == {"amp", "amp.ica"}


def test_every_step_trains_from_the_pinned_base_weights_on_the_previous_steps_space(tiny_run):
    builders = [EncoderId.base(RUN)] + [EncoderId.selected(RUN, k) for k in range(1, STEPS)]
    for step, builder in enumerate(builders, start=1):
        summary = read(tiny_run, dag.train_summary(EncoderId.candidate(RUN, step, "amp", 0)))
        assert summary["base_model"] == dag.pinned_model(RUN) and summary["method"] == "defsent_plus"
        assert summary["entry_space"] == dag.space_file(builder, "a", "amp")
    meta = read(tiny_run, dag.space_meta(EncoderId.selected(RUN, 1), "a"))
    # the dev-selected candidate's own directory (not the best/ copy), so re-selecting it re-runs nothing
    assert meta["encoder_path"] == read(tiny_run, dag.best_json(RUN, 1))["best"]["model"]
    step1 = np.load(tiny_run / dag.space_file(builders[0], "a", "amp"))
    step2 = np.load(tiny_run / dag.space_file(builders[1], "a", "amp"))
    assert step1.shape == step2.shape and not np.allclose(step1, step2)


def test_isotropy_and_plots_of_every_step(tiny_run):
    for encoder in [EncoderId.base(RUN)] + [EncoderId.selected(RUN, k) for k in range(1, STEPS)]:
        metrics = read(tiny_run, dag.isotropy_file(encoder, "a"))
        assert set(metrics) == {"amp", "amp.whiten", "amp.ica"}
        assert (tiny_run / dag.space_plot(encoder, "a", "amp.ica")).stat().st_size > 1000


def test_rerun_is_a_no_op(tiny_run):
    assert planned_jobs(tiny_run) == {}


def test_the_pinned_model_records_its_identity(tiny_run, tiny_bert):
    card = read(tiny_run, f"{dag.pinned_model(RUN)}/{SOURCE_CARD}")
    assert card["spec"] == str(tiny_bert) and len(card["identity"]["sha256"]) == 64


def rewrite_model(model: Path, change: tuple[str, str] | None = None) -> None:
    """Write every file of the model anew (a reinstall: same bytes, new times), optionally editing config.json."""
    for file in model.iterdir():
        data = file.read_bytes()
        if change and file.name == "config.json":
            data = data.replace(change[0].encode(), change[1].encode())
        file.unlink()
        file.write_bytes(data)


def test_reinstalling_the_model_plans_nothing_changing_it_replans_everything(tiny_run, tiny_bert, tmp_path):
    workdir, model = copy_run(tiny_run, tmp_path / "run"), tmp_path / "model"
    shutil.copytree(tiny_bert, model)
    config = write_tiny_config(workdir, model)  # the same model at another path: content, not path, identifies it
    assert planned_jobs(workdir) == {}
    rewrite_model(model)
    assert planned_jobs(workdir) == {}
    rewrite_model(model, ('"layer_norm_eps": 1e-12', '"layer_norm_eps": 1e-11'))
    jobs = planned_jobs(workdir)
    plan = Plan(validated(config), selection=lambda run, step: {})
    assert jobs["pin_model"] == jobs["dictionary"] == 1
    assert jobs["entry_space"] == jobs["select_best"] == STEPS
    assert jobs["train"] == sum(len(plan.candidates(RUN, k)) for k in range(1, STEPS + 1))


@pytest.fixture(scope="module")
def tiny_report(tiny_run, tmp_path_factory) -> tuple[Path, str]:
    """The tiny run's HTML report and Snakemake's output while writing it."""
    report = tmp_path_factory.mktemp("report") / "report.html"
    result = snakemake(tiny_run, "--report", str(report))
    return report, result.stdout + result.stderr


def test_the_html_report_renders_every_caption(tiny_report, tiny_run):
    report, output = tiny_report
    assert "ERROR/" not in output and "WARNING/" not in output, output[-3000:]
    html = report.read_text()
    assert "Undefined substitution" not in html and "skewness" in html
    # the front page is the comparison (rule summary's page): its tables, paired tests and embedded plots
    assert "What this run found" in html and "its start (tiny)" in html and "data:image/png;base64" in html


@pytest.mark.parametrize(("width", "height"), [(1400, 1000), (1280, 720)])
def test_the_reports_front_page_opens_on_the_comparison_with_every_heading_reachable(tiny_report, tmp_path, width,
                                                                                      height):
    from browser import report_layout

    layout = report_layout(tiny_report[0], width, height, tmp_path)
    heads = {head["text"]: head["top"] for head in layout["heads"]}
    assert "What this run found" in heads and layout["scrollHeight"] > layout["height"]  # taller than the window
    unreachable = {text: top for text, top in heads.items() if top < 0}
    assert not unreachable, f"headings above the scroll origin, out of reach: {unreachable}"
    first = layout["heads"][0]
    assert first["text"] == "What this run found" and 0 <= first["top"] - layout["scrollTop"] < layout["height"]


def test_the_headline_table_is_generated_from_the_comparisons_files(tiny_run):
    from defsent_plus.evaluation.headline import headline_table

    compare = tiny_run / dag.compare_file("sts.tsv")
    scores = pd.read_csv(compare, sep="\t", comment="#")
    table = headline_table(compare.parent)
    rows = {cells[1]: cells[2:-1] for line in table.splitlines()[2:] if (cells := [c.strip() for c in line.split("|")])}
    selected = scores[scores["model"] == f"{RUN}, dev-selected"].iloc[0]
    assert rows[f"{RUN}, dev-selected"][-1] == f"{float(selected['avg']):.2f}"
    uncertainty = pd.read_csv(compare.parent / "sts_uncertainty.tsv", sep="\t", comment="#")
    paired = uncertainty[(uncertainty["kind"] == "paired") & (uncertainty["task"] == "avg")].iloc[0]
    label = next(key for key in rows if key.startswith(paired["model"]))
    assert rows[label][-1].startswith(f"{paired['value']:+.2f} [".replace("-", "−"))


def test_sts_tables_say_how_sts12_16_were_aggregated(tiny_run):
    table = pd.read_csv(tiny_run / dag.run_file(RUN, "sts.tsv"), sep="\t")
    assert set(table["sts_aggregation"]) == {"all"}
    assert "aggregated as 'all'" in (tiny_run / dag.run_file(RUN, "sts.md")).read_text()


def test_every_row_of_the_comparison_and_the_summary_says_which_seeds_it_comes_from(tiny_run):
    table = pd.read_csv(tiny_run / dag.compare_file("sts.tsv"), sep="\t", comment="#", dtype=str,
                        keep_default_na=False)
    seeds = dict(zip(table["model"], table["seeds"], strict=True))
    assert seeds == {"base (tiny)": "–", f"{RUN} (step {STEPS} amp), mean ± std": "2",
                     f"{RUN} (step {STEPS} amp.ica), mean ± std": "2", f"{RUN}, dev-selected": "1"}
    summary = (tiny_run / dag.compare_file("summary.md")).read_text()
    header = next(line for line in summary.splitlines() if line.startswith("| model "))
    column = [cell.strip() for cell in header.split("|")].index("seeds")
    rows = [line.split("|") for line in summary.splitlines() if line.startswith(("| base", f"| {RUN}"))]
    assert {row[1].strip(): row[column].strip() for row in rows[:len(seeds)]} == seeds
    assert "`seeds`: the training seeds behind a row" in summary


def test_evaluation_data_is_acquired_verified_and_a_moved_mirror_replans_nothing(tiny_run, tmp_path):
    record = read(tiny_run, "data/senteval/ACQUIRED.json")
    assert record["verified"] and record["source"].startswith("mirror") and record["files"] == 52
    config = yaml.safe_load((tiny_run / "config.yaml").read_text())
    moved = tmp_path / "moved_senteval"
    shutil.copytree(config["data"]["senteval"]["mirror"], moved)
    config["data"]["senteval"]["mirror"] = str(moved)
    workdir = copy_run(tiny_run, tmp_path / "work")
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    assert planned_jobs(workdir) == {}
    config["data"]["senteval"]["checksums"] = None  # another identity: acquire again, re-score, re-select
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    planned = planned_jobs(workdir)
    assert planned["acquire_data"] == 1 and planned["score"] >= 1 and planned["select_best"] == STEPS
    assert "dictionary" not in planned and planned["entry_space"] == STEPS - 1  # step 1's space needs no dev score


def test_every_score_file_records_what_its_numbers_were_computed_with(tiny_run):
    """Library versions, the project's commit, device, precision and threads: in every score of the tiny run (STS,
    STS-B dev), read from its stored embeddings' record, and in the tables' footers."""
    scores = sorted((tiny_run / "results" / "eval").glob("*/*.json"))
    assert len(scores) > 5
    for path in scores:
        record = json.loads(path.read_text())["embeddings"]["provenance"]
        assert {"torch", "transformers", "scikit-learn", "project"} <= set(record), path
        assert record["device"] == "cpu" and record["precision"] == "fp32" and record["threads"] >= 1, path
        trained = path.parent.name != "tiny"  # every encoder but the starting model was trained by the run
        assert ("seeds" in record) == trained and (not trained or record["seeds"]["training"] in (0, 1)), path
    footer = (tiny_run / dag.run_file(RUN, "sts.md")).read_text().rsplit("Computed with:", 1)[1]
    assert "torch" in footer and "transformers" in footer and "precision fp32" in footer
