"""What a training method's work is, as the cost model asks it (:mod:`defsent_plus.pipeline.requests`,
:mod:`defsent_plus.rehearsal.costs`, ``estimate``): what its objective's output layer scores, the sentences an epoch
trains on and whether its saved model holds the masked-LM head. The
cost code asks a method's declaration (``Method.costs``) and never its name or its option keys: a new method states
its own, and the encoder passes of its step (``Method.encoder_passes``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

ENTRIES, VOCABULARY, IN_BATCH = "entries", "vocabulary", "in-batch"  # what an output layer scores (CLASSES)
CLASSES = (ENTRIES, VOCABULARY, IN_BATCH)


def run_definitions(options: dict, definitions: float) -> float:
    """An epoch over every training definition of the run's dataset (DefSent+, DefSent)."""
    return definitions


@dataclass(frozen=True)
class TrainingCosts:
    """A method's cost facts. ``classes``: what its output layer scores, each training example and each
    reverse-dictionary query once: the run's ``ENTRIES`` (an entry space), the masked-LM head's ``VOCABULARY``, or
    ``IN_BATCH`` (in-batch contrast: no output layer); None: entries for a method that trains against an entry space,
    else in-batch. ``sentences(options, definitions)``: the sentences an epoch trains on, from its resolved options
    and the run's training definitions."""

    classes: str | None = None
    sentences: Callable[[dict, float], float] = run_definitions
    saves_masked_lm_head: bool = False

    def __post_init__(self):
        if self.classes is not None and self.classes not in CLASSES:
            raise ValueError(f"training costs: classes {self.classes!r}, expected one of {CLASSES}")
