"""Using the encoder: prompt pooling, reverse dictionary, export round-trip, CLI, report tables."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import write_toy_dataset

from defsent_plus.cli import main as cli
from defsent_plus.dictionary.table import definition_pairs
from defsent_plus.encoders.encoding import PROMPT_TEMPLATE
from defsent_plus.encoders.models import load_encoder
from defsent_plus.evaluation.report import scores_table, seed_summary, write_score_tables
from defsent_plus.evaluation.reverse_dictionary import ranking_metrics, ranks_of_targets
from defsent_plus.io import write_json, write_npy
from defsent_plus.methods.defsent_plus.reverse_dictionary import ReverseDictionary, entry_logits
from defsent_plus.names import TRAINING_CARD


def test_prompt_pooling_takes_the_mask_tokens_hidden_state(model_dir):
    encoder = load_encoder(model_dir)
    encoder.model.eval()
    sentence = "a long necked animal"
    pooled = encoder.encode([sentence, "dog"], "prompt")[0]
    text = PROMPT_TEMPLATE.format(sentence=sentence, mask=encoder.tokenizer.mask_token)
    ids = encoder.tokenizer(text, return_tensors="pt")
    position = ids["input_ids"][0].tolist().index(encoder.tokenizer.mask_token_id)
    assert position > 3  # the mask sits after the sentence, not at [CLS]
    with torch.no_grad():
        expected = encoder.model(**ids).last_hidden_state[0, position].numpy()
    np.testing.assert_allclose(pooled, expected, atol=1e-5)


def test_encoder_encodes_one_pooling_or_several_in_one_pass(model_dir):
    encoder = load_encoder(model_dir)
    sentences = ["a long necked animal", "dog", "the dark time of day"]
    forward_passes = []
    encoder.model.register_forward_hook(lambda module, args, output: forward_passes.append(len(output[0])))
    both = encoder.encode(sentences, ["cls", "mean"], batch_size=8)
    assert forward_passes == [3]  # cls and mean share the one batch's forward pass
    assert set(both) == {"cls", "mean"} and both["cls"].shape == (3, encoder.hidden_size)
    for pooling in ("cls", "mean"):
        np.testing.assert_array_equal(encoder.encode(sentences, pooling, batch_size=8), both[pooling])
    assert not np.allclose(both["cls"], both["mean"])


def test_ranking_metrics_on_known_ranks():
    logits = np.array([[5.0, 1, 0], [1, 5, 6], [3, 2, 1], [0, 0, 1]])
    ranks = ranks_of_targets(logits, np.array([0, 1, 2, 0]))
    assert ranks.tolist() == [1, 2, 3, 3]  # a tie counts against the target
    metrics = ranking_metrics(np.array([1, 2, 4, 20]))
    assert metrics["mrr"] == pytest.approx((1 + 0.5 + 0.25 + 0.05) / 4)
    assert (metrics["top1"], metrics["top3"], metrics["top10"]) == (25.0, 50.0, 75.0)


def test_reverse_dictionary_finds_the_entry_its_space_points_to(tmp_path, tiny_bert):
    dataset = write_toy_dataset(tmp_path / "toy.parquet")
    encoder = load_encoder(tiny_bert)
    from defsent_plus.dictionary.table import read_dataset

    frame = read_dataset(dataset)
    queries = [defs[0] for defs in frame["definitions"]]
    h = entry_logits(encoder, torch.eye(encoder.hidden_size), queries, "cls")  # the projected queries themselves
    space = h / np.linalg.norm(h, axis=1, keepdims=True)  # q_i · e_j = |q_i| cos(q_i, q_j): largest at j = i
    write_npy(tmp_path / "space.npy", space.astype(np.float32))
    model = tmp_path / "model"
    encoder.save(model)
    write_json(model / TRAINING_CARD, {"dataset": str(dataset), "entry_space": str(tmp_path / "space.npy"),
                                       "pooling": "cls"})
    rd = ReverseDictionary(model)
    top = rd.top(rd.scores(queries), top_k=3)
    assert [ranked[0][0] for ranked in top] == list(frame["entry"])
    listed = frame[frame["entry"].isin(["dog", "lion"])]
    texts, local_ids = definition_pairs(listed.reset_index(drop=True))
    ranks = ranks_of_targets(rd.scores(texts), listed.index.to_numpy()[local_ids])
    assert ranking_metrics(ranks)["queries"] == 4


@pytest.mark.parametrize(("family", "pooling"), [("tiny_bert", "cls"), ("tiny_bert", "mean"), ("tiny_bert", "max"),
                                                ("tiny_bert", "prompt"), ("tiny_roberta", "prompt"),
                                                ("tiny_roberta", "cls")])
def test_sentence_transformers_export_gives_the_same_vectors(tmp_path, request, family, pooling):
    """Every pooling the workflow evaluates round-trips: ``SentenceTransformer(path).encode`` equals the workflow's
    vectors; prompt pooling through its own modules, loaded from the exported file (not from defsent_plus), with
    each family's mask token."""
    import json

    from sentence_transformers import SentenceTransformer

    model_dir = request.getfixturevalue(family)
    encoder = load_encoder(model_dir)
    sentences = ["a long necked animal", "the dog can run fast in the city of new york", "red"]
    assert cli(["export", "--model", str(model_dir), "--pooling", pooling, "-o", str(tmp_path / pooling)]) == 0
    exported = tmp_path / pooling / "sentence-transformers"
    st = SentenceTransformer(str(exported), device="cpu", trust_remote_code=pooling == "prompt")
    np.testing.assert_allclose(st.encode(sentences, convert_to_numpy=True), encoder.encode(sentences, pooling),
                               atol=1e-5)
    assert (tmp_path / pooling / "huggingface" / "model.safetensors").is_file()
    types = [module["type"] for module in json.loads((exported / "modules.json").read_text())]
    if pooling == "prompt":
        assert types == ["defsent_prompt.PromptTransformer", "defsent_prompt.MaskPooling"]
        assert (exported / "defsent_prompt.py").is_file()
    else:
        assert all(t.startswith("sentence_transformers.") for t in types)
    assert (exported / "README.md").read_text().startswith("---\nlibrary_name: sentence-transformers\n")


