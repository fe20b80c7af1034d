"""Training methods a run can name (``runs.<name>.method``), as data.

A method is an objective plus the config block of its optimisation options (``methods.<name>`` in config.yaml).
Its models are dev-scored, selected, evaluated, exported and reported by the same rules as every other method's.
Light on purpose (no torch): the workflow reads it while parsing; the objective is built in
:func:`defsent_plus.training.build_objective`.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import DefSentError
from .names import CONTRASTIVE_TARGET, VOCAB_TARGET


@dataclass(frozen=True)
class Method:
    """What the workflow needs to know about a training method."""

    name: str
    paper: str
    uses_entry_space: bool  # trains against a frozen entry space (its rule input) built by the previous step
    target: str | None = None  # without an entry space: what its candidates predict (their path's <space> part)
    max_steps: int | None = None  # None: any number of PST steps
    dev_in_training: bool = False  # scores STS-B dev during training to keep its best weights (its train job reads it)

    def targets(self, step: dict) -> list[str]:
        """The candidate targets of a run's step: its entry spaces, or the method's fixed target."""
        return list(step["spaces"]) if self.uses_entry_space else [self.target]


METHODS = {
    "defsent_plus": Method("defsent_plus", "000 (DefSent+): definitions projected into a frozen entry space",
                           uses_entry_space=True),
    "defsent": Method("defsent", "001/002 (DefSent): headword prediction through the frozen masked-LM head",
                      uses_entry_space=False, target=VOCAB_TARGET, max_steps=1),
    "simcse": Method("simcse", "Gao et al. 2021 (unsupervised SimCSE): dropout views, in-batch InfoNCE",
                     uses_entry_space=False, target=CONTRASTIVE_TARGET, max_steps=1, dev_in_training=True),
    "slt_fai": Method("slt_fai", "004 (SLT-FAI): SimCSE/ConSERT + frequency-adversarial and incomplete-sentence "
                      "discriminators", uses_entry_space=False, target=CONTRASTIVE_TARGET, max_steps=1,
                      dev_in_training=True),
}


def method_of(name: str, where: str = "config: method") -> Method:
    """The registered method called ``name``."""
    if name not in METHODS:
        raise DefSentError(where, f"unknown training method {name!r}; expected one of {sorted(METHODS)}")
    return METHODS[name]
