"""The cost model's calibration: a full-size rehearsal measured at two work sizes gives each job its own start and
rate (defsent_plus.rehearsal.costs), the second size is chosen within the rehearsal's time budget
(defsent_plus.rehearsal.runner), and the baselines' rules have a work unit."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace

import pytest
import yaml
from helpers import write_toy_dataset

from defsent_plus.errors import DefSentError
from defsent_plus.pipeline import dag
from defsent_plus.pipeline.requests import MEDIAN_DEFINITION_TOKENS, Gpu
from defsent_plus.rehearsal import caps as capping
from defsent_plus.rehearsal import costs, runner
from defsent_plus.rehearsal.context import Context, built_heldout_texts, entry_scoring_seconds, sts_pairs
from defsent_plus.rehearsal.costs import (
    job_lines,
    measured_twice,
    on_own_clock,
    pooled_lines,
    thread_note,
    with_larger_size,
)
from defsent_plus.rehearsal.records import Job, executed_jobs, work_seconds
from defsent_plus.rehearsal.units import unit_of

GPU = Gpu("a GPU", 100.0, 0.1, 80)


class NoModels:
    """A projection context whose jobs have no known architecture (no GPU FLOPs): only CPU seconds matter."""

    architectures: dict = {}
    real: dict = {"runs": {}}


def real_units(context, job, units: float) -> tuple[float, float]:
    """(units, tokens a unit) of the real job matching a rehearsal job of ``units``, as its unit counts them."""
    return unit_of(job.rule).real(job, units, context)


def job(rule: str, units: float, seconds: float, real_units: float, **extra) -> dict:
    return {"rule": rule, "seconds": seconds, "max_rss_mb": 100.0, "cpu_seconds": seconds, "units": units,
            "real_units": real_units, "tokens": 0, "model": None, "real_jobs": 1.0, "run": None, "step": None,
            "outputs": [], "requested_minutes": 60.0, "requested_mb": 1000.0, "benchmark": f"benchmarks/{rule}.tsv",
            "real_scored": real_units if rule == "train" else 0.0, **extra}


def job_line(row: dict) -> tuple[float, float] | None:
    """(start seconds, seconds per unit) of one job measured at two work sizes: the line through its two
    measurements; None where it was not."""
    return pooled_lines([row])[0] if measured_twice(row) else None


def projected_seconds(rows: list[dict]) -> dict[str, float]:
    table = costs.projected(rows, NoModels(), GPU)
    return dict(zip(table["rule"], table["real_cpu_hours"] * 3600, strict=True))


def test_a_job_measured_at_two_sizes_projects_from_its_own_start_and_rate():
    start, rate, real = 20.0, 0.05, 10_000.0
    slow = job("train", 64, start + 64 * rate, real, larger_units=512, larger_seconds=start + 512 * rate)
    # an embedding job of another start, measured at one size: the common start does not move the training job
    fast = job("embed", 100, 3.0 + 100 * 0.01, 5_000.0)
    other = job("embed", 1000, 3.0 + 1000 * 0.01, 5_000.0)
    seconds = projected_seconds([slow, fast, other])
    assert seconds["train"] == pytest.approx(start + real * rate)
    assert seconds["embed"] == pytest.approx(2 * (3.0 + 5_000.0 * 0.01))
    assert job_line(slow) == pytest.approx((start, rate))


def test_a_job_that_times_its_own_work_gets_its_rate_from_that_not_from_its_wall_times():
    """The entry space's start varied by as much as its work grew (all of dataset a: 670 s projected from the wall
    times, 1,096 s measured idle): its record's seconds of encoding give the rate, the wall times the start."""
    rate, real = 0.002, 585_000.0
    wall = job("entry_space", 1_000, 9.0 + 1_000 * rate, real, larger_units=2_000, larger_seconds=7.5 + 2_000 * rate)
    timed = {**wall, "work_seconds": 1_000 * rate, "larger_work_seconds": 2_000 * rate}
    assert projected_seconds([wall])["entry_space"] < 0.5 * real * rate  # the wall times' slope: 0.0005 s a unit
    assert projected_seconds([timed])["entry_space"] == pytest.approx(8.25 + real * rate)
    assert on_own_clock({**timed, "larger_work_seconds": None}) == {**timed, "larger_work_seconds": None}


