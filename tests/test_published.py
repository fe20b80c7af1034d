"""A run against a paper's published numbers: which of our rows are compared (one space's final-step seeds, or the
dev-selected model), the shipped configs' published blocks, and the comparison table of a config that has them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import REPO
from workflow_utils import validated

from defsent_plus.errors import DefSentError
from defsent_plus.evaluation.comparison import pairs_by_run, published_rows, write_sts_comparison
from defsent_plus.evaluation.report import write_score_tables
from defsent_plus.io import write_json
from defsent_plus.pipeline.dag import EncoderId, best_json, canonical, score_file, trained_model
from defsent_plus.pipeline.plan import Plan

TASKS = ("STS12", "STS13", "STS14", "STS15", "STS16", "STSB", "SICKR")
PUBLISHED = {"STS12": 70.0, "STSB": 80.0, "avg": 75.0}
SHIPPED = sorted(path for path in (REPO / "configs").glob("*.yaml") if "published" in yaml.safe_load(path.read_text()))


def seed_row(space: str, seed: int, score: float, pooling: str = "cls", selected: bool = False) -> dict:
    """One final-step candidate's row of a run's sts.tsv (every task scores ``score`` + task number / 10)."""
    scores = {task: score + k / 10 for k, task in enumerate(TASKS)}
    return {"model": f"step 3 {space} seed {seed}", "pooling": pooling, **scores, "avg": np.mean(list(scores.values())),
            "dev_selected": selected, "group": f"step 3 {space}", "step": 3}


def two_space_table(tmp_path: Path) -> pd.DataFrame:
    """A run's sts.tsv as written and read back: its starting model, three AMP seeds (about 78) and three AMP-ICA
    seeds (about 70; seed 1 dev-selected), in two poolings (mean rows 10 points lower)."""
    rows = []
    for pooling, offset in (("cls", 0.0), ("mean", -10.0)):
        rows.append({**seed_row("base", 0, 60.0 + offset, pooling), "model": "base (m)", "group": "", "step": 0})
        rows += [seed_row("amp", seed, 78.0 + seed + offset, pooling) for seed in range(3)]
        rows += [seed_row("amp.ica", seed, 70.0 - seed + offset, pooling, selected=seed == 1) for seed in range(3)]
    pd.DataFrame(rows).to_csv(tmp_path / "sts.tsv", sep="\t", index=False)
    return pd.read_csv(tmp_path / "sts.tsv", sep="\t")


def difference_cells(rows: list[dict]) -> dict[str, float]:
    """The ``ours − published`` row's differences, by task."""
    cells = next(row for row in rows if row["row"] == "ours − published")
    return {task: float(cells[task].split(" ")[0]) for task in PUBLISHED}


def test_seeds_are_one_spaces_mean_minus_published(tmp_path):
    table = two_space_table(tmp_path)
    spec = {"source": "paper, AMP row", "compare_with": "seeds", "space": "amp", "pooling": "cls",
            "scores": PUBLISHED}
    rows = published_rows("r", spec, table, None)
    amp = table[(table["group"] == "step 3 amp") & (table["pooling"] == "cls")]
    assert len(amp) == 3
    expected = {task: round(amp[task].mean() - value, 2) for task, value in PUBLISHED.items()}
    assert difference_cells(rows) == pytest.approx(expected, abs=1e-9)
    assert rows[1]["row"] == "ours: step 3 amp, mean of 3 seeds (cls)"
    assert rows[2]["avg"].endswith(f"(± {amp['avg'].std(ddof=0):.2f} (std, 3 seeds))")


def test_without_a_space_the_seeds_are_the_dev_selected_models_space(tmp_path):
    table = two_space_table(tmp_path)
    spec = {"source": "paper", "compare_with": "seeds", "pooling": "mean", "scores": PUBLISHED}
    rows = published_rows("r", spec, table, None)
    ica = table[(table["group"] == "step 3 amp.ica") & (table["pooling"] == "mean")]
    assert difference_cells(rows) == pytest.approx({t: round(ica[t].mean() - v, 2) for t, v in PUBLISHED.items()},
                                                   abs=1e-9)
    assert rows[1]["row"] == "ours: step 3 amp.ica, mean of 3 seeds (mean)"


