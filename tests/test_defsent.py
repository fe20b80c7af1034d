"""DefSent's headword objective: the model's own masked-LM head, freezing, headword ids, prediction, ranking."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import save_file
from tiny_models import build_tiny_bert, build_tiny_roberta, vary_layer_norms
from transformers import AutoConfig, AutoModelForMaskedLM, BertForMaskedLM, DistilBertConfig, DistilBertModel

from defsent_plus.dictionary.datasets import single_token_entries, single_token_ids
from defsent_plus.encoders.encoding import get_pooling
from defsent_plus.encoders.models import load_encoder
from defsent_plus.errors import DefSentError
from defsent_plus.evaluation.reverse_dictionary import ranking_metrics, ranks_of_targets
from defsent_plus.io import write_json
from defsent_plus.methods.defsent.objective import (
    HEAD_FILE,
    defsent_objective,
    load_head,
    masked_lm_head,
    predict_words,
    save_head,
    word_logits,
)
from defsent_plus.names import TRAINING_CARD
from defsent_plus.training.task import Batch, TaskInputs
from defsent_plus.training.trainer import TrainConfig, train_epoch

HEADWORDS = ["food", "team", "eat"]  # one token of both tiny vocabularies (RoBERTa: in leading-space form)
DEFINITIONS = ["something you eat", "a group of young person that play a game with a ball", "to take food"]


def randomise_head_bias(model: torch.nn.Module, seed: int) -> None:
    """Pre-trained heads have a non-zero output bias; a zero one would hide a dropped bias."""
    bias = model.get_output_embeddings().bias
    with torch.no_grad():
        bias.copy_(torch.randn(bias.shape, generator=torch.Generator().manual_seed(seed)))


@pytest.fixture(scope="module")
def mlm_bert(tmp_path_factory) -> Path:
    """The tiny BERT saved as BertForMaskedLM: encoder and masked-LM head."""
    out = build_tiny_bert(tmp_path_factory.mktemp("mlm_bert"))
    torch.manual_seed(1)
    model = BertForMaskedLM(AutoConfig.from_pretrained(out))
    vary_layer_norms(model, 1)
    randomise_head_bias(model, 1)
    model.save_pretrained(out, safe_serialization=True)
    return out


@pytest.fixture(scope="module")
def mlm_roberta(tmp_path_factory) -> Path:
    """The tiny RoBERTa (saved with its lm_head) with a non-zero output bias."""
    out = build_tiny_roberta(tmp_path_factory.mktemp("mlm_roberta"))
    model = AutoModelForMaskedLM.from_pretrained(out)
    randomise_head_bias(model, 2)
    model.save_pretrained(out, safe_serialization=True)
    return out


@pytest.fixture(params=["mlm_bert", "mlm_roberta"])
def mlm_dir(request) -> Path:
    return request.getfixturevalue(request.param)


def features_and_targets(encoder):
    features = encoder.tokenizer(DEFINITIONS, padding=True, return_tensors="pt")
    assert not bool(features["attention_mask"].all()), "the batch must contain padding"
    targets = single_token_ids(encoder.tokenizer, HEADWORDS)
    assert None not in targets
    return features, torch.tensor(targets)


def objective_loss(encoder, objective, features, targets):
    hidden = encoder.model(**features).last_hidden_state
    return objective(Batch(hidden, features["attention_mask"], features["input_ids"], targets))


def manual_pool(hidden: torch.Tensor, mask: torch.Tensor, pooling: str) -> torch.Tensor:
    rows = [h[: int(m.sum())] for h, m in zip(hidden, mask, strict=True)]
    if pooling == "cls":
        return hidden[:, 0]
    if pooling == "mean":
        return torch.stack([r.mean(0) for r in rows])
    return torch.stack([r.max(0).values for r in rows])


def own_head(mlm: torch.nn.Module) -> torch.nn.Module:
    """The masked-LM model's head: its child that is not the base model (``cls`` or ``lm_head``)."""
    (head,) = [child for child in mlm.children() if child is not mlm.base_model]
    return head


# ------------------------------------------------------------------------------------------ loss and head