def test_a_jobs_work_clock_beside_its_benchmark_gives_its_work_seconds(tmp_path):
    """The reverse dictionary's wall time is mostly its start (imports, loading): the rehearsal's 14 and 103 queries
    grew it by 3.35 s, its work by 2.19 s, and the rate from the wall projected all of dataset a at 75 s against
    59 s measured. Its script times its work into a work clock beside its benchmark, which the sheet reads; a job
    that fails writes none."""
    from defsent_plus.pipeline.jobs import work_clock

    benchmark = dag.benchmark_file("r", "eval", "reverse_dictionary")
    rd = Job("reverse_dictionary", {"run": "r"}, benchmark=benchmark)
    assert work_seconds(tmp_path, rd) is None
    clock = tmp_path / dag.work_clock_file("r", "eval", "reverse_dictionary")
    assert clock == tmp_path / dag.work_clock_beside(benchmark)
    with pytest.raises(RuntimeError), work_clock(clock):
        raise RuntimeError("the job failed")
    assert not clock.exists()
    with work_clock(clock):
        sum(range(100_000))
    assert 0 < work_seconds(tmp_path, rd) < 5


def test_the_sts_tables_work_is_every_sts_pair_of_the_data_they_score(tmp_path, senteval_dir):
    """STS scores, a run's STS table and the comparison resample every pair (intervals, paired tests): all of dataset
    a's run took 5.7-7.6 s for the comparison where the rehearsal's capped files took 1.1-1.6 s, which the sheet
    charged as a fixed cost. Their unit is the STS pairs of the SentEval data they score: the rehearsal's capped
    stand-in, the real data's every pair; other evaluators' scores keep no unit."""
    from defsent_plus.rehearsal.standins import write_senteval

    stand_in = write_senteval(tmp_path / dag.data_dir("senteval"), senteval_dir, 5)
    capped, every = sts_pairs(stand_in), sts_pairs(senteval_dir)
    assert 0 < capped < every
    context = Context({}, {}, {}, {"sts-pairs": (every, 0.0)})
    for rule, wildcards in [("score", {"encoder": "m", "evaluator": "sts"}), ("score_table", {"run": "r"}),
                            ("compare_sts", {})]:
        scoring = Job(rule, wildcards)
        assert unit_of(scoring.rule).rehearsed(tmp_path, scoring, context) == capped
        assert real_units(context, scoring, capped) == (every, 0)
    transfer = Job("score", {"encoder": "m", "evaluator": "senteval"})
    assert unit_of(transfer.rule).rehearsed(tmp_path, transfer, context) == 0
    assert real_units(context, transfer, 0) == (0.0, 0)


def test_a_job_whose_work_did_not_grow_costs_its_measurement_at_the_larger_size():
    fixed = job("score", 0, 4.0, 0, larger_units=0, larger_seconds=6.0)
    same = job("isotropy", 100, 4.0, 1000, larger_units=100, larger_seconds=9.0)
    assert job_line(fixed) is None and job_line(same) is None
    assert projected_seconds([fixed])["score"] == pytest.approx(6.0)
    assert projected_seconds([fixed, same])["isotropy"] > 0


def test_a_rules_rate_is_pooled_over_its_jobs_so_a_job_whose_work_hardly_grew_weighs_little():
    """STS-B dev's 6 and 43 sentences against every STS sentence's 152 and 1,177: a second of noise on the small job
    would make its own line's rate several times too large."""
    rate = 0.005
    large = job("embed", 152, 6.0 + 152 * rate, 26_000, larger_units=1177, larger_seconds=6.0 + 1177 * rate)
    noisy = job("embed", 6, 5.0 + 6 * rate, 2_900, larger_units=43, larger_seconds=5.0 + 43 * rate + 1.0)
    noisy["benchmark"] = "benchmarks/embed_dev.tsv"
    alone = job_line(noisy)[1]
    lines = job_lines([large, noisy], start=0.0)
    assert alone > 5 * rate and lines[0][1] == lines[1][1] < 1.1 * rate
    assert lines[0][0] == pytest.approx(6.0, abs=0.5) and lines[1][0] == pytest.approx(5.5, abs=0.5)
    other_model = {**noisy, "model": "another"}  # another model's jobs get their own rate
    assert job_lines([large, other_model], start=0.0)[1][1] == pytest.approx(alone)


