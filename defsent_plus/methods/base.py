"""What a training method declares about itself, as data: the one record the rest of the system asks.

Light on purpose (no torch): the workflow reads every declaration while parsing. What needs torch (the training
task, the reverse-dictionary protocol) lives in the method's own package (``methods/<name>/objective.py``,
``reverse_dictionary.py``); a declaration names those functions as :class:`Lazy` references, imported when called.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from defsent_plus.errors import DefSentError
from defsent_plus.names import SPACE_PATTERN, TARGET_PATTERN, TRANSDUCTIVE_CORPORA

ENTRY_SPACE = "entry space"  # a method whose candidates train against a frozen entry space (their <space> part)
COMMANDS = ("encode", "similarity", "export", "reverse-dictionary", "predict-words")  # the CLI's model commands
SENTENCE_COMMANDS = ("encode", "similarity", "export")  # what every trained encoder answers
ENTRIES, VOCABULARY, IN_BATCH = "entries", "vocabulary", "in-batch"  # what an output layer scores (CLASSES)
CLASSES = (ENTRIES, VOCABULARY, IN_BATCH)


@dataclass(frozen=True)
class TrainingCosts:
    """What a method's work is, as the cost model asks it (:mod:`defsent_plus.pipeline.requests`, the cost sheet,
    ``estimate``), which never asks a method's name or its option keys. ``classes``: what its output layer scores,
    each training example and each reverse-dictionary query once: the run's ``ENTRIES`` (an entry space), the
    masked-LM head's ``VOCABULARY``, or ``IN_BATCH`` (in-batch contrast: no output layer); None: entries for a method
    that trains against an entry space, else in-batch. ``sentences(options, definitions)``: the sentences an epoch
    trains on, from its resolved options and the run's training definitions; ``saves_masked_lm_head``: whether its
    saved model holds the masked-LM head."""

    classes: str | None = None
    sentences: Callable[[dict, float], float] = lambda options, definitions: definitions  # the run's definitions
    saves_masked_lm_head: bool = False

    def __post_init__(self):
        if self.classes is not None and self.classes not in CLASSES:
            raise ValueError(f"training costs: classes {self.classes!r}, expected one of {CLASSES}")


@dataclass(frozen=True)
class Lazy:
    """The function ``"module:function"``, imported when called: a declaration names its objective and its
    reverse-dictionary writer without importing them (torch)."""

    reference: str

    def __call__(self, *args, **kwargs):
        return self.function()(*args, **kwargs)

    def function(self) -> Callable:
        module, _, name = self.reference.partition(":")
        return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class ReverseDictionaryProtocol:
    """How a method's trained models are evaluated as a reverse dictionary on a run's held-out entries.

    ``write(method=, model_dir=, spaces=, dataset=, queries=, base_model=, base_space=, pooling=, out_json=, out_tsv=,
    out_md=, batch_size=, max_length=, title=)`` writes the run's reverse_dictionary.{json,tsv,md};
    ``splits(model_result) -> {protocol: {split: metrics}}`` reads one model's part of that JSON for the comparison;
    ``encoded_sentences(definitions, queries)``: the sentences a job encodes, trained and base model together, for a
    dataset of ``definitions`` with ``queries`` held out (the cost model's and the SLURM requests' unit of work).
    """

    name: str
    description: str  # the comparison table's header line for this protocol
    write: Callable[..., dict]
    splits: Callable[[dict], dict[str, dict]]
    encoded_sentences: Callable[[float, float], float]
    base_note: str = ""  # why the starting model's rows read as they do (a line under the tables), if they need one


@dataclass(frozen=True)
class Variant:
    """One published configuration of a method: its option defaults, the run-level settings its authors used
    (``lr``, ``batch_size``, ``pooling``; a run that departs from them records the departure) and its sources and
    deviations (written into the training card of every model trained with it)."""

    options: dict
    run: dict
    source: str
    deviations: tuple[str, ...] = ()


@dataclass(frozen=True)
class Method:
    """A training method: what it optimises, its config block, what its candidates train against, how its models
    are evaluated and used, and where it departs from its authors' code."""

    name: str  # runs.<run>.method and methods.<name> in config
    paper: str
    target: str  # ENTRY_SPACE, or the fixed name of its candidates' target (results/<run>/step1/<target>/seed<s>)
    options: dict  # JSON-schema properties of methods.<name> (the schema is built from these), defaults included
    build_task: Callable  # (TaskInputs) -> TrainingTask (defsent_plus.training.task); a Lazy keeps torch out
    options_source: str = ""  # where the defaults come from (the schema's description of the block)
    reverse_dictionary: ReverseDictionaryProtocol | None = None  # None: no reverse-dictionary target is planned
    commands: tuple[str, ...] = SENTENCE_COMMANDS  # the CLI commands its trained models support
    deviations: tuple[str, ...] = ()  # from the authors' code; written into every training card
    # deviations of one option value, written into a card only where the options in force have that value:
    # ((option, value), sentence)
    option_deviations: tuple[tuple[tuple[str, object], str], ...] = ()
    max_steps: int | None = None  # None: any number of PST steps
    dev_in_training: bool = False  # selects its weights on STS-B dev while training (its train job reads SentEval)
    variants: dict[str, Variant] | None = None  # ``variant`` in its block picks one; it fills options without a default
    # forward (and backward) passes of the encoder over the batch's sentences per optimiser step: each pass adds its
    # layers' launches to a GPU step's latency and its activations to the peak memory (pipeline/requests.py)
    encoder_passes: int = 1
    costs: TrainingCosts = field(default_factory=TrainingCosts)  # what the cost model asks (TrainingCosts)

    def __post_init__(self):
        if not re.fullmatch(r"[a-z][a-z0-9_]*", self.name):
            raise ValueError(f"method name {self.name!r}: expected lowercase letters, digits and _")
        if self.target != ENTRY_SPACE and (not re.fullmatch(TARGET_PATTERN, self.target)
                                           or re.fullmatch(SPACE_PATTERN, self.target)):
            raise ValueError(f"method {self.name}: target {self.target!r} must be a plain name and not an entry space")
        if not (isinstance(self.encoder_passes, int) and self.encoder_passes >= 1):
            raise ValueError(f"method {self.name}: encoder_passes must be an integer >= 1, got {self.encoder_passes!r}")
        unknown = set(self.commands) - set(COMMANDS)
        if unknown:
            raise ValueError(f"method {self.name}: unknown commands {sorted(unknown)}; expected some of {COMMANDS}")

    @property
    def uses_entry_space(self) -> bool:
        """Trains against a frozen entry space built by the previous step (its training job's ``space`` input)."""
        return self.target == ENTRY_SPACE

    def output_classes(self, entries: int, vocabulary: int) -> int:
        """Classes its output layer scores for a dataset of ``entries`` and a model of ``vocabulary`` tokens (0:
        in-batch contrast, no output layer)."""
        classes = self.costs.classes or (ENTRIES if self.uses_entry_space else IN_BATCH)
        return {ENTRIES: entries, VOCABULARY: vocabulary, IN_BATCH: 0}[classes]

    def dev_scorings_every(self, options: dict) -> int:
        """Optimiser steps between its STS-B dev scorings while training, under its resolved ``options`` (0: none)."""
        return (options.get("select_every") or 0) if self.dev_in_training else 0

    def targets(self, step: dict) -> list[str]:
        """The candidate targets of a run's step: its entry spaces, or the method's fixed target."""
        return list(step["spaces"]) if self.uses_entry_space else [self.target]

    def config_key(self, option: str = "") -> str:
        """The config key users set for this method (``config: methods.<name>[.<option>]``)."""
        return f"config: methods.{self.name}" + (f".{option}" if option else "")

    def options_schema(self) -> dict:
        """The JSON schema of ``methods.<name>``."""
        return {"type": "object", "description": self.options_source or self.paper, "properties": self.options,
                "additionalProperties": False, "default": {}}

    def training_card(self, options: dict | None = None) -> dict:
        """What every model this method trains records about the method (and the variant ``options`` name)."""
        resolved = self.options_in_force(options or {})  # the option_deviations of the options in force
        card = {"method": self.name, "paper": self.paper, "deviations": [
            *self.deviations, *(text for (name, value), text in self.option_deviations if resolved.get(name) == value)]}
        variant = None if options is None else self.variant_of(options)
        if variant is not None:
            card.update(variant=options["variant"], variant_source=variant.source)
            card["deviations"] += list(variant.deviations)
        return card

    def variant_of(self, options: dict) -> Variant | None:
        """The variant ``options`` (a ``methods.<name>`` block) picks; None for a method without variants."""
        if not self.variants:
            return None
        name = options.get("variant")
        if name not in self.variants:
            raise DefSentError(self.config_key("variant"), f"unknown variant {name!r}; expected one of "
                                                          f"{list(self.variants)}")
        return self.variants[name]

    def options_in_force(self, options: dict) -> dict:
        """A ``methods.<name>`` block completed by the schema's defaults and its variant's."""
        defaults = {name: spec["default"] for name, spec in self.options.items() if "default" in spec}
        return self.resolved_options({**defaults, **options})

    def resolved_options(self, options: dict) -> dict:
        """``options`` with the chosen variant's defaults for every option the block leaves out."""
        variant = self.variant_of(options)
        return dict(options) if variant is None else {**variant.options, **options}

    def transductive(self, options: dict) -> bool:
        """Whether a run with this ``methods.<name>`` block trains on the evaluation sets' own sentences."""
        return self.resolved_options(options).get("corpus") in TRANSDUCTIVE_CORPORA

    def run_deviations(self, options: dict, **run) -> list[str]:
        """How a run's resolved ``options`` and its own settings (``lr=``, ``batch_size=``, ``pooling=``) depart
        from its variant's published ones, one sentence each (recorded in the training card)."""
        variant = self.variant_of(options)
        if variant is None:
            return []
        chosen = {**options, **run}
        return [f"{name} {chosen[name]!r} where the {options['variant']} variant's authors used {published!r}"
                for name, published in {**variant.options, **variant.run}.items()
                if name in chosen and chosen[name] != published]


def without_defaults(options: dict, names: set[str] | list[str], note: str) -> dict:
    """``options`` (JSON-schema properties) with no schema default for ``names`` (a variant supplies them);
    ``note`` is added to their descriptions."""
    require_known(options, names)
    return {name: ({k: v for k, v in spec.items() if k != "default"}
                   | {"description": (spec.get("description", "") + " " + note).strip()})
            if name in names else spec for name, spec in options.items()}


def with_defaults(options: dict, **defaults) -> dict:
    """``options`` (JSON-schema properties) with other ``default`` values for some of them."""
    require_known(options, defaults)
    return {name: {**spec, "default": defaults[name]} if name in defaults else spec for name, spec in options.items()}


def require_known(options: dict, names: Iterable[str]) -> None:
    """A declaration's error for option names that ``options`` (JSON-schema properties) does not have."""
    unknown = set(names) - set(options)
    if unknown:
        raise ValueError(f"no such options: {sorted(unknown)}")
