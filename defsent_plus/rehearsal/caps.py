"""How a rehearsal caps a config's work, and the rehearsal config derived from a real one.

The derived config keeps the real one's runs, methods, steps, spaces, poolings, evaluation and selection, so its DAG
has the real DAG's rules (and one more: the subset of each dataset a run trains on); it replaces each hub model by a
local random model of the same architecture, each dataset that must be acquired by a stand-in, and caps the work
(:class:`Caps`); training batches stay the config's. It records what was capped under ``rehearsal``, which puts a
banner on every table and plot.
"""

from __future__ import annotations

import copy
import math
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from defsent_plus.dictionary.subsets import HeldOut
from defsent_plus.errors import DefSentError
from defsent_plus.model_specs import spec_kind
from defsent_plus.names import HELDOUT_SPLITS
from defsent_plus.pipeline.model_architectures import TINY_DIMS, model_architecture
from defsent_plus.rehearsal import REPO, SCHEMA

DATASETS = ("a", "b", "c")
SUBSET_PREFIX = "rehearsal_"


@dataclass(frozen=True)
class Caps:
    """The work a rehearsal keeps of a real config."""

    seeds: int  # the first seeds of each run
    entries: int  # entries of every dataset a run trains on (caps_for: at least the widest hidden size + ENTRY_MARGIN)
    training_examples: int  # examples (definitions, corpus sentences) per trained candidate
    corpus_sentences: int  # lines of the wiki1m stand-in
    oxford_lines: int | None  # lines of the Oxford stand-in (None: every single-word WordNet entry, about 10^5)
    epochs: int  # at most this many epochs per candidate
    sts_pairs: int  # pairs kept of every STS, STS-B and SICK file
    ica_max_iter: int
    isotropy_pairs: int
    encoding_batch: int  # sentences a batch when encoding (a sorted batch pads to its longest: most of a CPU's time)
    heldout_entries: int = 20  # entries each held-out split of a capped subset keeps at least (keep_heldout_entries)


FIT_CORPUS_SENTENCES = 2000  # the schema's default fit corpus (baselines.fit_corpus.max_sentences)
ENTRY_MARGIN = 64  # entries beyond the widest hidden size (whitening and FastICA need more rows than columns)
SIZES = {
    # full: the real architectures; entries: at least the widest hidden size + ENTRY_MARGIN (caps_for)
    "full": Caps(seeds=1, entries=ENTRY_MARGIN, training_examples=64, corpus_sentences=20000, oxford_lines=None,
                 epochs=2, sts_pairs=3, ica_max_iter=200, isotropy_pairs=20000, encoding_batch=32),
    # tiny: the tests' tiny dimensions and minimal work (the test suite executes a shipped config at this size)
    "tiny": Caps(seeds=1, entries=200, training_examples=16, corpus_sentences=500, oxford_lines=20000, epochs=1,
                 sts_pairs=4, ica_max_iter=50, isotropy_pairs=500, encoding_batch=16),
}


LARGER = "larger"  # the second work size's working directory, inside the first one's
LARGER_FACTORS = (8, 4, 2)  # the second work size, the largest one the rehearsal's time budget allows (runner)
LARGER_ENTRIES = 2  # entries grow less: every definition of a dataset is encoded (entry spaces, DefSent's protocol)
LARGER_STS = 4  # STS pairs grow this many times more: a sentence costs little beside an encoding job's start


def larger_caps(caps: Caps, factor: int) -> Caps:
    """The caps of a rehearsal's second work size: ``factor`` times the training examples, ``LARGER_STS`` ×
    ``factor`` the STS pairs, twice the entries (at most ``factor``) and ``factor`` times the held-out entries (the
    reverse dictionary's queries); everything else the same, so that each job's seconds at the two sizes give its
    start and its rule's rate (defsent_plus.rehearsal.costs)."""
    return replace(caps, training_examples=caps.training_examples * factor,
                   sts_pairs=caps.sts_pairs * factor * LARGER_STS, heldout_entries=caps.heldout_entries * factor,
                   entries=caps.entries * min(factor, LARGER_ENTRIES))