def test_each_training_method_of_a_model_gets_its_own_rate():
    """An example of SLT-FAI costs three encoder passes, of DefSent+ one: one rate pooled over both projected
    contrastive-minilm's DefSent+ steps twice and its SLT-FAI runs 20% low."""
    fast, slow = 0.015, 0.075
    rows = [job("train", 64, 7.0 + 64 * rate, 5000, larger_units=256, larger_seconds=7.0 + 256 * rate, method=method,
                benchmark=f"benchmarks/{method}.tsv") for method, rate in (("defsent_plus", fast), ("slt_fai", slow))]
    lines = job_lines(rows, start=0.0)
    assert [rate for _, rate in lines] == pytest.approx([fast, slow])


def test_a_rate_that_falls_with_the_work_is_not_negative():
    noisy = job("embed", 100, 10.0, 10_000, larger_units=800, larger_seconds=9.0)
    start, rate = job_line(noisy)
    assert rate == 0.0 and start == pytest.approx(9.5)


def test_the_second_size_is_matched_to_the_first_by_benchmark_file():
    first = [job("train", 64, 10.0, 1000), job("embed", 100, 5.0, 1000)]
    second = [{**job("train", 512, 30.0, 1000), "max_rss_mb": 900.0}]
    paired = with_larger_size(first, second)
    assert paired[0]["larger_units"] == 512 and paired[0]["larger_seconds"] == 30.0
    assert "larger_units" not in paired[1]
    table = costs.projected(paired, NoModels(), GPU).set_index("rule")
    assert table.loc["train", "sizes"] == 2 and table.loc["embed", "sizes"] == 1
    assert table.loc["train", "peak_rss_mb"] == 900.0  # the larger size's memory counts


def test_larger_caps_multiply_the_work_and_keep_the_rest():
    caps = capping.caps_for("full", [384])
    larger = capping.larger_caps(caps, 8)
    assert larger.training_examples == 8 * caps.training_examples
    assert larger.sts_pairs == 8 * capping.LARGER_STS * caps.sts_pairs
    assert larger.entries == capping.LARGER_ENTRIES * caps.entries
    # the reverse dictionary's queries grow too: at one count its start and rate cannot be told apart (minilm-full's
    # 14 queries at both sizes projected 1,403 s for a job of 225 s)
    assert larger.heldout_entries == 8 * caps.heldout_entries
    assert 2 * larger.heldout_entries < larger.entries  # most entries still train
    assert (larger.seeds, larger.epochs, larger.ica_max_iter) == (caps.seeds, caps.epochs, caps.ica_max_iter)


def test_the_second_size_is_the_largest_factor_the_time_budget_allows():
    start = 5.0
    rows = [job("embed", u, start + 0.01 * u, 0) for u in (100, 1000)]  # work beyond the start: 1 + 10 s
    fixed, work = 2 * start, 11.0

    def needs(factor: int, cores: int) -> float:  # the STS pairs grow LARGER_STS times more
        return (fixed + factor * capping.LARGER_STS * work) / cores

    largest, smallest = max(capping.LARGER_FACTORS), min(capping.LARGER_FACTORS)
    assert runner.factor_within_budget(rows, needs(largest, 1), 1) == largest
    assert runner.factor_within_budget(rows, needs(largest, 2), 2) == largest
    assert runner.factor_within_budget(rows, needs(largest, 1) - 1, 1) < largest
    assert runner.factor_within_budget(rows, needs(smallest, 1), 1) == smallest
    assert runner.factor_within_budget(rows, needs(smallest, 1) - 1, 1) is None


@pytest.fixture
def rehearsal_dir(tmp_path):
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({"rehearsal": {"size": "full", "config": "configs/x.yaml"}}))
    return tmp_path


