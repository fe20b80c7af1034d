"""SentEval's two classifier protocols for the transfer tasks (senteval/tools/validation.py and classifier.py;
docs/evaluation.md, "SentEval transfer"): ``sklearn`` (``usepytorch=False``: liblinear logistic regression, one-vs-rest)
and ``pytorch`` (SentEval's README "default configuration": one linear layer trained with Adam, early stopping on a
validation set).

A protocol fits with ``fit(x, y, reg, seed, validation)``: ``validation`` is ``(x_dev, y_dev)`` or the share of the
training examples held out (only the PyTorch protocol uses it); the result answers ``score(x, y)`` and ``predict(x)``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from sklearn.linear_model import LogisticRegression
from sklearn.multiclass import OneVsRestClassifier
from torch import nn

Validation = tuple[np.ndarray, np.ndarray] | float
VALIDATION_SPLIT = 0.05  # SentEval's validation_split when a chosen regularisation is refitted on all training data

C_GRIDS = {  # SentEval's scikit-learn grids of inverse L2 strengths, per classifier (senteval/tools/validation.py)
    "inner_kfold": tuple(2.0**t for t in range(-2, 4)),  # MR, CR, SUBJ, MPQA: 0.25 .. 8
    "kfold": tuple(2.0**t for t in range(-1, 6)),  # TREC, MRPC: 0.5 .. 32
    "split": tuple(2.0**t for t in range(-2, 4)),  # SST-2: 0.25 .. 8
}
L2_GRID = tuple(10.0**t for t in range(-5, -1))  # the PyTorch protocol's weight decays, every classifier: 1e-5 .. 1e-2


def sklearn_fit(x: np.ndarray, y: np.ndarray, reg: float, seed: int, validation: Validation) -> OneVsRestClassifier:
    """The scikit-learn protocol's fit (no validation set): SentEval's ``LogisticRegression(C=reg,
    random_state=seed)`` as its scikit-learn (< 0.22) ran it: liblinear, OvR; ``max_iter`` 1,000 where that
    scikit-learn stopped at 100 (the same accuracy on all seven tasks, docs/evaluation.md)."""
    model = LogisticRegression(C=reg, solver="liblinear", random_state=seed, max_iter=1000)
    return OneVsRestClassifier(model).fit(x, y)


@dataclass(frozen=True)
class TorchSettings:
    """SentEval's PyTorch classifier settings (``params.classifier`` of its default configuration)."""

    batch_size: int = 64
    tenacity: int = 5
    epoch_size: int = 4
    max_epoch: int = 200
    lr: float = 1e-3  # torch.optim.Adam's default, as SentEval's "adam" leaves it


class TorchLogistic:
    """SentEval's ``MLP`` with ``nhid: 0`` (logistic regression), on the CPU, deterministic for ``seed``: numpy's
    permutations from a generator seeded like SentEval's ``np.random.seed(seed)``, the layer initialised right after
    ``torch.manual_seed(seed)`` (without touching the global generator)."""

    def __init__(self, inputdim: int, nclasses: int, l2reg: float, seed: int, settings: TorchSettings | None = None):
        settings = settings or TorchSettings()
        self.rng = np.random.RandomState(seed)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.model = nn.Linear(inputdim, nclasses)
        self.settings = settings
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=settings.lr, weight_decay=l2reg)
        self.loss = nn.CrossEntropyLoss()

    def fit(self, x: np.ndarray, y: np.ndarray, validation: Validation) -> TorchLogistic:
        """Epochs of ``epoch_size`` passes until the validation accuracy has not improved ``tenacity`` + 1 times in
        a row (SentEval's loop, its off-by-one included) or ``max_epoch``; the best epoch's weights are kept."""
        train_x, train_y, dev_x, dev_y = self.split(x, y, validation)
        best, best_state, worse, epoch = -1.0, None, 0, 0
        while epoch <= self.settings.max_epoch:
            self.train_passes(train_x, train_y)
            epoch += self.settings.epoch_size
            accuracy = self.score(dev_x, dev_y)
            if accuracy > best:
                best, best_state = accuracy, copy.deepcopy(self.model.state_dict())
            else:
                if worse >= self.settings.tenacity:
                    break
                worse += 1
        self.model.load_state_dict(best_state)
        return self

    def split(self, x: np.ndarray, y: np.ndarray, validation: Validation):
        """(train x, train y, dev x, dev y): the given validation set, or a seeded share of the examples."""
        if not isinstance(validation, float):
            return x, y, *validation
        permutation = self.rng.permutation(len(x))
        cut = int(validation * len(x))
        return x[permutation[cut:]], y[permutation[cut:]], x[permutation[:cut]], y[permutation[:cut]]

    def train_passes(self, x: np.ndarray, y: np.ndarray) -> None:
        self.model.train()
        features, labels = torch.from_numpy(np.asarray(x, np.float32)), torch.from_numpy(np.asarray(y, np.int64))
        for _ in range(self.settings.epoch_size):
            permutation = torch.from_numpy(self.rng.permutation(len(x)))
            for start in range(0, len(x), self.settings.batch_size):
                index = permutation[start:start + self.settings.batch_size]
                loss = self.loss(self.model(features[index]), labels[index])
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()

    @torch.no_grad()
    def predict(self, x: np.ndarray) -> np.ndarray:
        self.model.eval()
        features = torch.from_numpy(np.asarray(x, np.float32))
        return np.concatenate([self.model(features[i:i + self.settings.batch_size]).argmax(1).numpy()
                               for i in range(0, len(x), self.settings.batch_size)])

    def score(self, x: np.ndarray, y: np.ndarray) -> float:
        return float(np.mean(self.predict(x) == np.asarray(y))) if len(y) else 0.0


def torch_fit(x: np.ndarray, y: np.ndarray, reg: float, seed: int, validation: Validation) -> TorchLogistic:
    """The PyTorch protocol's fit: classes 0 .. max label, as SentEval's tasks give ``nclasses``."""
    return TorchLogistic(x.shape[1], int(np.max(y)) + 1, reg, seed).fit(x, y, validation)


@dataclass(frozen=True)
class Protocol:
    """A SentEval classifier protocol: its regularisation grid per classifier kind and its fit."""

    name: str
    grids: dict[str, tuple[float, ...]]
    fit: Callable


PROTOCOLS = {
    "sklearn": Protocol("sklearn", C_GRIDS, sklearn_fit),
    "pytorch": Protocol("pytorch", dict.fromkeys(C_GRIDS, L2_GRID), torch_fit),
}
