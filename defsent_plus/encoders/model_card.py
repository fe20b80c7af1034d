"""A sentence-transformers model card (README.md) for an exported encoder, from what the workflow recorded.

The card reads the model's training card (method, paper, dataset, entry space, deviations, provenance), the
candidate's ``train.json`` (hyperparameters, steps, loss) and, for a run's dev-selected model
(``results/<run>/step<k>/best``), the run's score tables (``eval/sts.tsv`` with intervals,
``eval/reverse_dictionary.tsv``). Its default title is the run and step; its ``base_model`` is the public Hub id of
the model the training chain started from (a local model has none: the field is left out and the text says so).
Whatever is missing is said, not invented.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from defsent_plus.io import read_json, read_tsv_table
from defsent_plus.model_specs import SOURCE_CARD, public_model_id, spec_kind
from defsent_plus.names import PROMPT_TEMPLATE, TRAINING_CARD
from defsent_plus.recorded_paths import located, model_folders, training_card

STS_TASKS = ("STS12", "STS13", "STS14", "STS15", "STS16", "STSB", "SICKR", "avg")
RANKING_METRICS = ("mrr", "top1", "top10")
POOLING_TEXT = {
    "cls": "the first token's last hidden state ([CLS] / <s>)",
    "mean": "the attention-masked mean of the last hidden states (special tokens included)",
    "max": "the element-wise max of the last hidden states over the non-padding tokens",
    "prompt": f"the last hidden state at the mask token of PromptBERT's template `{PROMPT_TEMPLATE}`",
}


def candidate_summary(model_dir: Path) -> dict:
    """The train.json of the candidate a model directory is (``<candidate>/model``) or is a copy of (``best``)."""
    if (model_dir.parent / "train.json").is_file():
        return read_json(model_dir.parent / "train.json")
    best = model_dir.parent / "best.json"
    if model_dir.name == "best" and best.is_file():
        summary = Path(read_json(best)["best"]["model"]).parent / "train.json"
        return read_json(summary) if summary.is_file() else {}
    return {}


def run_scores(model_dir: Path) -> tuple[pd.DataFrame | None, pd.DataFrame | None]:
    """For a run's dev-selected model (``results/<run>/step<k>/best``): the dev-selected rows of step ``k`` in the
    run's STS table, and its trained model's ranking rows; (None, None) for any other model."""
    step = re.fullmatch(r"step(\d+)", model_dir.parent.name)
    eval_dir, sts, ranking = model_dir.parent.parent / "eval", None, None
    if model_dir.name != "best" or not step:
        return sts, ranking
    if (eval_dir / "sts.tsv").is_file():
        table = read_tsv_table(eval_dir / "sts.tsv")
        selected = table["dev_selected"].astype(str) == "True"
        sts = table[selected & (table["step"].astype(str) == str(int(step.group(1))))]
    if (eval_dir / "reverse_dictionary.tsv").is_file():
        table = read_tsv_table(eval_dir / "reverse_dictionary.tsv")
        ranking = table[table["model"] == "trained"]
    return sts, ranking


def interval_cell(row: pd.Series, name: str, digits: int = 2) -> str:
    value = f"{float(row[name]):.{digits}f}"
    if f"{name}_low" in row and pd.notna(row[f"{name}_low"]):
        value += f" [{float(row[f'{name}_low']):.{digits}f}, {float(row[f'{name}_high']):.{digits}f}]"
    return value


def sts_section(rows: pd.DataFrame | None, pooling: str) -> list[str]:
    """The STS row of the exported pooling, else the evaluated poolings' rows under a warning."""
    if rows is None or rows.empty:
        return ["No STS scores were found for this model (only a run's dev-selected `results/<run>/step<k>/best` "
                "has them in `results/<run>/eval/sts.tsv`)."]
    matching = rows[rows["pooling"] == pooling]
    lines = []
    if matching.empty:
        lines = [f"**These scores are not this export's:** the run evaluated this model with "
                 f"{', '.join(rows['pooling'])} pooling, not {pooling} (export with that pooling to get them).", ""]
    shown = rows if matching.empty else matching
    tasks = [t for t in STS_TASKS if t in shown.columns]
    return lines + [f"Spearman × 100 with 95% bootstrap intervals, STS12-16 aggregated "
                     f"`{shown['sts_aggregation'].iloc[0]}` (the workflow's `results/<run>/eval/sts.tsv`):", "",
                     *table(["pooling", *tasks], [[row["pooling"]] + [interval_cell(row, t) for t in tasks]
                                                  for _, row in shown.iterrows()])]


def ranking_section(rows: pd.DataFrame | None) -> list[str]:
    if rows is None or rows.empty:
        return []
    columns = ("protocol", "split", "scoring", "candidates", "queries")
    cells = [[str(row[c]) for c in columns] + [interval_cell(row, m, 4 if m == "mrr" else 2) for m in RANKING_METRICS]
             for _, row in rows.iterrows()]
    return ["", "Reverse dictionary on held-out entries (MRR, top-1 and top-10 accuracy in %, 95% intervals):", "",
            *table([*columns, *RANKING_METRICS], cells)]


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A markdown table's lines."""
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header), *("| " + " | ".join(r) + " |" for r in rows)]