@pytest.mark.parametrize(("spec", "key"), [({"space": "ac"}, "published.r.space"),
                                           ({"pooling": "prompt"}, "published.r.pooling")])
def test_rows_that_are_not_in_the_table_name_the_config_key(tmp_path, spec, key):
    table = two_space_table(tmp_path)
    with pytest.raises(DefSentError, match=f"config: {key}"):
        published_rows("r", {"source": "p", "compare_with": "seeds", "scores": PUBLISHED, **spec}, table, None)


def test_seeds_without_final_step_seeds_name_compare_with(tmp_path):
    table = two_space_table(tmp_path).assign(group="")  # evaluation.final: best has no seed groups
    with pytest.raises(DefSentError, match="config: published.r.compare_with"):
        published_rows("r", {"source": "p", "compare_with": "seeds", "scores": PUBLISHED}, table, None)


def shipped_plan(path: Path) -> Plan:
    """A shipped config, validated, planned (no selection is asked)."""
    return Plan(validated(yaml.safe_load(path.read_text())), lambda run, step: pytest.fail("no selection expected"))


@pytest.mark.parametrize("path", SHIPPED, ids=lambda path: path.stem)
def test_every_shipped_published_block_names_a_run_pooling_and_space(path):
    plan = shipped_plan(path)  # Plan checks every published block (Plan.check_published)
    for run, spec in plan.config["published"].items():
        poolings = plan.config["evaluation"]["poolings"]
        assert run in plan.config["runs"] and spec.get("pooling", poolings[0]) in poolings
        spaces = {c.space for c in plan.candidates(run, plan.final_step(run))}
        if spec["compare_with"] == "seeds" and len(spaces) > 1:  # a paper's row is one space's seeds
            assert spec.get("space") in spaces, f"{path.name}: published.{run}.space"
        assert set(spec["scores"]) == {*TASKS, "avg"}
        assert np.mean([spec["scores"][task] for task in TASKS]) == pytest.approx(spec["scores"]["avg"], abs=0.011)


def test_the_paper_scale_configs_compare_one_spaces_seeds():
    spaces = {name: yaml.safe_load((REPO / "configs" / f"{name}.yaml").read_text())["published"]
              for name in ("bert-base", "bert-large", "roberta-base", "roberta-large")}
    chosen = {name: [(spec["compare_with"], spec["space"]) for spec in blocks.values()]
              for name, blocks in spaces.items()}
    assert chosen == {"bert-base": [("seeds", "amp")], "bert-large": [("seeds", "amp")],
                      "roberta-base": [("seeds", "ac")], "roberta-large": [("seeds", "ac")]}


@pytest.mark.parametrize(("change", "key"), [({"space": "amp.whiten"}, "space"), ({"pooling": "max"}, "pooling")])
def test_the_plan_names_the_wrong_published_key(change, key):
    config = yaml.safe_load((REPO / "configs" / "bert-base.yaml").read_text())
    config["published"]["bert_base"].update(change)
    with pytest.raises(DefSentError, match=f"config: published.bert_base.{key}"):
        Plan(validated(config), lambda run, step: {})
    config["published"]["bert_base"] = {"source": "p", "compare_with": "seeds", "scores": PUBLISHED}
    config["evaluation"]["final"] = "best"
    with pytest.raises(DefSentError, match="config: published.bert_base.compare_with"):
        Plan(validated(config), lambda run, step: {})


# ------------------------------------------------------------- config → Plan → rule compare_sts → the table

RUN, LAST = "bert_base", 3
SELECTED = EncoderId.candidate(RUN, LAST, "amp.ica", 4)  # the dev-selected model: an ICA seed, not an AMP one


def candidate_score(encoder: EncoderId, pooling: str) -> float:
    """Synthetic scores: AMP seeds about 78, ICA seeds about 70, earlier models 65; mean pooling 5 lower."""
    base = {"amp": 78.0, "amp.ica": 70.0}.get(encoder.space, 65.0) if encoder.kind == "candidate" else 65.0
    return base + 0.1 * (encoder.seed or 0) - (5.0 if pooling == "mean" else 0.0)