def caps_for(size: str, hidden_sizes: list[int], config: dict | None = None, senteval: Path | None = None) -> Caps:
    """The size's caps, with at least ``ENTRY_MARGIN`` more entries than the widest of the rehearsal's models, and
    as many STS pairs a file as ``config``'s baselines need (:func:`eval_fit_sentences`, counted in the SentEval
    data at ``senteval``)."""
    caps = SIZES[size]
    needed = eval_fit_sentences(config or {}, hidden_sizes)
    pairs = pairs_for_distinct_sentences(senteval, needed, caps.sts_pairs) if needed else caps.sts_pairs
    return replace(caps, entries=max(caps.entries, max(hidden_sizes, default=0) + ENTRY_MARGIN), sts_pairs=pairs)


def pairs_for_distinct_sentences(senteval: Path | None, sentences: int, start: int) -> int:
    """First scored pairs a file (at least ``start``) that give every STS task at least ``sentences`` distinct
    sentences (STS-B test and SICK-R repeat sentences): from half as many pairs as sentences, a tenth more at a time."""
    from defsent_plus.evaluation.sts import STS_TASKS, load_sts_parts

    if senteval is None:
        raise ValueError("counting STS sentences needs the SentEval data")
    parts = {task: load_sts_parts(senteval, task) for task in STS_TASKS}

    def distinct(task: str, pairs: int | None = None) -> int:
        return len({s for part in parts[task] for s in (*part.sentences1[:pairs], *part.sentences2[:pairs])})

    short = [task for task in STS_TASKS if distinct(task) < sentences]
    if short:
        raise DefSentError(senteval, f"STS tasks {short} have fewer than {sentences} distinct sentences, which "
                                     "the baselines' whitening on each task needs")
    pairs = max(start, math.ceil(sentences / 2))
    while any(distinct(task, pairs) < sentences for task in STS_TASKS):
        pairs += max(1, pairs // 10)
    return pairs


def eval_fit_sentences(config: dict, hidden_sizes: list[int]) -> int:
    """Sentences every STS task must keep for the config's baselines: whitening fitted on a task's own sentences
    (a grid of a baseline encoder with ``fit: eval``) needs more than the widest hidden size; 0 without one."""
    baselines = config.get("baselines", {})
    grids = [baselines.get("grids", {}).get(name, {}) for name in baselines.get("encoders", {}).values()]
    whitens = any("eval" in grid.get("fit", []) and any("whiten" in chain.split("+")
                                                          for chain in grid.get("postprocess", [])) for grid in grids)
    return max(hidden_sizes, default=0) + 1 if whitens else 0


def rehearsal_hidden_sizes(config: dict, size: str) -> list[int]:
    """Hidden sizes of the models a rehearsal of ``config`` runs: every model at the tiny size's dimensions, or at
    full size each model's own (hub models as their shipped architectures)."""
    return [TINY_DIMS["hidden_size"] if size != "full" else model_architecture(spec).config["hidden_size"]
            for spec in config.get("models", {}).values()]


def names_layers(config: dict) -> bool:
    """Whether a baselines grid names a layer by a number the tiny two layers do not have apart from the last: a
    tiny rehearsal's models then keep their real depth, which the grid is written for ([5, last] is MiniLM's last
    two)."""
    return any(isinstance(layer, int) and layer >= TINY_DIMS["num_hidden_layers"]
               for grid in config.get("baselines", {}).get("grids", {}).values()
               for layer_set in grid.get("layers", []) for layer in layer_set)


def hub_models(config: dict) -> dict[str, str]:
    """Model name -> hub id of the config's hub models."""
    return {name: value for name, spec in config.get("models", {}).items()
            for kind, value in [spec_kind(spec, f"config: models.{name}")] if kind == "hub"}


def replaced_models(config: dict, size: str) -> dict[str, str]:
    """Model name -> spec of the models a rehearsal replaces by random ones of their architecture: the hub models
    (not to be had offline) at full size, where local and packaged models run as they are; every model at tiny
    size (tiny architectures)."""
    hubs = hub_models(config)
    return {name: spec for name, spec in config.get("models", {}).items() if name in hubs or size != "full"}


def derive(real: dict, *, models: dict[str, Path], standins: dict[str, dict], caps: Caps, source: str,
           size: str) -> dict:
    """The rehearsal config of ``real`` (a config as read, before validation): ``models`` replaces models by local
    directories of random ones (:func:`replaced_models`), ``standins`` are ``data.<name>`` blocks pointing at the
    stand-ins."""
    config = copy.deepcopy(real)
    config["models"] = {**config.get("models", {}), **{name: str(path) for name, path in models.items()}}
    config["data"] = {**config.get("data", {}), **standins}
    for source_block in config["dictionary"]["sources"]:
        path = source_block.get("path")
        if path and not Path(path).is_absolute() and not path.startswith("data/"):
            source_block["path"] = str(REPO / path)  # nltk_data, a user's TSV: the checkout's own
    config["resources"] = {**config.get("resources", {}), "gpu": 0, "threads": "auto"}
    cap_entries(config, caps.entries, caps.heldout_entries)
    # the baselines' fit corpus at most the entry cap (more rows than the widest hidden size, as whitening needs),
    # so that their forward pass grows with the work size too
    corpus = config.setdefault("baselines", {}).setdefault("fit_corpus", {})
    corpus["max_sentences"] = min(corpus.get("max_sentences", FIT_CORPUS_SENTENCES), caps.entries)
    for run in config["runs"].values():
        run["seeds"] = run["seeds"][: caps.seeds]
    cap_method_epochs(config, caps.epochs)
    for section in ("entry_space", "selection", "evaluation"):  # sorted batches of 512 pad to the longest: GPU work
        block = config.setdefault(section, {})
        block["batch_size"] = min(block.get("batch_size", caps.encoding_batch), caps.encoding_batch)
    space = config.setdefault("entry_space", {})
    space["ica"] = {**space.get("ica", {}), "max_iter": caps.ica_max_iter}
    space["isotropy"] = {**space.get("isotropy", {}), "n_pairs": caps.isotropy_pairs}
    config.pop("published", None)  # published numbers are not compared with random weights
    config.pop("results_dir", None)  # a rehearsal's working directory is its own: results/ there (its cost sheet's)
    config["rehearsal"] = {"config": source, "size": size, "caps": asdict(caps),
                           "models": {name: real["models"][name] for name in models}}
    return config


def cap_entries(config: dict, entries: int, heldout_entries: int) -> None:
    """Every run trains on at most ``entries`` entries: a run on a whole dataset gets a subset of it, an existing
    subset keeps at most that many, and its held-out splits at least ``heldout_entries`` each."""
    subsets = config.setdefault("subsets", {})
    for subset in subsets.values():
        subset["max_entries"] = min(subset.get("max_entries") or entries, entries)
        if "heldout" in subset:
            keep_heldout_entries(subset["heldout"], subset["max_entries"], heldout_entries)
    for run in config["runs"].values():
        dataset = run.get("dataset")
        if dataset in DATASETS:
            name = SUBSET_PREFIX + dataset
            subsets.setdefault(name, {"dataset": dataset, "max_entries": entries, "seed": 0})
            run["dataset"] = name
    if not subsets:
        config.pop("subsets")


def keep_heldout_entries(heldout: dict, entries: int, kept: int) -> None:
    """Raise the dev and test fractions of a capped subset to ``kept`` of its ``entries`` where they are below it
    (in place): a split gets a query only from an entry with two definitions, which a few entries may lack."""
    floor = kept / entries
    for split in HELDOUT_SPLITS:
        heldout[split] = max(heldout.get(split, getattr(HeldOut, split)), floor)


def cap_method_epochs(config: dict, epochs: int) -> None:
    """Runs trained for several epochs (ConSERT + SLT-FAI: 10) train at most ``epochs`` (a run's own option)."""
    from defsent_plus.pipeline.config_schema import validated_config
    from defsent_plus.pipeline.plan import Plan

    full = validated_config(copy.deepcopy(config), SCHEMA)
    plan = Plan(full, lambda run, step: {})
    for name, run in config["runs"].items():
        if plan.method(name).resolved_options(plan.method_options(name)).get("epochs", 1) > epochs:
            run.setdefault("options", {})["epochs"] = epochs