def test_a_full_size_rehearsal_runs_again_at_the_larger_size(rehearsal_dir, monkeypatch):
    ran, prepared = [], []
    monkeypatch.setattr(runner, "snakemake", lambda workdir, *args: ran.append((workdir, args)) or 0)
    monkeypatch.setattr(runner, "larger_factor", lambda workdir, wall: 4)
    monkeypatch.setattr(runner, "prepare", lambda path, size, root, factor: prepared.append(factor)
                        or rehearsal_dir / capping.LARGER)
    assert runner.run(rehearsal_dir, "--cores", "1") == 0
    assert ran == [(rehearsal_dir, ("--cores", "1")), (rehearsal_dir / capping.LARGER, ("--cores", "1"))]
    assert prepared == [4]
    ran.clear()
    assert runner.run(rehearsal_dir, "-n") == 0 and len(ran) == 1  # a dry run: one pass
    monkeypatch.setattr(runner, "larger_factor", lambda workdir, wall: None)
    ran.clear()
    assert runner.run(rehearsal_dir) == 0 and len(ran) == 1  # past the budget: one size


def test_a_tiny_or_failed_rehearsal_runs_once(rehearsal_dir, monkeypatch):
    ran = []
    monkeypatch.setattr(runner, "snakemake", lambda workdir, *args: ran.append(workdir) or 1)
    monkeypatch.setattr(runner, "larger_factor", lambda workdir, wall: pytest.fail("no second size after a failure"))
    assert runner.run(rehearsal_dir) == 1 and ran == [rehearsal_dir]
    (rehearsal_dir / "config.yaml").write_text(yaml.safe_dump({"rehearsal": {"size": "tiny", "config": "x.yaml"}}))
    monkeypatch.setattr(runner, "snakemake", lambda workdir, *args: ran.append(workdir) or 0)
    assert runner.run(rehearsal_dir) == 0 and ran == [rehearsal_dir, rehearsal_dir]


def test_the_baselines_forward_pass_counts_its_evaluation_and_corpus_sentences(tmp_path):
    for template, sentences in (("none", 300), ("T0", 500)):
        cache = tmp_path / "results" / "baselines" / "m" / "cache" / template
        cache.mkdir(parents=True)
        (cache / "index.json").write_text(json.dumps({"eval_sentences": sentences, "corpus_sentences": 100}))
    embed = Job("baseline_embed", {"encoder": "m", "template": "T0"},
                      outputs=["results/baselines/m/cache/T0"])
    grid = Job("baseline_grid", {"encoder": "m"}, outputs=["results/baselines/m/scores.tsv"])
    assert unit_of(embed.rule).rehearsed(tmp_path, embed, None) == 600
    assert unit_of(grid.rule).rehearsed(tmp_path, grid, None) == 1000


def test_the_real_baselines_work_is_the_real_evaluation_set_per_template():
    real = {"baselines": {"encoders": {"m": "g"}, "grids": {"g": {"templates": ["none", "T0", "T1"]}}}}
    context = Context(real, {}, {}, {"baselines": (2_000, 12.0)})
    embed = Job("baseline_embed", {"encoder": "m", "template": "T0"})
    grid = Job("baseline_grid", {"encoder": "m"})
    assert real_units(context, embed, 600) == (2_000, 12.0)
    assert real_units(context, grid, 1000) == (6_000, 0)  # scored per template; no forward pass, no FLOPs


def fake_scoring_seconds(classes: int, rows: int, hidden: int, threads: int, backward: bool) -> float:
    """A stand-in for this machine's scoring time: linear in the work, halved per thread, backward three times."""
    return classes * rows * hidden * 1e-9 * (3 if backward else 1) / threads


def test_a_real_training_example_costs_its_output_layer_over_every_entry_of_the_dataset():
    """minilm-full's rehearsal ranks a capped subset's entries; the real run all of dataset a's 206,546 (the built
    sizes): the CPU projection adds to the rehearsal's seconds per example the difference of scoring a batch
    against each, as this machine takes at the job's threads."""
    from conftest import REPO

    from defsent_plus.pipeline.model_architectures import model_architecture
    from defsent_plus.rehearsal.estimate import read_config

    real = read_config(REPO / "configs" / "minilm-full.yaml")
    minilm = model_architecture(real["models"]["minilm"])
    built = {"a": (378_769, 206_546)}
    context = Context(real, {}, {"minilm": minilm}, {}, built, scoring_seconds=fake_scoring_seconds)
    train = job("train", 64, 10.0, 363_907, model="minilm", run="minilm_full", method="defsent_plus", classes=300,
                tokens=12.0, threads=2)
    batch = real["runs"]["minilm_full"]["batch_size"]
    real, capped = (fake_scoring_seconds(classes, batch, 384, 2, True) for classes in (206_546, 300))
    extra = (real - capped) / batch
    assert costs.entry_scoring_rate(train, context) == pytest.approx(extra)
    assert costs.entry_scoring_rate({**train, "threads": 1}, context) == pytest.approx(2 * extra)
    assert costs.entry_scoring_rate({**train, "classes": None}, context) == 0.0  # a summary without classes
    assert costs.entry_scoring_rate({**train, "rule": "embed"}, context) == 0.0
    projected = costs.projected([train], context, GPU)
    assert projected.loc[0, "real_cpu_hours"] == pytest.approx((363_907 * (10.0 / 64 + extra)) / 3600, rel=0.05)


