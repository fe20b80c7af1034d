"""Each config writes its results, logs and benchmarks in folders of its own (config results_dir, else named after
its config file); the working directory's config.yaml keeps the original layout, so a finished run of it plans
nothing; data and pinned models are shared."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from workflow_utils import copy_run, snakemake

from defsent_plus.pipeline import dag
from defsent_plus.pipeline.dag import EncoderId, OutputFolders, place_folder_settings, results_dir_of

BASE, SELECTED, CANDIDATE = EncoderId.base("minilm"), EncoderId.selected("default", 2), EncoderId.candidate(
    "default", 3, "amp.ica", 0)
# Every path function of the default config and the path it gave before results folders existed (the layout of a
# finished default run): the same paths, so such a run plans nothing.
ORIGINAL_PATHS = [
    (dag.data_dir("senteval"), "data/senteval"),
    (dag.pinned_model("minilm"), "resources/models/minilm"),
    (dag.dictionary_file("a.parquet"), "results/dictionary/a.parquet"),
    (dag.subset_file("a1k", "queries.parquet"), "results/dictionary/subsets/a1k.queries.parquet"),
    (dag.space_meta(BASE, "a1k"), "results/entry_spaces/minilm/a1k/entry_space.json"),
    (dag.space_file(SELECTED, "a1k", "amp.ica", "json"), "results/entry_spaces/default.step2/a1k/amp.ica.json"),
    (dag.isotropy_file(BASE, "a1k"), "results/entry_spaces/minilm/a1k/isotropy.json"),
    (dag.space_plot(BASE, "a1k", "amp"), "results/entry_spaces/minilm/a1k/plots/amp.png"),
    (dag.trained_model(CANDIDATE), "results/default/step3/amp.ica/seed0/model"),
    (dag.train_summary(CANDIDATE), "results/default/step3/amp.ica/seed0/train.json"),
    (dag.train_metrics(CANDIDATE), "results/default/step3/amp.ica/seed0/metrics.tsv"),
    (dag.best_json("default", 3), "results/default/step3/best.json"),
    (dag.best_dir("default", 3), "results/default/step3/best"),
    (dag.pruned_record("default", 3), "results/default/step3/pruned.json"),
    (dag.embedding_file(SELECTED, "sts", "mean"), "results/embeddings/default.step2/sts.mean.npy"),
    (dag.mteb_dir(BASE, "mean"), "results/mteb/minilm/mean"),
    (dag.mteb_check(BASE, "mean"), "results/mteb/minilm/mean.check.tsv"),
    (dag.score_file(SELECTED, "sts", "mean"), "results/eval/default.step2/sts_mean.json"),
    (dag.dev_file(CANDIDATE, "pairs.parquet"), "results/eval/default.step3.amp.ica.seed0/dev.pairs.parquet"),
    (dag.run_file("default", "sts.tsv"), "results/default/eval/sts.tsv"),
    (dag.compare_file("summary.rst"), "results/compare/summary.rst"),
    (dag.baselines_file(BASE, "scores.tsv"), "results/baselines/minilm/scores.tsv"),
    (dag.baseline_cache(BASE, "plain"), "results/baselines/minilm/cache/plain"),
    (dag.fit_corpus_file(), "results/baselines/fit_corpus.txt"),
    (dag.log_file("train", "default", "step3"), "logs/train/default/step3.log"),
    (dag.benchmark_file("train", "default", "step3"), "benchmarks/train/default/step3.tsv"),
    (dag.work_clock_file("train", "default"), "benchmarks/train/default.work.json"),
    (dag.log_beside("benchmarks/train/default.tsv"), "logs/train/default.log"),
]


@pytest.fixture
def folders():
    """The path functions pointed at a folder by the test, and back at the default folders after it."""
    yield dag.use_results_dir
    dag.use_results_dir(dag.DEFAULT_RESULTS)


def test_the_default_configs_paths_are_the_original_layout():
    assert [new for new, _ in ORIGINAL_PATHS] == [original for _, original in ORIGINAL_PATHS]


def test_the_results_folder_is_named_after_the_config_file_or_set(tmp_path):
    configs = tmp_path / "configs"
    assert results_dir_of(None, [], tmp_path) == "results"  # no --configfile: the Snakefile's config.yaml
    assert results_dir_of(None, [tmp_path / "config.yaml"], tmp_path) == "results"
    assert results_dir_of(None, ["config.yaml"], tmp_path) == "results"
    assert results_dir_of(None, [configs / "bert-base.yaml"], tmp_path) == "results-bert-base"
    assert results_dir_of(None, [configs / "bert-base.yaml", configs / "gpu.yaml"], tmp_path) == "results-bert-base+gpu"
    assert results_dir_of(None, [configs / "config.yaml"], tmp_path) == "results-config"  # not the workdir's own
    assert results_dir_of(None, [configs / "config.yaml"], tmp_path, configs) == "results"  # the workflow's own
    assert results_dir_of("exp/mine", [configs / "bert-base.yaml"], tmp_path) == "exp/mine"


def test_logs_and_benchmarks_lie_beside_their_results_never_inside(folders):
    assert OutputFolders.of("results") == OutputFolders("results", "logs", "benchmarks")
    assert OutputFolders.of("results-bert-base") == OutputFolders("results-bert-base", "logs-bert-base",
                                                                  "benchmarks-bert-base")
    assert OutputFolders.of("exp/mine/") == OutputFolders("exp/mine", "exp/mine-logs", "exp/mine-benchmarks")
    folders("results-bert-base")
    assert dag.dictionary_file("a.parquet") == "results-bert-base/dictionary/a.parquet"
    assert dag.log_beside(dag.benchmark_file("train", "x")) == "logs-bert-base/train/x.log"
    assert dag.pinned_model("minilm") == "resources/models/minilm" and dag.data_dir("oxford") == "data/oxford"
    config = {"resume": {"area": "{results}/.resume"}, "logging": {"dir": "{logs}/trackers"}}
    place_folder_settings(config)
    assert config == {"resume": {"area": "results-bert-base/.resume"}, "logging": {"dir": "logs-bert-base/trackers"}}
    for bad in ("/abs", "../up", ""):
        with pytest.raises(ValueError, match="results_dir"):
            folders(bad)


def files_and_times(folder: Path) -> dict[str, int]:
    return {str(path.relative_to(folder)): path.stat().st_mtime_ns for path in folder.rglob("*")
            if path.is_file() and ".snakemake" not in path.parts}


def planned_outputs(dry_run: str) -> list[str]:
    """The output paths of every job a (non-quiet) dry run lists."""
    return [path.strip() for line in dry_run.splitlines() if line.strip().startswith("output:")
            for path in line.split(":", 1)[1].split(",")]


@pytest.mark.workflow
def test_another_config_in_a_finished_default_run_writes_only_its_own_folders(tiny_run, tmp_path):
    workdir = copy_run(tiny_run, tmp_path / "run")
    config = yaml.safe_load((workdir / "config.yaml").read_text())
    config["dictionary"]["lowercase"] = not config["dictionary"].get("lowercase", True)  # another dictionary
    (workdir / "mine.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    before = files_and_times(workdir)
    planned = planned_outputs(snakemake(workdir, "--configfile", str(workdir / "mine.yaml"), "--dry-run").stdout)
    assert dag.dictionary_file("a.parquet").replace("results/", "results-mine/") in planned
    assert planned and all(path.startswith(("results-mine/", "logs-mine/", "benchmarks-mine/")) for path in planned)
    snakemake(workdir, "results-mine/dictionary/a.parquet", "--configfile", str(workdir / "mine.yaml"))
    assert (workdir / "logs-mine" / "dictionary" / "dictionary.log").is_file()
    assert (workdir / "benchmarks-mine" / "dictionary" / "dictionary.tsv").is_file()
    after = files_and_times(workdir)
    assert {path: after[path] for path in before} == before  # the default run's files untouched
    assert {path.split("/")[0] for path in set(after) - set(before)} == {"results-mine", "logs-mine", "benchmarks-mine"}
    again = snakemake(workdir, "--dry-run")  # the default config: its run still complete
    assert "Nothing to be done" in again.stdout + again.stderr


@pytest.mark.parametrize("results", ["", "/abs/results", "../results", "exp/../../results"])
def test_a_results_folder_outside_the_working_directory_is_refused(folders, results):
    with pytest.raises(ValueError, match=r"results_dir: .*expected a folder inside the working directory"):
        folders(results)
    assert dag.FOLDERS.results == dag.DEFAULT_RESULTS  # the folders stay what they were