def selection(run: str, step: int) -> dict:
    """Each step's best.json record: SELECTED at the last step, an AMP seed before."""
    chosen = SELECTED if int(step) == LAST else EncoderId.candidate(run, step, "amp", 0)
    return {"space": chosen.space, "seed": chosen.seed, "model": trained_model(chosen)}


def write_run_table(plan: Plan) -> None:
    """The run's sts.tsv as rule ``score_table`` writes it, from synthetic score files at the plan's paths."""
    poolings = plan.config["evaluation"]["poolings"]
    for model in plan.evaluated(RUN):
        for pooling in poolings:
            score = candidate_score(model.encoder, pooling)
            scores = {task: score + k / 10 for k, task in enumerate(TASKS)}
            write_json(score_file(model.encoder, "sts", pooling), {
                "model": model.label, "model_dir": plan.model_dir(model.encoder), "pooling": pooling,
                "scores": {**scores, "avg": float(np.mean(list(scores.values())))}, "sts_aggregation": "all"})
    write_json(best_json(RUN, LAST), {"best": {"model": trained_model(SELECTED)}})
    write_score_tables(rows=plan.score_rows(plan.evaluated(RUN), "sts"), best_json=best_json(RUN, LAST),
                       out_tsv=plan.sts_comparison()[0]["sts"], out_md="run_sts.md", title="t")


def write_pairs(paths: list[str]) -> None:
    """Synthetic per-pair similarities at every path the comparison reads (its intervals and paired tests)."""
    rng = np.random.default_rng(0)
    gold = {task: rng.uniform(0, 5, 50) for task in TASKS}
    for k, path in enumerate(dict.fromkeys(paths)):
        noise = np.random.default_rng(k + 1)
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        pd.concat([pd.DataFrame({"task": task, "subset": task, "pair": np.arange(50), "gold": gold[task],
                                 "similarity": gold[task] + noise.normal(0, 1.0, 50)}) for task in TASKS]
                  ).to_parquet(path)


def published_table(text: str) -> dict[str, list[str]]:
    """The 'Against the published numbers' table of a comparison page: row label -> cells (STS12, ..., Avg.)."""
    section = text[text.index("## Against the published numbers"):]
    return {cells[2]: cells[3:-1] for line in section.splitlines() if line.startswith("| ")
            and len(cells := [c.strip() for c in line.split("|")]) > 4}


def test_a_config_with_published_numbers_shows_ours_minus_published(tmp_path, monkeypatch):
    """bert-base.yaml through the Plan and rule compare_sts's params (rules/comparison.smk, workflow/scripts/
    compare.py): the table shows the AMP seeds' mean − 000's AMP row, though the dev-selected model is an ICA seed."""
    monkeypatch.chdir(tmp_path)
    config = validated(yaml.safe_load((REPO / "configs" / "bert-base.yaml").read_text()))
    plan = Plan(config, selection)
    write_run_table(plan)
    write_pairs(plan.comparison_pairs())
    runs, poolings = canonical(plan.sts_comparison()), config["evaluation"]["poolings"]
    write_sts_comparison(runs=runs, out_tsv="sts.tsv", out_md="sts.md",
                         pairs=pairs_by_run(runs, poolings, plan.comparison_pairs()),
                         bootstrap=canonical(config["evaluation"]["bootstrap"]),
                         published=canonical(config["published"]))
    table = published_table(Path("sts.md").read_text())
    published = config["published"][RUN]["scores"]
    amp = [candidate_score(EncoderId.candidate(RUN, LAST, "amp", seed), "cls") for seed in config["runs"][RUN]["seeds"]]
    ours = {task: np.mean(amp) + k / 10 for k, task in enumerate(TASKS)}
    ours["avg"] = np.mean([ours[task] for task in TASKS])
    order = [*TASKS, "avg"]
    differences = table["ours − published"]
    assert [cell.split(" ")[0] for cell in differences] == [f"{ours[t] - published[t]:+.2f}" for t in order]
    assert all("(std, 10 seeds)" in cell for cell in differences)
    assert table["ours: step 3 amp, mean of 10 seeds (cls)"] == [f"{ours[task]:.2f}" for task in order]