@pytest.mark.parametrize("pooling", ["cls", "mean", "max"])
def test_loss_is_cross_entropy_through_the_models_own_masked_lm_head(mlm_dir, pooling):
    encoder = load_encoder(mlm_dir)
    encoder.model.eval()
    objective = defsent_objective(encoder, pooling, seed=0)
    assert objective.head_info == {"head": "pretrained", "layout": objective.head_info["layout"], "missing": [],
                                   "seed": 0}
    features, targets = features_and_targets(encoder)
    mlm = AutoModelForMaskedLM.from_pretrained(mlm_dir).eval()
    with torch.no_grad():
        loss, parts = objective_loss(encoder, objective, features, targets)
        hidden = mlm.base_model(**features).last_hidden_state
        logits = own_head(mlm)(manual_pool(hidden, features["attention_mask"], pooling))
        expected = F.cross_entropy(logits, targets)
        ours = objective.logits(encoder.model(**features).last_hidden_state, features["attention_mask"])
    assert ours.shape == (len(DEFINITIONS), encoder.model.config.vocab_size)
    torch.testing.assert_close(ours, logits, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(loss, expected, rtol=1e-6, atol=1e-6)
    assert parts == {"headword_ce": pytest.approx(loss.item())}


def test_the_decoder_is_tied_to_the_input_embeddings_and_the_output_bias(mlm_bert):
    encoder = load_encoder(mlm_bert)
    head, _ = masked_lm_head(encoder, seed=0)
    predictions = head.predictions
    assert predictions.decoder.weight is encoder.model.get_input_embeddings().weight
    assert predictions.decoder.bias is predictions.bias
    assert bool(predictions.bias.detach().abs().sum() > 0)  # the checkpoint's (randomised) bias was loaded


@pytest.mark.parametrize("freeze_embedding_block", [True, False])
def test_one_adam_step_moves_the_encoder_but_not_the_head_or_word_embeddings(mlm_dir, freeze_embedding_block):
    encoder = load_encoder(mlm_dir)
    objective = defsent_objective(encoder, "mean", seed=0, freeze_embedding_block=freeze_embedding_block)
    features, targets = features_and_targets(encoder)
    head_before = {k: v.clone() for k, v in objective.head.state_dict().items()}
    words = encoder.model.get_input_embeddings().weight
    words_before = words.detach().clone()
    positions_before = encoder.model.embeddings.position_embeddings.weight.detach().clone()
    layer = encoder.model.encoder.layer[0].attention.self.query.weight
    layer_before = layer.detach().clone()
    params = list(dict.fromkeys([*encoder.model.parameters(), *objective.parameters()]))  # frozen ones included
    optimizer = torch.optim.Adam(params, lr=1e-2)

    loss, _ = objective_loss(encoder, objective, features, targets)
    loss.backward()
    assert all(p.grad is None for p in objective.parameters()), "a frozen head parameter received a gradient"
    assert words.grad is None and not words.requires_grad
    optimizer.step()

    assert all(torch.equal(head_before[k], v) for k, v in objective.head.state_dict().items())
    assert torch.equal(words, words_before)
    assert not torch.equal(layer, layer_before)
    positions_moved = not torch.equal(encoder.model.embeddings.position_embeddings.weight, positions_before)
    assert positions_moved is not freeze_embedding_block


def test_an_epoch_of_the_training_loop_keeps_the_head(mlm_dir):
    encoder = load_encoder(mlm_dir)
    objective = defsent_objective(encoder, "cls", seed=0)
    head_before = {k: v.clone() for k, v in objective.head.state_dict().items()}
    targets = np.array(single_token_ids(encoder.tokenizer, HEADWORDS))
    summary = train_epoch(encoder, DEFINITIONS * 2, np.concatenate([targets, targets]), objective,
                          TrainConfig(batch_size=2, lr=1e-3), progress=False)
    assert summary["steps"] == 3 and np.isfinite(summary["loss_last"])
    assert all(torch.equal(head_before[k], v) for k, v in objective.head.state_dict().items())


def test_prompt_pooling_is_not_a_defsent_pooling(mlm_bert):
    with pytest.raises(DefSentError, match="cls"):
        defsent_objective(load_encoder(mlm_bert), "prompt", seed=0)


# ------------------------------------------------------------------------------------------ headless and bad models


def test_a_headless_checkpoint_gets_a_seeded_initialised_head(tiny_bert):
    encoder = load_encoder(tiny_bert)
    head, info = masked_lm_head(encoder, seed=7)
    again, _ = masked_lm_head(encoder, seed=7)
    other, _ = masked_lm_head(encoder, seed=8)
    assert info["head"] == "initialised" and info["seed"] == 7 and info["layout"] == "bert"
    assert "cls.predictions.transform.dense.weight" in info["missing"]
    assert all(torch.equal(v, again.state_dict()[k]) for k, v in head.state_dict().items())
    transform = head.predictions.transform
    assert not torch.equal(transform.dense.weight, other.predictions.transform.dense.weight)
    assert transform.dense.weight.std().item() == pytest.approx(encoder.model.config.initializer_range, rel=0.3)
    assert torch.equal(transform.LayerNorm.weight, torch.ones_like(transform.LayerNorm.weight))
    assert not head.predictions.bias.any() and not transform.dense.bias.any()
    assert head.predictions.decoder.weight is encoder.model.get_input_embeddings().weight


@pytest.mark.slow
def test_all_minilm_has_no_head_and_gets_an_initialised_one(minilm_path):
    encoder = load_encoder(minilm_path)
    objective = defsent_objective(encoder, "mean", seed=0)
    assert objective.head_info["head"] == "initialised"
    features = encoder.tokenizer(["a long necked african animal"], return_tensors="pt")
    hidden = encoder.model(**features).last_hidden_state
    assert objective.logits(hidden, features["attention_mask"]).shape == (1, 30522)


def test_an_unknown_model_type_without_head_weights_fails_clearly(tiny_bert, tmp_path):
    out = tmp_path / "distil"
    shutil.copytree(tiny_bert, out)
    config = AutoConfig.from_pretrained(tiny_bert)
    DistilBertModel(DistilBertConfig(vocab_size=config.vocab_size, dim=32, n_layers=1, n_heads=4, hidden_dim=64)
                    ).save_pretrained(out, safe_serialization=True)
    with pytest.raises(DefSentError, match=r"distil.*model type 'distilbert'.*cls\.\*"):
        masked_lm_head(load_encoder(out), seed=0)


def test_head_weights_of_another_width_fail_clearly(tiny_bert, tmp_path):
    out = tmp_path / "wrong_width"
    shutil.copytree(tiny_bert, out)
    save_file({"cls.predictions.transform.dense.weight": torch.zeros(16, 16)}, str(out / "head.safetensors"))
    with pytest.raises(DefSentError, match=r"wrong_width.*shape \(16, 16\), expected \(32, 32\)"):
        masked_lm_head(load_encoder(out), seed=0)


# ------------------------------------------------------------------------------------------ poolings


def test_max_pooling_ignores_padding():
    generator = torch.Generator().manual_seed(0)
    hidden = -1.0 - torch.rand(2, 4, 5, generator=generator)  # every real value negative
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]])
    hidden[mask == 0] = 1e30  # padding would win any unmasked max (and a zero fill would too)
    pooled = get_pooling("max").pool(hidden, mask, None)
    expected = torch.stack([hidden[0, :3].amax(0), hidden[1, :2].amax(0)])
    assert torch.equal(pooled, expected)
    assert bool((pooled < 0).all())