def test_scoring_an_entry_space_is_measured_and_grows_with_its_entries():
    small, large = (entry_scoring_seconds(classes, 32, 64, 1, True) for classes in (100, 100_000))
    assert 0 < small < large
    assert entry_scoring_seconds(100_000, 128, 64, 1, False) > 0


def test_a_real_reverse_dictionary_query_is_encoded_three_times_in_padded_tokens_and_scored_against_every_entry(
        tmp_path, tiny_bert):
    """minilm-full's reverse dictionary: the queries the real subset stage would hold out of the built dataset (an
    entry gives one only with a definition of its own), each encoded three times (trained pooler, trained and base
    mean pooling), counted in the tokens the encoder computes as the evaluation batches them (padding included: a
    rehearsal's hundred queries pad 2.4-7x, the real 2,202 1.05-1.24x), and scored against every entry; a
    rehearsal's candidates are a capped subset's."""
    from conftest import REPO
    from transformers import AutoTokenizer

    from defsent_plus.encoders.encoding import padded_tokens
    from defsent_plus.pipeline.model_architectures import model_architecture
    from defsent_plus.rehearsal.estimate import read_config

    real = read_config(REPO / "configs" / "minilm-full.yaml")
    dataset = {f"word{i}": [f"the {i}th sense" + " of it" * (i % 7), f"another {i}th sense"] if i % 2
               else ["a shared sense"] for i in range(400)}
    write_toy_dataset(tmp_path / dag.dictionary_file("a.parquet"), dataset)
    heldout = built_heldout_texts(tmp_path, real)
    texts = heldout["a_full"]
    held = 2 * round(0.02 * 400)  # 8 headwords each for dev and test, half of them with two definitions
    n = len(texts.queries)
    assert 0 < n < held and n == pytest.approx(held / 2, abs=4)
    every = [d for senses in dataset.values() for d in senses]
    assert set(texts.queries) <= set(every) and 0 < len(texts.definitions) < len(every)
    minilm = model_architecture(real["models"]["minilm"])
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    context = Context(real, {}, {"minilm": minilm}, {}, {"a": (600, 400)}, heldout, fake_scoring_seconds,
                            tokenizer_of=lambda model: tokenizer)
    lengths = [len(ids) for ids in tokenizer(texts.queries)["input_ids"]]
    padded = padded_tokens(lengths, real["evaluation"]["batch_size"])
    assert padded > sum(lengths)  # the texts differ in length: padding counts
    rd = Job("reverse_dictionary", {"run": "minilm_full"})
    assert real_units(context, rd, 30) == (pytest.approx(3 * padded), 1.0)
    assert unit_of(rd.rule).scored(rd, context) == 3 * n
    no_tokenizer = Context(real, {}, {"minilm": minilm}, {}, {"a": (600, 400)}, heldout)
    assert real_units(no_tokenizer, rd, 30)[0] == 3 * n * MEDIAN_DEFINITION_TOKENS
    row = job("reverse_dictionary", 30, 8.0, 3 * padded, model="minilm", run="minilm_full", classes=40,
              tokens=1.0, real_scored=3 * n)
    per_query = (fake_scoring_seconds(400, 128, 384, 1, False) - fake_scoring_seconds(40, 128, 384, 1, False)) / 128
    assert costs.entry_scoring_rate(row, context) == pytest.approx(per_query)
    projected = costs.projected([row], context, GPU)
    # one size, no start measured: 8 s for 30 rehearsal tokens, then each real query's scoring
    assert projected.loc[0, "real_cpu_hours"] * 3600 == pytest.approx(3 * padded * 8.0 / 30 + 3 * n * per_query)
    forward = costs.flops_per_unit("reverse_dictionary", minilm, 1.0)
    assert costs.gpu_job(row, context, GPU)[0] == pytest.approx(3 * padded * forward + 3 * n * 2 * 384 * 400)
    # DefSent's protocol also encodes every definition, batched apart from the queries: each set pads on its own
    defsent = {**real, "runs": {"minilm_full": {**real["runs"]["minilm_full"], "method": "defsent"}}}
    with_definitions = replace(context, real=defsent)
    definitions = padded_tokens([len(ids) for ids in tokenizer(texts.definitions)["input_ids"]], 128)
    assert real_units(with_definitions, rd, 30)[0] == pytest.approx(2 * (definitions + 2 * padded))