def model_card(model_dir: str | Path, pooling: str, name: str | None = None) -> str:
    """The README.md of an exported model: front matter, usage, training, scores, deviations, provenance."""
    model_dir = Path(model_dir)
    card, summary, (sts, ranking) = training_card(model_dir), candidate_summary(model_dir), run_scores(model_dir)
    start = starting_model(model_dir, card)
    method = card.get("method", "none (an untrained model)")
    name = name or default_title(model_dir)
    remote = ", trust_remote_code=True" if pooling == "prompt" else ""
    lines = ["---", "library_name: sentence-transformers", "pipeline_tag: sentence-similarity",
             "tags: [sentence-transformers, sentence-similarity, feature-extraction, defsent-plus"
             + (f", {method}]" if card.get("method") else "]"),
             *([f"base_model: {start.public_id}"] if start.public_id else []), "---", "", f"# {name}", "",
             f"A sentence encoder trained with **{method}** by the defsent-plus workflow "
             f"({card.get('paper', 'no paper recorded')}), starting from {start.text()}. Its sentence vector is "
             f"{POOLING_TEXT[pooling]}.", "", "## Usage", "", "```python",
             "from sentence_transformers import SentenceTransformer", "",
             f'model = SentenceTransformer("path/to/this/directory"{remote})',
             'vectors = model.encode(["a long-necked african animal", "the dark time of day"])', "```", ""]
    if pooling == "prompt":
        lines += ["The prompt pooling is a module of its own (`defsent_prompt.py` in this directory): "
                  "sentence-transformers >= 6 loads it only with `trust_remote_code=True`.", ""]
    lines += ["## Training", ""] + training_lines(card, summary) + ["", "## Evaluation", ""]
    lines += sts_section(sts, pooling) + ranking_section(ranking)
    lines += ["", "## Deviations from the paper and its authors' code", ""]
    lines += [f"- {d}" for d in card.get("deviations", [])] or ["None recorded."]
    lines += ["", "## Provenance", ""]
    lines += [f"- {key}: {value}" for key, value in card.get("provenance", {}).items()] or ["None recorded."]
    return "\n".join(lines) + "\n"


TITLES = (  # a model's place in the workflow's results -> the card's default title
    (re.compile(r"(?P<run>[^/]+)/step(?P<step>\d+)/best"), "{run}, step {step} (dev-selected)"),
    (re.compile(r"(?P<run>[^/]+)/step(?P<step>\d+)/(?P<space>[^/]+)/seed(?P<seed>\d+)/model"),
     "{run}, step {step}, {space} seed {seed}"),
)


def default_title(model_dir: str | Path) -> str:
    """The run and step of a model of the workflow's results (``<run>/step<k>/best``: dev-selected; a candidate's
    ``<run>/step<k>/<space>/seed<s>/model``), else its directory's name."""
    path = Path(model_dir).resolve().as_posix()
    for pattern, title in TITLES:
        match = pattern.search(path)
        if match and match.end() == len(path):
            return title.format(**match.groupdict())
    return Path(model_dir).resolve().name


@dataclass(frozen=True)
class StartingModel:
    """The model a trained encoder's trainings started from: ``recorded`` as the workflow named it (a spec, else a
    path), its public Hub id when one is known, and the trained models in between (``start_from`` chains)."""

    recorded: str
    public_id: str | None = None
    through: tuple[str, ...] = ()

    def text(self) -> str:
        via = f" (by way of {', '.join(f'`{m}`' for m in self.through)})" if self.through else ""
        if self.public_id:
            return f"`{self.public_id}`{via}"
        return (f"`{self.recorded}`{via}, which has no known public id on the Hugging Face Hub (a local model, or "
                "one the workflow cannot trace), so this card declares no `base_model`")


def starting_model(model_dir: str | Path, card: dict) -> StartingModel:
    """Follow the training cards' ``base_model`` from ``model_dir`` to the model the chain started from: a pinned
    model's recorded spec (``hub:``, ``package:`` or a local directory), or a spec the card names itself."""
    base, folders, through = card.get("base_model"), model_folders(model_dir), []
    while base and spec_kind(base)[0] == "local" and base not in through:
        path = located(base, folders)
        if path is not None and (path / SOURCE_CARD).is_file():
            base = read_json(path / SOURCE_CARD).get("spec", base)
            break
        if path is None or not (path / TRAINING_CARD).is_file():
            return StartingModel(base, None, tuple(through))
        through.append(base)
        base, folders = read_json(path / TRAINING_CARD).get("base_model"), model_folders(path)
    if not base:
        return StartingModel("unknown", None, tuple(through))
    return StartingModel(base, public_model_id(base), tuple(through))


def training_lines(card: dict, summary: dict) -> list[str]:
    if not card:
        return ["No training card: this directory was not trained by the workflow."]
    facts = {"dataset": card.get("dataset"), "entries (classes)": card.get("classes"),
             "entry space": card.get("entry_space"), "training pooling": card.get("pooling"),
             "seed": card.get("seed"), "examples": summary.get("examples"), "optimizer steps": summary.get("steps"),
             "loss first / last": (f"{summary['loss_first']:.4f} / {summary['loss_last']:.4f}"
                                   if "loss_first" in summary else None)}
    lines = [f"- {key}: {value}" for key, value in facts.items() if value is not None]
    if summary.get("config"):
        lines.append("- hyperparameters: " + ", ".join(f"{k}={v}" for k, v in summary["config"].items()))
    fit = card.get("fit") or {}
    if fit.get("fitted") is False:
        lines.append(f"- **fit:** {fit.get('note', 'the training did not fit its objective')}")
    return lines