def test_max_pooled_encodings_do_not_depend_on_batch_padding(tiny_bert):
    encoder = load_encoder(tiny_bert)
    batched = encoder.encode(DEFINITIONS, "max")
    alone = np.stack([encoder.encode([text], "max")[0] for text in DEFINITIONS])
    np.testing.assert_allclose(batched, alone, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------------------------ headwords


def test_bert_headwords_are_the_words_themselves(tiny_bert):
    tokenizer = load_encoder(tiny_bert).tokenizer
    ids = single_token_ids(tokenizer, ["giraffe", "Dog", "new york", "xyzzy", "€"])
    assert ids == [tokenizer.convert_tokens_to_ids("giraffe"), tokenizer.convert_tokens_to_ids("dog"), None, None,
                   None]  # two words, a sub-word split, an unknown character


def test_roberta_headwords_take_the_leading_space_form(tiny_roberta):
    tokenizer = load_encoder(tiny_roberta).tokenizer
    assert len(tokenizer("one", add_special_tokens=False)["input_ids"]) == 1  # one token only without the space
    ids = single_token_ids(tokenizer, ["food", "one", "giraffe"])
    assert ids == [tokenizer.convert_tokens_to_ids("\u0120food"), None, None]


def test_bert_headwords_agree_with_dataset_c(tiny_bert):
    import pandas as pd

    tokenizer = load_encoder(tiny_bert).tokenizer
    words = ["giraffe", "new york", "xyzzy", "dog", "€", "lion"]
    frame = pd.DataFrame({"entry": words, "definitions": [["x"]] * len(words), "sources": [["s"]] * len(words)})
    kept = set(single_token_entries(frame, tokenizer)["entry"])
    assert kept == {w for w, i in zip(words, single_token_ids(tokenizer, words), strict=True) if i is not None}


# ------------------------------------------------------------------------------------------ prediction


def save_defsent_model(encoder, objective, out: Path, pooling: str) -> Path:
    encoder.save(out)
    save_head(objective.head, out, objective.head_info)
    write_json(out / TRAINING_CARD, {"method": "defsent", "pooling": pooling})
    return out


def test_predict_words_uses_the_saved_head(tiny_bert, tmp_path):
    encoder = load_encoder(tiny_bert)
    encoder.model.eval()
    objective = defsent_objective(encoder, "mean", seed=5)  # a seeded-initialised head must survive the round trip
    out = save_defsent_model(encoder, objective, tmp_path / "trained", "mean")
    predictions = predict_words(out, DEFINITIONS, k=3)
    with torch.no_grad():
        features = encoder.tokenizer(DEFINITIONS, padding=True, return_tensors="pt")
        probabilities = objective.logits(encoder.model(**features).last_hidden_state,
                                         features["attention_mask"]).softmax(-1)
    top = probabilities.topk(3, dim=-1)
    assert [[w for w, _ in row] for row in predictions] == [
        [encoder.tokenizer.decode([i]).strip() for i in row] for row in top.indices.tolist()]
    np.testing.assert_allclose([[p for _, p in row] for row in predictions], top.values.numpy(), rtol=1e-4)
    reloaded = load_head(load_encoder(out))
    assert all(torch.equal(v, reloaded.state_dict()[k]) for k, v in objective.head.state_dict().items())


def test_the_saved_head_is_the_same_file_every_time_and_an_older_heads_metadata_still_loads(tiny_bert, tmp_path):
    from safetensors.torch import load_file, save_file

    encoder = load_encoder(tiny_bert)
    objective = defsent_objective(encoder, "mean", seed=5)
    info = {**objective.head_info, "a": 1, "b": 2, "c": 3}  # several keys: safetensors would order them at random
    first, second = (save_head(objective.head, tmp_path / name, info).read_bytes() for name in ("one", "two"))
    assert first == second
    old = tmp_path / "old"  # a head saved before the single metadata key: one key each
    encoder.save(old)
    layout = json.loads(safe_open_metadata(tmp_path / "one" / HEAD_FILE)["defsent_head"])["layout"]
    save_file(load_file(str(tmp_path / "one" / HEAD_FILE)), str(old / HEAD_FILE), metadata={"layout": layout, "x": "1"})
    reloaded = load_head(load_encoder(old))
    assert all(torch.equal(v, reloaded.state_dict()[k]) for k, v in objective.head.state_dict().items())


def safe_open_metadata(path: Path) -> dict:
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as handle:
        return handle.metadata()


def test_training_moves_the_headwords_up_the_ranking(mlm_bert):
    encoder = load_encoder(mlm_bert)
    objective = defsent_objective(encoder, "cls", seed=0)
    targets = np.array(single_token_ids(encoder.tokenizer, HEADWORDS))
    before = ranks_of_targets(word_logits(encoder, objective.head, DEFINITIONS, "cls"), targets)
    train_epoch(encoder, DEFINITIONS * 20, np.tile(targets, 20), objective, TrainConfig(batch_size=3, lr=1e-2),
                progress=False)
    after = ranks_of_targets(word_logits(encoder, objective.head, DEFINITIONS, "cls"), targets)
    assert (after < before).all(), (before, after)


def test_a_model_dir_without_a_head_fails_clearly(tiny_bert):
    with pytest.raises(DefSentError, match=HEAD_FILE):
        predict_words(tiny_bert, DEFINITIONS, k=3, pooling="cls")


# ------------------------------------------------------------------------------------------ ranking metrics


def test_ties_count_against_the_target():
    logits = np.array([[0.5, 0.9, 0.5, 0.1], [0.5, 0.9, 0.5, 0.1]])
    assert ranks_of_targets(logits, np.array([0, 3])).tolist() == [3, 4]
    assert ranks_of_targets(torch.from_numpy(logits), torch.tensor([1, 2])).tolist() == [1, 3]


def test_mrr_counts_the_full_ranking_and_mrr_at_10_only_the_top_10():
    metrics = ranking_metrics(np.array([1, 2, 20]))
    assert metrics["mrr"] == pytest.approx((1 + 1 / 2 + 1 / 20) / 3)
    assert metrics["mrr_at_10"] == pytest.approx((1 + 1 / 2) / 3)
    assert metrics["top1"] == pytest.approx(100 / 3)
    assert metrics["top3"] == metrics["top10"] == pytest.approx(200 / 3)
    assert metrics["queries"] == 3


def test_a_partial_head_is_completed_and_its_bias_may_be_stored_on_the_decoder(tiny_bert, tmp_path):
    out = tmp_path / "partial"
    shutil.copytree(tiny_bert, out)
    vocab = AutoConfig.from_pretrained(tiny_bert).vocab_size
    stored = {"cls.predictions.decoder.bias": torch.randn(vocab), "cls.predictions.transform.dense.weight":
              torch.randn(32, 32)}
    save_file(stored, str(out / "head.safetensors"))
    head, info = masked_lm_head(load_encoder(out), seed=0)
    assert info["head"] == "partial"
    assert info["missing"] == ["cls.predictions.transform.dense.bias", "cls.predictions.transform.LayerNorm.weight",
                               "cls.predictions.transform.LayerNorm.bias"]
    assert torch.equal(head.predictions.bias, stored["cls.predictions.decoder.bias"])
    assert torch.equal(head.predictions.transform.dense.weight, stored["cls.predictions.transform.dense.weight"])


def test_a_dataset_without_single_token_headwords_is_refused_by_name(tiny_bert):
    import pandas as pd

    from defsent_plus.methods.defsent.objective import build_task

    encoder = load_encoder(tiny_bert)
    frame = pd.DataFrame({"entry": ["new york", "xyzzy"], "definitions": [["a city"], ["a word"]],
                          "sources": [["s"], ["s"]]})
    with pytest.raises(DefSentError, match=r"toy\.parquet: no training entry is a single token"):
        build_task(TaskInputs(encoder, frame, ["a city", "a word"], np.array([0, 1]), "cls", 0, "toy.parquet", {}, 2))


def test_definitions_of_multi_token_headwords_are_dropped_and_counted(tiny_bert):
    import pandas as pd

    from defsent_plus.methods.defsent.objective import build_task

    encoder = load_encoder(tiny_bert)
    frame = pd.DataFrame({"entry": ["food", "new york"], "definitions": [["what you eat"], ["a city"]],
                          "sources": [["s"], ["s"]]})
    task = build_task(TaskInputs(encoder, frame, ["what you eat", "a city"], np.array([0, 1]), "cls", 0, "toy", {}, 2))
    assert task.texts == ["what you eat"] and task.targets.tolist() == single_token_ids(encoder.tokenizer, ["food"])
    assert task.card["dropped_not_single_token"] == 1 and task.card["classes"] == encoder.model.config.vocab_size


def test_defsents_reverse_dictionary_needs_a_held_out_split(tmp_path):
    from helpers import write_toy_dataset

    from defsent_plus.methods.defsent.reverse_dictionary import write_headword_ranking

    dataset = write_toy_dataset(tmp_path / "toy.parquet")
    with pytest.raises(DefSentError, match=r"toy\.parquet: no held-out split"):
        write_headword_ranking(method="defsent", model_dir=tmp_path, dataset=dataset, queries=tmp_path / "q.parquet",
                               base_model=tmp_path, base_space=[], pooling="cls", out_json=tmp_path / "rd.json",
                               out_tsv=tmp_path / "rd.tsv", out_md=tmp_path / "rd.md")