def test_the_exported_prompt_module_uses_the_workflows_template():
    from defsent_plus.encoders import st_prompt
    from defsent_plus.names import PROMPT_TEMPLATE

    assert st_prompt.TEMPLATE == PROMPT_TEMPLATE  # the exported file may not import defsent_plus


def fake_run(tmp_path: Path, tiny_bert: Path) -> Path:
    """results/r/step2/best: a copy of candidate step2/amp/seed1 with its training card, train.json, best.json, and
    the run's STS table (the dev-selected row for mean pooling) and reverse-dictionary table."""
    import pandas as pd

    from defsent_plus.io import write_tsv

    run = tmp_path / "results" / "r"
    candidate = run / "step2" / "amp" / "seed1"
    best = run / "step2" / "best"
    load_encoder(tiny_bert).save(best)
    write_json(best / TRAINING_CARD, {"method": "defsent_plus", "paper": "000 (DefSent+)", "base_model": "hub:tiny",
                                      "dataset": "a1k.parquet", "classes": 1000, "pooling": "cls", "seed": 1,
                                      "deviations": ["definitions are truncated at max_length"],
                                      "provenance": {"project": "abc123", "torch": "2.13.0"}})
    write_json(candidate / "train.json", {"config": {"lr": 1e-05, "batch_size": 32}, "examples": 900, "steps": 29,
                                          "loss_first": 6.9, "loss_last": 2.5})
    write_json(run / "step2" / "best.json", {"best": {"model": str(candidate / "model")}})
    sts = {"model": ["base", "step 2 best *"], "pooling": ["mean", "mean"], "STSB": [80.0, 81.25],
           "STSB_low": [78.0, 79.5], "STSB_high": [82.0, 83.0], "avg": [77.0, 78.5], "avg_low": [76.0, 77.75],
           "avg_high": [78.0, 79.25], "sts_aggregation": ["all", "all"], "dev_selected": [False, True],
           "step": [0, 2]}
    write_tsv(run / "eval" / "sts.tsv", pd.DataFrame(sts))
    ranking = {"model": ["trained", "base"], "protocol": ["heldout_queries"] * 2, "split": ["test"] * 2,
               "scoring": ["dot", "cosine"], "candidates": [1000] * 2, "queries": [44] * 2, "mrr": [0.25, 0.5],
               "mrr_low": [0.2, 0.4], "mrr_high": [0.3, 0.6], "top1": [10.0, 20.0], "top10": [40.0, 50.0]}
    write_tsv(run / "eval" / "reverse_dictionary.tsv", pd.DataFrame(ranking))
    return best


