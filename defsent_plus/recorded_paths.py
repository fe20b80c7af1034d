"""Paths a workflow file records, found again from any folder.

A trained model's training card records its dataset, entry space and base model, an entry space's record the
encoder that built it: paths relative to the workflow folder the job ran in (so that two checkouts write the same
files, byte for byte). They are looked for under the nearest folder above the model under which one of them exists,
then under the current folder.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from defsent_plus.errors import DefSentError


def workflow_folder(anchor: str | Path, recorded: Iterable[str | None]) -> Path | None:
    """The nearest folder above ``anchor`` (a model or a file inside the workflow's results) under which one of the
    ``recorded`` relative paths exists; None when there is none (the model was copied out of its workflow)."""
    relative = [Path(p) for p in recorded if p and not Path(p).is_absolute()]
    for folder in Path(anchor).resolve().parents:
        if any((folder / path).exists() for path in relative):
            return folder
    return None


def search_folders(anchor: str | Path, recorded: Iterable[str | None]) -> list[Path]:
    """Where a relative recorded path is looked for, in order: the anchor's workflow folder, the current folder."""
    found = workflow_folder(anchor, recorded)
    return list(dict.fromkeys([*([found] if found else []), Path.cwd().resolve()]))


def tried_paths(recorded: str | Path, folders: Iterable[Path]) -> list[Path]:
    """``recorded`` itself when absolute, else under each of ``folders``."""
    path = Path(recorded)
    return [path] if path.is_absolute() else list(dict.fromkeys(folder / path for folder in folders))


def located(recorded: str | Path, folders: Iterable[Path]) -> Path | None:
    """The first of :func:`tried_paths` that exists, else None; relative to the current folder when it lies under it
    (as the workflow's own paths are written)."""
    here = Path.cwd().resolve()
    found = next((path for path in tried_paths(recorded, folders) if path.exists()), None)
    return found.relative_to(here) if found is not None and found.is_relative_to(here) else found


def locate(recorded: str | Path, folders: Iterable[Path], where: str | Path, what: str, remedy: str) -> Path:
    """:func:`located`, or an error at ``where`` naming ``what`` was recorded, every path tried and ``remedy``
    (the flags that point at it)."""
    folders = list(folders)
    path = located(recorded, folders)
    if path is None:
        tried = ", ".join(str(p) for p in tried_paths(recorded, folders))
        raise DefSentError(where, f"{what} {recorded} not found (tried {tried}): {remedy}")
    return path


def given_file(path: str | Path, flag: str) -> Path:
    """A file named on the command line by ``flag``, which must exist."""
    if not Path(path).is_file():
        raise DefSentError(f"{flag} {path}", "file not found")
    return Path(path)


def training_card(model_dir: str | Path) -> dict:
    """A trained model's training card, or {} for a model without one."""
    from defsent_plus.io import read_json
    from defsent_plus.names import TRAINING_CARD

    card_path = Path(model_dir) / TRAINING_CARD
    return read_json(card_path) if card_path.is_file() else {}


def dictionary_folder(model_dir: str | Path, default: str) -> str:
    """The dictionary stage's folder of the config that trained a model: the part of its card's dataset path up to
    ``dictionary`` (``results-<config>/dictionary`` for another config's model), else ``default``."""
    parts = Path(training_card(model_dir).get("dataset") or "").parts
    return str(Path(*parts[: parts.index("dictionary") + 1])) if "dictionary" in parts else default


def model_folders(model_dir: str | Path) -> list[Path]:
    """:func:`search_folders` of a trained model: its workflow folder is where the paths its training card records
    (dataset, entry space, base model) exist; a model without a card has only the current folder."""
    card = training_card(model_dir)
    return search_folders(model_dir, [card.get(key) for key in RECORDED_KEYS])


RECORDED_KEYS = ("dataset", "entry_space", "base_model")  # a training card's paths, relative to the workflow folder
