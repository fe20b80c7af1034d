"""What a training method declares about itself, as data: the one record the rest of the system asks.

Light on purpose (no torch): the workflow reads every declaration while parsing. What needs torch (the training
task, the reverse-dictionary protocol) is named as ``"module:function"`` and imported only when called.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass

from defsent_plus.names import SPACE_PATTERN, TARGET_PATTERN

ENTRY_SPACE = "entry space"  # a method whose candidates train against a frozen entry space (their <space> part)
COMMANDS = ("encode", "similarity", "export", "reverse-dictionary", "predict-words")  # the CLI's model commands
SENTENCE_COMMANDS = ("encode", "similarity", "export")  # what every trained encoder answers

Ref = Callable | str  # a callable, or "module:function" imported when first called


def resolve(ref: Ref) -> Callable:
    """The callable a :data:`Ref` names."""
    if callable(ref):
        return ref
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class ReverseDictionaryProtocol:
    """How a method's trained models are evaluated as a reverse dictionary on a run's held-out entries.

    ``write(method=, model_dir=, spaces=, dataset=, queries=, base_model=, base_space=, pooling=, out_json=, out_tsv=,
    out_md=, batch_size=, max_length=, title=)`` writes the run's reverse_dictionary.{json,tsv,md};
    ``splits(model_result) -> {protocol: {split: metrics}}`` reads one model's part of that JSON for the comparison.
    """

    name: str
    description: str  # the comparison table's header line for this protocol
    write: Ref
    splits: Ref


@dataclass(frozen=True)
class Method:
    """A training method: what it optimises, its config block, what its candidates train against, how its models
    are evaluated and used, and where it departs from its authors' code."""

    name: str  # runs.<run>.method and methods.<name> in config
    paper: str
    target: str  # ENTRY_SPACE, or the fixed name of its candidates' target (results/<run>/step1/<target>/seed<s>)
    options: dict  # JSON-schema properties of methods.<name> (the schema is built from these), defaults included
    build_task: Ref  # (TaskInputs) -> TrainingTask (defsent_plus.training.task)
    options_source: str = ""  # where the defaults come from (the schema's description of the block)
    reverse_dictionary: ReverseDictionaryProtocol | None = None  # None: no reverse-dictionary target is planned
    commands: tuple[str, ...] = SENTENCE_COMMANDS  # the CLI commands its trained models support
    deviations: tuple[str, ...] = ()  # from the authors' code; written into every training card
    max_steps: int | None = None  # None: any number of PST steps
    dev_in_training: bool = False  # selects its weights on STS-B dev while training (its train job reads SentEval)

    def __post_init__(self):
        if not re.fullmatch(r"[a-z][a-z0-9_]*", self.name):
            raise ValueError(f"method name {self.name!r}: expected lowercase letters, digits and _")
        if self.target != ENTRY_SPACE and (not re.fullmatch(TARGET_PATTERN, self.target)
                                           or re.fullmatch(SPACE_PATTERN, self.target)):
            raise ValueError(f"method {self.name}: target {self.target!r} must be a plain name and not an entry space")
        unknown = set(self.commands) - set(COMMANDS)
        if unknown:
            raise ValueError(f"method {self.name}: unknown commands {sorted(unknown)}; expected some of {COMMANDS}")

    @property
    def uses_entry_space(self) -> bool:
        """Trains against a frozen entry space built by the previous step (its training job's ``space`` input)."""
        return self.target == ENTRY_SPACE

    def targets(self, step: dict) -> list[str]:
        """The candidate targets of a run's step: its entry spaces, or the method's fixed target."""
        return list(step["spaces"]) if self.uses_entry_space else [self.target]

    def task(self, inputs):
        """This method's training task for ``inputs`` (a :class:`defsent_plus.training.task.TaskInputs`)."""
        return resolve(self.build_task)(inputs)

    def config_key(self, option: str = "") -> str:
        """The config key users set for this method (``config: methods.<name>[.<option>]``)."""
        return f"config: methods.{self.name}" + (f".{option}" if option else "")

    def options_schema(self) -> dict:
        """The JSON schema of ``methods.<name>``."""
        return {"type": "object", "description": self.options_source or self.paper, "properties": self.options,
                "additionalProperties": False, "default": {}}

    def training_card(self) -> dict:
        """What every model this method trains records about the method."""
        return {"method": self.name, "paper": self.paper, "deviations": list(self.deviations)}


def with_defaults(options: dict, **defaults) -> dict:
    """``options`` (JSON-schema properties) with other ``default`` values for some of them."""
    unknown = set(defaults) - set(options)
    if unknown:
        raise ValueError(f"no such options: {sorted(unknown)}")
    return {name: {**spec, "default": defaults[name]} if name in defaults else spec for name, spec in options.items()}