def test_the_model_card_has_what_the_run_recorded(tmp_path, tiny_bert):
    from defsent_plus.encoders.model_card import model_card

    card = model_card(fake_run(tmp_path, tiny_bert), "mean", name="tiny-defsent-plus")
    assert card.startswith("---\nlibrary_name: sentence-transformers\npipeline_tag: sentence-similarity\n")
    assert "base_model: tiny\n" in card and "# tiny-defsent-plus" in card
    assert "trained with **defsent_plus**" in card and "000 (DefSent+)" in card
    assert "- hyperparameters: lr=1e-05, batch_size=32" in card and "- optimizer steps: 29" in card
    assert "| mean | 81.25 [79.50, 83.00] | 78.50 [77.75, 79.25] |" in card and "80.00" not in card  # not base
    assert "| heldout_queries | test | dot | 1000 | 44 | 0.2500 [0.2000, 0.3000] | 10.00 | 40.00 |" in card
    assert "cosine" not in card.split("## Evaluation")[1].split("## Deviations")[0]  # the base model's row left out
    assert "- definitions are truncated at max_length" in card and "- project: abc123" in card
    assert "trust_remote_code" not in card and "not this export's" not in card
    prompt = model_card(fake_run(tmp_path / "p", tiny_bert), "prompt")
    assert "trust_remote_code=True" in prompt and "**These scores are not this export's:**" in prompt
    untrained = model_card(tiny_bert, "cls")
    assert "No training card" in untrained and "No STS scores were found" in untrained


def test_cli_encode_similarity_and_errors(tmp_path, tiny_bert, capsys):
    (tmp_path / "in.txt").write_text("a red dog\n\nthe night\n")
    out = str(tmp_path / "x.npy")
    assert cli(["encode", "--model", str(tiny_bert), "--file", str(tmp_path / "in.txt"), "-o", out]) == 0
    assert np.load(tmp_path / "x.npy").shape == (2, 32)
    assert cli(["similarity", "--model", str(tiny_bert), "a red dog", "a red dog"]) == 0
    assert capsys.readouterr().out.strip().endswith("1.0000")
    assert cli(["encode", "--model", str(tmp_path / "missing"), "-o", str(tmp_path / "y.npy"), "hi"]) == 2
    assert "encoder directory not found" in capsys.readouterr().err
    assert cli(["encode", "--model", str(tiny_bert), "-o", str(tmp_path / "y.npy")]) == 2
    assert "no sentences given" in capsys.readouterr().err
    assert not (tmp_path / "y.npy").exists()


def test_score_tables_mark_the_dev_selected_model_and_summarise_seeds(tmp_path):
    write_json(tmp_path / "best.json", {"best": {"model": "r/step2/amp/seed1/model"}})
    paths = []
    for seed, avg in ((0, 70.0), (1, 74.0)):
        write_json(tmp_path / f"s{seed}.json", {"model": f"seed{seed}", "model_dir": f"r/step2/amp/seed{seed}/model",
                                                "pooling": "mean", "scores": {"STS12": avg, "avg": avg}})
        paths.append(tmp_path / f"s{seed}.json")
    table = scores_table(paths, tmp_path / "best.json")
    assert table["dev_selected"].tolist() == [False, True]
    summary = seed_summary(table.assign(group="step 2 amp"))
    assert summary.loc[0, "avg"] == "72.00 ± 2.00" and summary.loc[0, "seeds"] == 2

    out = {name: tmp_path / f"sts.{name}" for name in ("tsv", "md", "png")}
    rows = [{"scores": path, "label": f"step 2 amp seed {seed}", "group": "step 2 amp", "step": 2, "pooling": "mean"}
            for seed, path in enumerate(paths)]
    write_score_tables(rows=rows, best_json=tmp_path / "best.json", out_tsv=out["tsv"], out_md=out["md"], title="t",
                       out_png=out["png"])
    assert "step 2 amp seed 1 *" in out["md"].read_text() and "72.00 ± 2.00" in out["md"].read_text()
    assert out["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out["png"].stat().st_size > 5000


def test_an_unknown_export_pooling_is_refused_by_name(tmp_path, tiny_bert):
    from defsent_plus.encoders.export import export_sentence_transformers
    from defsent_plus.errors import DefSentError

    with pytest.raises(DefSentError, match="expected one of .*'prompt'.*, got 'first'"):
        export_sentence_transformers(tiny_bert, tmp_path / "st", "first")
    assert not (tmp_path / "st").exists()
