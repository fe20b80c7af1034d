"""results/ holds no timing, so two runs of a DAG compare byte for byte (bench/reproducible_results.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from reproducible_results import differences, timing_fields  # noqa: E402

from defsent_plus.pipeline import dag  # noqa: E402


def test_the_tiny_dags_results_hold_no_timing_and_its_work_clocks_do(tiny_run):
    assert timing_fields(tiny_run / "results") == []
    trained = sorted((tiny_run / "results").glob("tiny/step*/*/seed*/train.json"))
    spaces = sorted((tiny_run / "results" / "entry_spaces").glob("*/*/entry_space.json"))
    assert trained and spaces
    for summary in trained:
        candidate = summary.parent.relative_to(tiny_run / "results").parts
        clock = json.loads((tiny_run / dag.work_clock_file(*candidate, "train")).read_text())
        assert clock["seconds"] > 0 and clock["sentences_per_second"] > 0
    for record in spaces:
        encoder, dataset = record.parent.relative_to(tiny_run / "results" / "entry_spaces").parts
        clock = json.loads((tiny_run / dag.work_clock_file("entry_spaces", encoder, dataset, "entry_space"))
                           .read_text())
        assert clock["seconds"] > 0 and clock["definitions_per_second"] > 0


def test_timing_fields_are_found_at_any_depth_and_in_tsv_headers_not_in_vocabularies(tmp_path):
    (tmp_path / "model").mkdir()
    (tmp_path / "a.json").write_text(json.dumps({"scores": {"avg": 1.0}, "runs": [{"train": {"seconds": 2.0}}]}))
    (tmp_path / "b.tsv").write_text("# banner\nstep\tloss\texamples_per_second\n1\t0.5\t10\n")
    (tmp_path / "model" / "tokenizer.json").write_text(json.dumps({"model": {"vocab": {"seconds": 7}}}))
    (tmp_path / "c.json").write_text(json.dumps({"evaluation_time": 3.0, "date": 1.0, "entries": 5}))
    (tmp_path / "d.json").write_text(json.dumps({"evaluation_time": None, "date": None}))  # MTEB's, nulled
    assert timing_fields(tmp_path) == ["a.json: seconds", "b.tsv: examples_per_second", "c.json: date",
                                       "c.json: evaluation_time"]


def test_differences_name_a_changed_file_and_one_that_only_one_run_wrote(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for root in (a, b):
        (root / "x").mkdir(parents=True)
        (root / "x" / "same.npy").write_bytes(b"\x00\x01")
    (a / "changed.json").write_text('{"k": 1}')
    (b / "changed.json").write_text('{"k": 2}')
    (b / "x" / "only_b.tsv").write_text("")
    assert differences(a, b) == ["changed.json", "x/only_b.tsv"]
    assert differences(a, a) == []
