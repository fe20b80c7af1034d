"""The workflow's identities and paths, in one place: rules, targets and tests use only this module.

* :class:`EncoderId` names every encoder of the DAG: a configured base model (``minilm``), a run step's
  dev-selected model (``default.step2``) or one trained candidate (``default.step3.amp.ica.seed0``).
* The path functions give every result file; called with wildcard names (``"{run}"``) they give the rules'
  output patterns, so each template is written once.
* :func:`canonical` gives rule params one form: Snakemake compares a job's params by ``repr``, which lists a mapping's
  keys in insertion order, so the same config with its keys in another order would re-plan every job. Mappings are
  rebuilt with sorted keys (recursively; lists keep their order: their order is a value).

What a config implies (which encoders, candidates and files) is :mod:`defsent_plus.pipeline.plan`'s.
Light on purpose (no torch): Snakemake imports it while parsing.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from inspect import Parameter, Signature
from pathlib import Path
from string import Formatter
from typing import Any, NoReturn

from defsent_plus.acquisition.catalog import CATALOG
from defsent_plus.errors import DefSentError
from defsent_plus.names import (
    BENCHMARKS,
    OXFORD_SPLITS,
    SENTENCE_SETS,
    SPACE_PATTERN,
    TARGET_PATTERN,
    WORDNET_DATA_FILES,
    alternatives,
)
from defsent_plus.pipeline.snakemake_api import PREFIX_VARIABLE

NAME = r"[A-Za-z0-9_-]+"  # model, run, dataset and subset names (also the schema's property-name pattern)
STEP_NAME = re.compile(
    rf"^(?P<run>{NAME})\.step(?P<step>[1-9]\d*)(?:\.(?P<space>{TARGET_PATTERN})\.seed(?P<seed>\d+))?$")
ENCODER_PATTERN = rf"{NAME}|{NAME}\.step[1-9]\d*(\.{TARGET_PATTERN}\.seed\d+)?"
MODELS_DIR = "resources/models"
DATA_DIR = "data"
DEFAULT_RESULTS = "results"  # the results folder of the working directory's config.yaml
DEFAULT_CONFIG = "config.yaml"


NAME_FORMATS = {"base": "{model}", "selected": "{run}.step{step}", "candidate": "{run}.step{step}.{space}.seed{seed}"}


@dataclass(frozen=True)
class EncoderId:
    """One encoder of the DAG. Exactly one of: ``model`` (a configured base model); ``run`` + ``step`` (that
    step's dev-selected model); ``run`` + ``step`` + ``space`` + ``seed`` (one trained candidate)."""

    model: str | None = None
    run: str | None = None
    step: int | None = None
    space: str | None = None
    seed: int | None = None

    @classmethod
    def base(cls, model: str) -> EncoderId:
        return cls(model=model)

    @classmethod
    def selected(cls, run: str, step: int) -> EncoderId:
        return cls(run=run, step=int(step))

    @classmethod
    def candidate(cls, run: str, step: int, space: str, seed: int) -> EncoderId:
        return cls(run=run, step=int(step), space=space, seed=int(seed))

    @property
    def kind(self) -> str:
        """``base``, ``selected`` or ``candidate``."""
        if self.model is not None:
            return "base"
        return "selected" if self.space is None else "candidate"

    @property
    def name(self) -> str:
        """The name in result paths and wildcards."""
        return NAME_FORMATS[self.kind].format(**vars(self))

    @classmethod
    def parse(cls, name: str) -> EncoderId:
        """The inverse of :attr:`name`."""
        if re.fullmatch(NAME, name):
            return cls.base(name)
        match = STEP_NAME.match(name)
        if match is None:
            raise ValueError(f"not an encoder name: {name!r} (expected <model>, <run>.step<k> or "
                             f"<run>.step<k>.<space>.seed<s>)")
        run, step, space, seed = match.group("run", "step", "space", "seed")
        return cls(run=run, step=int(step), space=space, seed=None if seed is None else int(seed))

    def __str__(self) -> str:
        return self.name


WILDCARDS = {  # the workflow's wildcard_constraints
    "run": NAME,
    "dataset": NAME,
    "model": NAME,
    "encoder": ENCODER_PATTERN,
    "space": SPACE_PATTERN,  # an entry space; a candidate's <space> is a target (rule train widens it)
    "step": r"[1-9]\d*",
    "template": NAME,
    "seed": r"\d+",
    "benchmark": alternatives(tuple(b for b in BENCHMARKS if b != "dev")),
    "sentences": alternatives(SENTENCE_SETS),
}


# ------------------------------------------------------------------------------------------------ folders
# A config's results, logs and benchmarks lie in folders of its own, so two configs run in one checkout never
# overwrite each other's files; acquired data (data/) and pinned models (resources/models/) are shared.


@dataclass(frozen=True)
class OutputFolders:
    """Where one config's results, logs and benchmarks go (relative to the working directory)."""

    results: str = DEFAULT_RESULTS
    logs: str = "logs"
    benchmarks: str = "benchmarks"

    @classmethod
    def of(cls, results: str) -> OutputFolders:
        """The folders of the results folder ``results``: its logs and benchmarks beside it, named after it
        (``results`` -> ``logs``, ``benchmarks``; ``results-bert-base`` -> ``logs-bert-base``, ...; ``exp/a`` ->
        ``exp/a-logs``, ...), so they never lie inside a results folder (which holds no timing)."""
        results = results.rstrip("/")
        folder, _, name = results.rpartition("/")
        suffix = name.removeprefix(DEFAULT_RESULTS)
        companion = {kind: (kind + suffix if name.startswith(DEFAULT_RESULTS) else f"{name}-{kind}")
                     for kind in ("logs", "benchmarks")}
        return cls(results, **{kind: f"{folder}/{path}" if folder else path for kind, path in companion.items()})


FOLDERS = OutputFolders()


def use_results_dir(results: str) -> OutputFolders:
    """Point every path function at the results folder ``results`` (and its logs and benchmarks folders): the
    workflow calls it while parsing, with the folder :func:`results_dir_of` chose; returns the folders."""
    global FOLDERS
    if not results or results.startswith("/") or ".." in results.split("/"):
        raise ValueError(f"results_dir: {results!r}: expected a folder inside the working directory")
    FOLDERS = OutputFolders.of(results)
    return FOLDERS


def results_dir_of(configured: str | None, configfiles: Iterable[str | Path], workdir: str | Path,
                   workflow_root: str | Path | None = None) -> str:
    """A config's results folder: config ``results_dir`` when set; else ``results`` for the working directory's or
    the workflow's own ``config.yaml`` (the Snakefile's default, also when no --configfile is given) and
    ``results-<stem>`` for another config file (``results-bert-base`` for configs/bert-base.yaml; several: their
    stems joined by ``+``)."""
    if configured:
        return configured
    defaults = {Path(folder, DEFAULT_CONFIG).resolve() for folder in (workdir, workflow_root) if folder is not None}
    stems = [Path(file).stem for file in configfiles if Path(workdir, file).resolve() not in defaults]
    return f"{DEFAULT_RESULTS}-{'+'.join(stems)}" if stems else DEFAULT_RESULTS


def canonical(value: Any) -> Any:
    """``value`` with every mapping's keys sorted, recursively (tuples become lists)."""
    if isinstance(value, Mapping):
        return {key: canonical(value[key]) for key in sorted(value, key=str)}
    if isinstance(value, list | tuple):
        return [canonical(item) for item in value]
    return value


def canonical_of(function: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A params function (of the job's wildcards) whose value is :func:`canonical`."""
    return lambda wildcards: canonical(function(wildcards))


def digest(value: Any, length: int = 12) -> str:
    """A short SHA-256 of :func:`canonical` ``value`` as JSON: the same for any key order."""
    return hashlib.sha256(json.dumps(canonical(value), sort_keys=True, default=str).encode()).hexdigest()[:length]


FOLDER_SETTINGS = (("resume", "area"), ("logging", "dir"))  # config keys whose paths may name {results} or {logs}


def place_folder_settings(config: dict) -> None:
    """``{results}`` and ``{logs}`` in config ``resume.area`` and ``logging.dir`` (their defaults name them) made
    this config's folders, in place."""
    for block, key in FOLDER_SETTINGS:
        value = config.get(block, {}).get(key)
        if isinstance(value, str):
            config[block][key] = value.replace("{results}", FOLDERS.results).replace("{logs}", FOLDERS.logs)


# ------------------------------------------------------------------------------------------------ paths


def data_dir(name: str) -> str:
    """A dataset acquired by rule acquire_data (SentEval's layout, the Oxford data)."""
    return f"{DATA_DIR}/{name}"


def acquired_sources(sources: list[dict]) -> dict[str, str]:
    """The acquired datasets (data/<name>) that dictionary sources read, as rule inputs by dataset name."""
    return acquired_data(source.get("path") for source in sources)


SOURCES_KEY = "config: dictionary.sources"
SOURCE_FILES = {  # what a dictionary source's reader opens under its configured path ("": the path itself)
    "oxford": OXFORD_SPLITS,
    "defsentplus": ("",),
    "tsv": ("",),
    "wordnet": tuple(f"corpora/wordnet/{name}" for name in WORDNET_DATA_FILES),  # an nltk_data root's WordNet
}
WORDNET_ZIP = "corpora/wordnet.zip"  # what nltk reads from an nltk_data root without the unpacked folder


def dictionary_inputs(sources: list[dict]) -> dict[str, str | list[str]]:
    """Every file the dictionary sources read, as the rule's inputs: an acquired dataset's folder (data/<name>,
    made by rule acquire_data) by its name, any other source's files as ``source_<name>``. A file that does not
    exist is an error naming the source's config key. Not declared: data inside an installed package (a GCIDE
    source without a path, tracked by the package's version) and WordNet on nltk's own search path (no path)."""
    inputs: dict[str, str | list[str]] = dict(acquired_sources(sources))
    for i, source in enumerate(sources):
        path = source.get("path")
        if path and not acquired_data([path]):
            inputs[f"source_{source.get('name', source['type'])}"] = source_files(source, f"{SOURCES_KEY}[{i}].path")
    return inputs


def source_files(source: dict, key: str) -> list[str]:
    """The files a source with a path (not an acquired dataset) reads, each checked to exist (under a module's
    prefix, where its jobs read them, when the workflow is a module)."""
    root, kind, name = Path(source["path"]), source["type"], source.get("name", source["type"])
    if kind == "gcide":
        files = sorted(str(root / file.name) for file in on_disk(root).glob("words_*.json"))
        return files or missing_source(key, name, on_disk(root), "a folder of GCIDE words_*.json files")
    if kind == "wordnet" and zipped_wordnet_only(root):
        return [str(root / WORDNET_ZIP)]
    files = [root / file if file else root for file in SOURCE_FILES[kind]]
    for file in files:
        if not on_disk(file).is_file():
            missing_source(key, name, on_disk(file), SOURCE_EXPECTED[kind])
    return [str(file) for file in files]


def zipped_wordnet_only(root: Path) -> bool:
    """Whether an nltk_data root holds WordNet as nltk's zip only (no unpacked ``corpora/wordnet`` folder)."""
    return not on_disk(root / "corpora" / "wordnet").is_dir() and on_disk(root / WORDNET_ZIP).is_file()


def on_disk(path: Path) -> Path:
    """Where a path of the config lies while planning: a relative one under a module's prefix, when the workflow is
    a module (its jobs work there, :mod:`defsent_plus.pipeline.snakemake_api`)."""
    prefix = os.environ.get(PREFIX_VARIABLE)
    return Path(prefix) / path if prefix and not path.is_absolute() else path


SOURCE_EXPECTED = {  # what each source type's path must hold
    "oxford": f"a folder holding {', '.join(OXFORD_SPLITS)}",
    "defsentplus": "the DefSent+ release's Ox+WN.csv",
    "tsv": "a file of entry<TAB>definition lines",
    "wordnet": "an nltk_data root holding corpora/wordnet: set the key to one, or run `defsent-plus setup-wordnet "
               "--target <dir>`",
}


def missing_source(key: str, name: str, path: Path, expected: str) -> NoReturn:
    raise DefSentError(key, f"source {name!r}: {path} not found (expected {expected})")


def acquired_data(paths: Iterable[str | None]) -> dict[str, str]:
    """The acquired datasets (data/<name>) that ``paths`` lie in (or are), by dataset name."""
    paths = [str(path) for path in paths if path]
    return {name: data_dir(name) for name in CATALOG
            if any(path == data_dir(name) or path.startswith(data_dir(name) + "/") for path in paths)}


def pinned_model(model: str) -> str:
    """The pinned copy of a configured model (rule pin_model)."""
    return f"{MODELS_DIR}/{model}"


def results_path(template: str, doc: str, **defaults: str) -> Callable[..., str]:
    """A path function of a file in this config's results folder (read at each call: :func:`use_results_dir`):
    ``template``'s fields are its parameters, in their order (an encoder: an :class:`EncoderId` or its name),
    ``defaults`` those a caller may leave out; ``doc`` says what the file holds."""
    fields = dict.fromkeys(name for _, name, _, _ in Formatter().parse(template) if name)
    signature = Signature([Parameter(name, Parameter.POSITIONAL_OR_KEYWORD, default=defaults.get(name, Parameter.empty))
                           for name in fields])

    def path(*args: Any, **kwargs: Any) -> str:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return f"{FOLDERS.results}/" + template.format(**bound.arguments)

    path.__signature__ = signature
    path.__doc__ = doc
    return path


# The layout of a results folder: one path function per kind of file.
dictionary_file = results_path("dictionary/{name}", "Dataset a, b, c or stats.tsv of the dictionary stage.")
subset_file = results_path("dictionary/subsets/{subset}.{suffix}", "A named subset (``parquet``) or its held-out "
                           "queries (``queries.parquet``).", suffix="parquet")
space_meta = results_path("entry_spaces/{encoder}/{dataset}/entry_space.json", "What built the AC/AMP spaces "
                          "(encoder path, dataset and its SHA-256).")
space_file = results_path("entry_spaces/{encoder}/{dataset}/{space}.{suffix}", "One entry space (``npy``) or a "
                          "transform's record (``json``).", suffix="npy")
isotropy_file = results_path("entry_spaces/{encoder}/{dataset}/isotropy.json", "Isotropy metrics of the analysed "
                             "spaces an encoder built from a dataset.")
space_plot = results_path("entry_spaces/{encoder}/{dataset}/plots/{space}.png", "The SVD/PCA plot of one entry "
                          "space.")
candidate_file = results_path("{run}/step{step}/{space}/seed{seed}/{name}", "``model`` (the trained encoder's "
                              "directory), ``train.json`` (its training summary) or ``metrics.tsv`` (its per-step "
                              "metrics, defsent_plus.training.metrics) of one trained candidate of a PST step.")
best_json = results_path("{run}/step{step}/best.json", "The step's selection (checkpoint select_best): the winning "
                         "candidate and every candidate's dev score.")
best_dir = results_path("{run}/step{step}/best", "A copy of the step's winning model, for users.")
pruned_record = results_path("{run}/step{step}/pruned.json", "What ``selection.keep_weights: selected`` deleted of a "
                             "step's candidates (rule prune_candidates).")
embedding_file = results_path("embeddings/{encoder}/{sentences}.{pooling}.{suffix}", "One encoder's stored "
                              "embeddings of a sentence set with one pooling (``npy``) or their record (``json``).",
                              suffix="npy")
mteb_dir = results_path("mteb/{encoder}/{pooling}", "MTEB's results folder of one encoder and pooling "
                        "(``results/<model>/<revision>/<task>.json`` inside).")
mteb_check = results_path("mteb/{encoder}/{pooling}.check.tsv", "MTEB's STS scores beside this project's, per task, "
                          "for one encoder and pooling.")
score_file = results_path("eval/{encoder}/{benchmark}_{pooling}.{suffix}", "One encoder's scores on ``sts`` or "
                          "``senteval`` with one pooling (``json``); STS's per-pair similarities (``pairs.parquet``).",
                          suffix="json")
dev_file = results_path("eval/{encoder}/dev.{suffix}", "One encoder's STS-B dev score (the selection's pooling and "
                        "options); its per-pair similarities (``pairs.parquet``).", suffix="json")
run_file = results_path("{run}/eval/{name}", "A run's tables and plots (``sts.tsv``, ``steps.png``, "
                        "``reverse_dictionary.json``, ...).")
compare_file = results_path("compare/{name}", "A table of every run side by side (``sts.tsv``, "
                            "``reverse_dictionary.md``, ...).")
baselines_file = results_path("baselines/{encoder}/{name}", "An encoder's training-free grid: ``scores.tsv``, "
                              "``summary.md``, ``layers.png``.")
baseline_cache = results_path("baselines/{encoder}/cache/{template}", "The sentence embeddings one encoder gave with "
                              "one template, one directory per layer set.")
fit_corpus_file = results_path("baselines/fit_corpus.txt", "The baselines' fit corpus, one sentence a line.")


def trained_model(candidate: EncoderId) -> str:
    """A candidate's trained encoder (:data:`candidate_file` ``model``)."""
    return candidate_file(candidate.run, candidate.step, candidate.space, candidate.seed, "model")


def train_summary(candidate: EncoderId) -> str:
    """A candidate's training summary."""
    return candidate_file(candidate.run, candidate.step, candidate.space, candidate.seed, "train.json")


def train_metrics(candidate: EncoderId) -> str:
    """A candidate's per-step metrics table."""
    return candidate_file(candidate.run, candidate.step, candidate.space, candidate.seed, "metrics.tsv")


def log_file(*parts: str) -> str:
    return f"{FOLDERS.logs}/" + "/".join(str(part) for part in parts) + ".log"


def benchmark_file(*parts: str) -> str:
    """A job's Snakemake benchmark (wall seconds, peak memory, CPU time: what the cost sheet reads), beside its log."""
    return f"{FOLDERS.benchmarks}/" + "/".join(str(part) for part in parts) + ".tsv"


def work_clock_file(*parts: str) -> str:
    """The seconds a job's own work took (without Python's start, imports and loading), beside its benchmark: where
    a job's wall time is mostly its start, the cost sheet's rate comes from this clock (``benchmarks/``, kept out of
    ``results/``, so results stay free of timings)."""
    return work_clock_beside(benchmark_file(*parts))


def log_beside(benchmark: str) -> str:
    """The log of the job whose benchmark is ``benchmark``: every rule names both by the same parts (a test checks
    it), so Snakemake's record of a job's outputs (kept with its log) is found from its benchmark."""
    return log_file(benchmark.removeprefix(f"{FOLDERS.benchmarks}/").removesuffix(".tsv"))


def work_clock_beside(benchmark: str) -> str:
    """The work clock of the job whose benchmark is ``benchmark``."""
    return benchmark.removesuffix(".tsv") + ".work.json"
