"""bench/gpu_config_costs.py (issue #30): every shipped config that trains is projected by the cost model, and the
smoke mode trains each method's own task through the workflow's loop, one row per run, on CPU."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
import yaml

REPO = Path(__file__).resolve().parents[1]
PAPER_CONFIGS = {"bert-base", "bert-large", "roberta-base", "roberta-large", "defsent-bert-base", "defsent-bert-large",
                 "defsent-roberta-base", "defsent-roberta-large", "simcse-bert-base", "slt-fai-bert-base",
                 "slt-fai-consert-bert-base", "contrastive-minilm"}
SMOKE_CONFIGS = "roberta-base,slt-fai-consert-bert-base,simcse-bert-base,baselines-full"


@pytest.fixture(scope="module")
def costs():
    import sys

    sys.path.insert(0, str(REPO / "bench"))
    try:
        import gpu_config_costs

        yield gpu_config_costs
    finally:
        sys.path.remove(str(REPO / "bench"))


@pytest.fixture(scope="module")
def carry(costs, tmp_path_factory):
    return costs.smoke_carry(tmp_path_factory.mktemp("carry"))


def positive(value) -> bool:
    return isinstance(value, float | int) and math.isfinite(value) and value > 0


def test_every_training_config_has_its_runs_projected(costs, carry):
    paths = costs.training_configs(None)
    assert PAPER_CONFIGS <= {p.stem for p in paths}
    assert [p.stem for p in paths][:5] == costs.PRIORITY[:5]  # the most valuable rows first
    for path in paths:
        specs = costs.run_specs(path, carry)
        assert [s.run for s in specs] == list(yaml.safe_load(path.read_text())["runs"]), path.stem
        for spec in specs:
            assert positive(spec.projection["projected_ms"]) and positive(spec.projection["projected_gb"]), spec.run
            assert spec.cfg.select_every == 0 and spec.cfg.batch_size > 0
    large = {s.run: s for s in costs.run_specs(REPO / "configs" / "defsent-bert-large.yaml", carry)}
    assert large["defsent_cls"].classes == 30522 and large["defsent_cls"].architecture.config["num_hidden_layers"] == 24


def test_smoke_measures_every_run_of_the_chosen_configs(costs, carry, tmp_path):
    out = tmp_path / "costs.json"
    assert costs.main(["--smoke", "--carry", str(carry), "--configs", SMOKE_CONFIGS, "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    rows = {(row["config"], row["run"]): row for row in result["rows"]}
    expected = {(name, run) for name in SMOKE_CONFIGS.split(",")
                for run in yaml.safe_load((REPO / "configs" / f"{name}.yaml").read_text())["runs"]}
    assert set(rows) == expected and not result["skipped"]
    assert {row["method"] for row in rows.values()} == {"defsent_plus", "defsent", "simcse", "slt_fai"}
    for row in rows.values():
        assert row["steps"] == 2 and all(positive(row[k]) for k in ("ms_per_step", "mean_tokens", "projected_ms",
                                                                    "time_ratio", "projected_gb")), row
        assert math.isfinite(row["loss_last"]) and row["peak_allocated_gb"] is None  # no GPU memory on CPU
    chained = rows["simcse-bert-base", "simcse_defsent_plus"]  # DefSent+ BERT-base, as in the ConSERT chain
    assert chained["same_as"] == "slt-fai-consert-bert-base/slt_fai_defsent_plus"
    assert rows["simcse-bert-base", "simcse"]["batch"] == 64 and rows["simcse-bert-base", "simcse"]["max_length"] == 32


@pytest.mark.skipif(torch.cuda.is_available(), reason="the refusal is for machines without CUDA")
def test_refuses_cpu_without_smoke(costs, capsys):
    assert costs.main(["--configs", "bert-base"]) == 2
    assert "--smoke" in capsys.readouterr().err


# bench/gpu_config_costs.py's output on one H100, 20 warm-up + 100 timed steps (docs/results.md, "GPU measurements")
H100_REPEAT = REPO / "tests" / "fixtures" / "gpu" / "2026-11-26-h100-config-costs-repeat.json"


def test_every_h100_measured_step_and_peak_fits_its_projection_with_the_margin(costs):
    """The H100 rows (docs/results.md, "GPU measurements") against today's projection with the H200 defaults of
    ``costs.gpu``: ms a step and peak GPU memory within ``costs.margin`` (SLT-FAI's step was 4.37 × its one-pass
    projection before its declaration counted its three encoder passes), and no memory under-projected by more
    than the 15% that allocator blocks and the batch's copies add beside the model (SLT-FAI's was 34%)."""
    margin = 3  # config.yaml's costs.margin (the schema's default)
    result = json.loads(H100_REPEAT.read_text())
    assert result["environment"]["gpu"].startswith("NVIDIA H100") and result["environment"]["timed_steps"] == 100
    specs = {}
    for row in result["rows"]:
        if row["config"] not in specs:  # none of these configs has a package model: no carry needed
            specs[row["config"]] = {s.run: s for s in costs.run_specs(REPO / "configs" / f"{row['config']}.yaml",
                                                                      REPO / "no-carry")}
        projection = specs[row["config"]][row["run"]].projection
        assert projection["gpu"] == "NVIDIA H200"
        where = f"{row['config']}/{row['run']}"
        assert row["ms_per_step"] <= margin * projection["projected_ms"], where
        assert row["peak_allocated_gb"] <= 1.15 * projection["projected_gb"], where
    assert {row["method"] for row in result["rows"]} == {"defsent", "defsent_plus", "simcse", "slt_fai"}