TOY_SNAKEFILE = """
rule all:
    input: "results/r/step1/amp/seed0/train.json", "results/embeddings/r/sts.mean.json"
rule train:
    output:
        "results/{run}/step{step}/{space}/seed{seed}/model.txt",
        "results/{run}/step{step}/{space}/seed{seed}/train.json",
    log: "logs/{run}/step{step}/{space}/seed{seed}/train.log"
    benchmark: "benchmarks/{run}/step{step}/{space}/seed{seed}/train.tsv"
    threads: 2
    resources: mem_mb=123, runtime=7
    params: banner="a\\tb\\nc"
    shell: "touch {output}"
rule embed:
    output:
        "results/embeddings/{encoder}/{sentences}.{pooling}.npy",
        "results/embeddings/{encoder}/{sentences}.{pooling}.json",
    log:
        "logs/embeddings/{encoder}/{sentences}_{pooling}.log",
        work="benchmarks/embeddings/{encoder}/{sentences}_{pooling}.work.json",
    benchmark: "benchmarks/embeddings/{encoder}/{sentences}_{pooling}.tsv"
    shell: "touch {output}; echo '{{}}' > {log.work}"
"""


def test_the_sheet_reads_each_job_from_snakemakes_own_records_and_names_its_threads(tmp_path):
    """What ran comes from Snakemake's extended benchmarks (rule, wildcards, threads, resources) and its metadata
    (each job's outputs, recorded with its log beside the benchmark), not from its log text; a run with
    ``--set-threads`` projects the CPU at those threads, named in the sheet's header."""
    (tmp_path / "Snakefile").write_text(TOY_SNAKEFILE)
    run = [sys.executable, "-m", "snakemake", "--cores", "2", "--directory", str(tmp_path), "--snakefile",
           str(tmp_path / "Snakefile"), "-q"]
    subprocess.run([*run, "--benchmark-extended"], check=True, capture_output=True)
    (tmp_path / ".snakemake" / "metadata" / "tmpk2j1.a1b2c3d4").write_text("{")  # left by a killed Snakemake
    jobs = {job.rule: job for job in executed_jobs(tmp_path)}
    train, embed = jobs["train"], jobs["embed"]
    assert train.wildcards == {"run": "r", "step": "1", "space": "amp", "seed": "0"}
    assert (train.threads, train.resources["runtime"], train.resources["mem_mb"]) == (2, 7, 123)
    assert train.output("train.json") == "results/r/step1/amp/seed0/train.json"
    assert embed.wildcards == {"encoder": "r", "sentences": "sts", "pooling": "mean"} and embed.threads == 1
    assert embed.outputs == ["results/embeddings/r/sts.mean.json", "results/embeddings/r/sts.mean.npy"]
    assert thread_note(tmp_path) == "1 thread a job; train 2 threads"
    subprocess.run([*run, "--forceall"], check=True, capture_output=True)  # benchmarks without the job's record
    with pytest.raises(DefSentError, match="--benchmark-extended"):
        executed_jobs(tmp_path)


# Snakemake versions whose private .snakemake/metadata layout records.outputs_by_log reads (a JSON record per output,
# named by its path's URL-safe base64 split into @-prefixed folders where it is long, its "log" the job's logs),
# checked against snakemake/persistence.py; the test above reads a real run's records with the installed version.
METADATA_LAYOUT_VERSIONS = ("9.9.0",)


