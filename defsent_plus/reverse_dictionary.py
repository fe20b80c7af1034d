"""Reverse dictionary (001, Table 2): rank every entry of an entry space for a definition-like query.

A trained model's pooler projects the pooled query into the entry space it was trained against, and the
entries are ranked by h · Eᵀ, exactly the training objective's logits.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from .dictionary import definition_pairs, read_dataset
from .encoding import get_pooling, tokenize_batch
from .entry_space import load_space
from .errors import DefSentError
from .io import read_json
from .models import Encoder, autocast_for, load_encoder
from .training import TRAINING_CARD


@torch.inference_mode()
def entry_logits(encoder: Encoder, space: torch.Tensor, sentences: Sequence[str], pooling: str,
                 batch_size: int = 128, max_length: int = 128) -> np.ndarray:
    """``[n_sentences, n_entries]`` scores h · Eᵀ of the pooler-projected sentences."""
    encoder.model.eval()
    device = next(encoder.model.parameters()).device
    space = space.to(device)
    out = []
    for start in range(0, len(sentences), batch_size):
        batch = tokenize_batch(encoder.tokenizer, sentences[start : start + batch_size], max_length).to(device)
        with autocast_for(device):
            hidden = encoder.model(**batch).last_hidden_state.float()
        h = encoder.pooler(get_pooling(pooling).pool(hidden, batch["attention_mask"], None))
        out.append((h.float() @ space.T).cpu().numpy())
    return np.concatenate(out) if out else np.empty((0, len(space)), dtype=np.float32)


def ranks_of_targets(logits: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """1-based rank of each row's target entry (ties count against the target)."""
    target_scores = logits[np.arange(len(targets)), targets]
    return (logits >= target_scores[:, None]).sum(axis=1)


def ranking_metrics(ranks: np.ndarray) -> dict[str, float]:
    """MRR and top-1/3/10 accuracy (%) of 1-based ranks."""
    return {"mrr": float(np.mean(1.0 / ranks)), **{f"top{k}": float(np.mean(ranks <= k) * 100) for k in (1, 3, 10)},
            "queries": int(len(ranks))}


class ReverseDictionary:
    """A trained model with the entry space and entries it was trained against."""

    def __init__(self, model_dir: str | Path, space_path: str | Path | None = None,
                 dataset_path: str | Path | None = None, pooling: str | None = None):
        card_path = Path(model_dir) / TRAINING_CARD
        card = read_json(card_path) if card_path.is_file() else {}
        dataset_path, space_path = dataset_path or card.get("dataset"), space_path or card.get("entry_space")
        if not dataset_path or not space_path:
            raise DefSentError(model_dir, f"no {TRAINING_CARD}: pass the entry space and the dataset explicitly")
        frame = read_dataset(dataset_path)
        self.entries = list(frame["entry"])
        self.frame = frame
        self.space = torch.from_numpy(load_space(space_path, len(frame)))
        self.pooling = pooling or card.get("pooling", "cls")
        self.encoder = load_encoder(model_dir)

    def query(self, sentences: Sequence[str], top_k: int = 10) -> list[list[tuple[str, float]]]:
        """The ``top_k`` entries and scores for each sentence."""
        if not sentences or any(not s.strip() for s in sentences):
            raise DefSentError("query", "expected at least one non-empty sentence")
        logits = entry_logits(self.encoder, self.space, list(sentences), self.pooling)
        best = np.argsort(-logits, axis=1, kind="stable")[:, :top_k]
        return [[(self.entries[i], float(row[i])) for i in idx] for row, idx in zip(logits, best, strict=True)]

    def evaluate(self, entries: Sequence[str]) -> dict[str, float]:
        """MRR and top-k accuracy of ranking each listed entry's definitions among all entries."""
        index = {e: i for i, e in enumerate(self.entries)}
        missing = [e for e in entries if e not in index]
        if missing:
            raise DefSentError("reverse dictionary", f"{len(missing)} entries not in the dataset, e.g. {missing[:3]}")
        subset = self.frame.iloc[sorted(index[e] for e in entries)]
        texts, local_ids = definition_pairs(subset.reset_index(drop=True))
        targets = subset.index.to_numpy()[local_ids]
        logits = entry_logits(self.encoder, self.space, texts, self.pooling)
        return ranking_metrics(ranks_of_targets(logits, targets))
