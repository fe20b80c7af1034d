"""A trained model's entry space extended to a whole dataset, for a reverse-dictionary search of every entry.

A model is trained against the space of its run's dataset (e.g. subset a1k): the AC or AMP vectors of its entries,
built by the step's space encoder, then optionally centred, whitened or ICA-transformed. Every transform of
:mod:`.transforms` is affine, so the fitted map is recovered exactly (to float round-off) by least squares from the
stored base space and the transformed one, and applied to the base vectors of every entry of the larger dataset,
which the same encoder builds with the same poolings (:func:`.entry_space.entry_embeddings`). The base vectors
cost one encoding pass over all the dataset's definitions, so they are cached, keyed by the encoder's weights, the
dataset's content and the maximum length; later queries load them. Entries of the training subset get the vectors
of all their definitions in the larger dataset, held-out reverse-dictionary queries included.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from defsent_plus.dictionary.table import read_dataset
from defsent_plus.errors import DefSentError
from defsent_plus.io import file_sha256, read_json, write_json
from defsent_plus.recorded_paths import located, search_folders
from defsent_plus.spaces.entry_matrix import load_space
from defsent_plus.spaces.entry_space import ENTRY_POOLINGS, write_entry_space

log = logging.getLogger(__name__)

SPACE_META = "entry_space.json"  # beside every base space: the encoder that built it (pipeline.dag.space_meta)
DEFAULT_MAX_LENGTH = 128  # config entry_space.max_length's default, for spaces whose record predates the field
NULL_DIRECTION = 1e-5  # a base direction whose singular value is below this share of the largest is rounding noise
CACHE_VARIABLE = "DEFSENT_PLUS_CACHE"


def default_cache_dir() -> Path:
    """``$DEFSENT_PLUS_CACHE``, else ``$XDG_CACHE_HOME/defsent-plus``, else ``~/.cache/defsent-plus``."""
    if os.environ.get(CACHE_VARIABLE):
        return Path(os.environ[CACHE_VARIABLE])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "defsent-plus"


@dataclass(frozen=True)
class SpaceRecipe:
    """How a trained space was made: ``base`` (ac/amp) vectors by ``encoder_path``, then a fitted affine map."""

    trained: Path  # the space the model was trained against
    base: str
    base_path: Path  # the same dataset's untransformed space
    encoder_path: str
    max_length: int

    @classmethod
    def of(cls, space_path: str | Path) -> SpaceRecipe:
        trained = Path(space_path)
        base = trained.name.split(".")[0]
        if base not in ENTRY_POOLINGS:
            raise DefSentError(trained, f"not an entry space of this workflow: its name starts with {base!r}, "
                                        f"expected one of {sorted(ENTRY_POOLINGS)}")
        meta_path = trained.with_name(SPACE_META)
        if not meta_path.is_file():
            raise DefSentError(meta_path, "no record of the encoder that built this entry space, so it cannot be "
                                          "extended to another dataset")
        meta = read_json(meta_path)
        encoder = meta["encoder_path"]  # relative to the workflow folder: found above the space, else here
        encoder = str(located(encoder, search_folders(trained, [encoder])) or encoder)
        return cls(trained, base, trained.with_name(f"{base}.npy"), encoder,
                   int(meta.get("max_length", DEFAULT_MAX_LENGTH)))


@dataclass(frozen=True)
class AffineMap:
    """``x @ A + b`` for the base vector ``x`` of an entry; fitted on the directions the base space spans."""

    A: np.ndarray
    b: np.ndarray
    null_directions: int  # base directions of rounding noise, left out of the fit (LayerNorm leaves at least one)
    unexplained: float  # share of the transformed space's variance the map does not reproduce

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return (x.astype(np.float64) @ self.A + self.b).astype(np.float32)


def affine_map(source: np.ndarray, target: np.ndarray, where: str | Path) -> AffineMap:
    """The affine map from ``source`` rows to ``target`` rows by least squares on the directions ``source`` spans.

    Encoder spaces have directions of rounding noise (singular value below ``NULL_DIRECTION`` of the largest):
    whitening and ICA blow them up to unit variance, which no map can predict for other entries, so they are left
    out, and the map is accepted when what it leaves unexplained fits in them (half a unit-variance component
    each, plus one half for float32 round-off); a non-affine transform leaves far more."""
    if source.shape[0] <= source.shape[1]:
        raise DefSentError(where, f"{source.shape[0]} entries cannot determine a map of {source.shape[1]} dimensions")
    mean, offset = source.mean(axis=0, dtype=np.float64), target.mean(axis=0, dtype=np.float64)
    centred, target_centred = source.astype(np.float64) - mean, target.astype(np.float64) - offset
    U, s, Vt = np.linalg.svd(centred, full_matrices=False)
    spanned = s > NULL_DIRECTION * s[0]
    A = Vt[spanned].T @ ((U[:, spanned].T @ target_centred) / s[spanned, None])
    unexplained = float(((centred @ A - target_centred) ** 2).sum() / max((target_centred**2).sum(), 1e-300))
    null_directions = int((~spanned).sum())
    allowed = (null_directions + 0.5) / target.shape[1]
    if unexplained > allowed:
        raise DefSentError(where, f"not an affine transform of its base space: the best affine map leaves "
                                  f"{unexplained:.1%} of its variance unexplained (at most {allowed:.1%} is rounding "
                                  "noise), so it cannot be applied to other entries")
    return AffineMap(A, offset - mean @ A, null_directions, unexplained)


def encoder_digest(encoder_path: str | Path) -> str:
    """SHA-256 of an encoder directory's weight and configuration files (its identity for the cache)."""
    folder = Path(encoder_path)
    files = sorted(p for p in folder.iterdir() if p.suffix in (".safetensors", ".json") and p.is_file())
    if not files:
        raise DefSentError(folder, "no encoder weights found")
    return hashlib.sha256("".join(f"{p.name}:{file_sha256(p)}" for p in files).encode()).hexdigest()