def test_the_installed_snakemake_writes_the_metadata_layout_the_records_read():
    from importlib.metadata import version

    assert version("snakemake") in METADATA_LAYOUT_VERSIONS, (
        "check defsent_plus/rehearsal/records.py (outputs_by_log) against this Snakemake's .snakemake/metadata, "
        "then add its version to METADATA_LAYOUT_VERSIONS")


@pytest.mark.workflow
def test_every_job_of_the_tiny_dag_is_read_with_its_rule_wildcards_and_outputs(tiny_run):
    """Each rule names its log and its benchmark by the same parts (dag.log_beside), so Snakemake's metadata gives
    every job its outputs."""
    jobs = executed_jobs(tiny_run)
    assert {"train", "entry_space", "embed", "score", "select_best", "score_table"} <= {job.rule for job in jobs}
    for job in jobs:
        assert job.outputs, f"{job.benchmark}: no outputs recorded with {dag.log_beside(job.benchmark)}"


TOY_RULE = """
rule toy_norms:
    output: "results/eval/{encoder}/toy_norms.json"
    log: "logs/eval/{encoder}/toy_norms.log"
    benchmark: "benchmarks/eval/{encoder}/toy_norms.tsv"
    shell: "echo '{{}}' > {output}"
"""


def test_a_new_rule_with_a_cost_needs_its_rule_its_script_and_one_job_declaration(tmp_path, monkeypatch,
                                                                                   senteval_dir):
    """A toy evaluator with a rule of its own (toy_norms: once per encoder, every STS pair) is costed from its one
    declaration in the job model: estimate's GPU-hours, the flags of requests set too small and the cost sheet's
    units reach it with no edit in requests, costs or estimate."""
    from conftest import REPO

    from defsent_plus.pipeline import job_model
    from defsent_plus.pipeline.plan import Plan
    from defsent_plus.pipeline.requests import encoding_request
    from defsent_plus.rehearsal.estimate import hours_by_rule, modelled_gpu_jobs, read_config

    def toy_request(config, plan, job, on_gpu):
        return encoding_request(config, "minilm", 1_000, on_gpu)

    toy = job_model.JobKind("toy_norms", lambda plan: [{"encoder": "minilm"}], job_model.STS_PAIRS,
                            request=toy_request, on_gpu=job_model.always)
    monkeypatch.setitem(job_model.JOB_KINDS, "toy_norms", toy)
    config = read_config(REPO / "config.yaml")
    plan = Plan(config, lambda run, step: {})
    hours = hours_by_rule(modelled_gpu_jobs(config, plan, {}))
    assert hours["toy_norms"] == pytest.approx(toy_request(config, plan, {}, True).seconds / 3600)
    (problem,) = job_model.requests_below_projection(config, plan, {"toy_norms": {"runtime": 0}}, lambda rule: True)
    assert problem.startswith("rule toy_norms: runtime=0 is below the projection") and "encoder=minilm" in problem

    (tmp_path / "Snakefile").write_text('rule all:\n    input: "results/eval/minilm/toy_norms.json"\n' + TOY_RULE)
    (tmp_path / "data").mkdir()
    (tmp_path / dag.data_dir("senteval")).symlink_to(senteval_dir)
    subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", "--directory", str(tmp_path), "--snakefile",
                    str(tmp_path / "Snakefile"), "--benchmark-extended", "-q"], check=True, capture_output=True)
    (ran,) = executed_jobs(tmp_path)
    assert (ran.rule, ran.wildcards, ran.outputs) == ("toy_norms", {"encoder": "minilm"},
                                                      ["results/eval/minilm/toy_norms.json"])
    assert unit_of(ran.rule).rehearsed(tmp_path, ran, None) == sts_pairs(senteval_dir) > 0


def test_a_jobs_output_is_found_by_its_suffix_once_and_a_missing_or_ambiguous_one_is_named():
    job = Job("embed", benchmark="benchmarks/e.tsv", outputs=["results/e.json", "results/e.npy"])
    assert job.output(".json") == "results/e.json"
    for suffix in (".parquet", "results/e"):  # none; both
        with pytest.raises(DefSentError, match="benchmarks/e.tsv"):
            job.output(suffix)