@dataclass
class ExtendedSpace:
    """The entries of ``dataset`` and their vectors in a trained model's space (``trained``) and in the base AMP
    space of the same encoder (``amp``, for cosine scoring)."""

    frame: pd.DataFrame
    dataset: Path
    cache: Path
    recipe: SpaceRecipe
    seconds_encoding: float | None  # None: the base vectors came from the cache
    map: AffineMap | None = None  # the transform's recovered map, once :meth:`trained` needed one

    def trained(self) -> np.ndarray:
        """Every entry's vector in the trained space: its base vector through the transform's recovered map."""
        if self.recipe.trained == self.recipe.base_path:
            return self.base(self.recipe.base)
        trained_space = load_space(self.recipe.trained)
        self.map = affine_map(load_space(self.recipe.base_path, len(trained_space)), trained_space,
                              self.recipe.trained)
        log.info("%s: the transform's map, recovered with %d null direction(s) left out, leaves %.2f%% of its "
                 "variance unexplained", self.recipe.trained, self.map.null_directions, 100 * self.map.unexplained)
        return self.map(self.base(self.recipe.base))

    def base(self, name: str) -> np.ndarray:
        return load_space(self.cache / f"{name}.npy", len(self.frame))

    def description(self) -> str:
        how = "encoded now" if self.seconds_encoding is not None else "from the cache"
        mapped = "" if self.map is None else (f", through {self.recipe.trained.name}'s transform recovered as an "
                                              f"affine map ({self.map.unexplained:.2%} of its variance unexplained)")
        return (f"{len(self.frame):,} entries of {self.dataset} (the model's space extended to them: "
                f"{self.recipe.base} vectors by {self.recipe.encoder_path}{mapped}; {how} in {self.cache})")


def extended_space(space_path: str | Path, dataset_path: str | Path, cache_dir: str | Path | None = None,
                   batch_size: int = 128) -> ExtendedSpace:
    """The trained space at ``space_path`` extended to every entry of ``dataset_path`` (base vectors cached)."""
    recipe = SpaceRecipe.of(space_path)
    frame = read_dataset(dataset_path)
    key = {"encoder": encoder_digest(recipe.encoder_path), "dataset": file_sha256(dataset_path),
           "max_length": recipe.max_length}
    folder = Path(cache_dir or default_cache_dir()) / "entry-spaces" / hashlib.sha256(
        json.dumps(key, sort_keys=True).encode()).hexdigest()[:20]
    seconds = None
    if not all((folder / f"{name}.npy").is_file() for name in ENTRY_POOLINGS):  # one encoding pass, then cached
        timings: dict = {}
        write_entry_space(recipe.encoder_path, dataset_path, {name: folder / f"{name}.npy" for name in ENTRY_POOLINGS},
                          folder / SPACE_META, batch_size, recipe.max_length, timings=timings,
                          tf32=False)  # --search's GPU path: not measured with TF32
        seconds = timings["seconds"]
        write_json(folder / "meta.json", {**key, "encoder_path": recipe.encoder_path, "dataset_path": str(dataset_path),
                                          "entries": len(frame), "seconds": round(seconds, 1)})
    return ExtendedSpace(frame, Path(dataset_path), folder, recipe, seconds)
