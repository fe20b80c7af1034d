"""The architectures of the hub models the shipped configs name (their ``config.json`` values, shipped in
``architectures/``) and the architecture behind any config's model spec: what the cost model (:mod:`.requests`)
sizes and what a rehearsal (:mod:`defsent_plus.rehearsal.models`) builds with random weights."""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from defsent_plus.errors import DefSentError
from defsent_plus.model_specs import spec_kind
from defsent_plus.pipeline.model_store import resolve_model

TINY_DIMS = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 64}


@dataclass(frozen=True)
class Architecture:
    """A hub model's architecture: its ``config.json`` values and the model class its checkpoint holds."""

    name: str
    config: dict

    @property
    def family(self) -> str:
        return self.config["model_type"]

    @property
    def model_class(self) -> str:
        return self.config["architectures"][0]

    def tiny(self, real_depth: bool = False) -> Architecture:
        """The same family, vocabulary and positions with the tests' tiny dimensions (``real_depth``: and the real
        number of layers)."""
        dims = {**TINY_DIMS, "num_hidden_layers": self.config["num_hidden_layers"]} if real_depth else TINY_DIMS
        return Architecture(f"{self.name}-tiny" + ("-deep" if real_depth else ""), {**self.config, **dims})


def architecture_names() -> list[str]:
    return sorted(p.name.removesuffix(".json") for p in resources.files(__package__).joinpath("architectures")
                  .iterdir() if p.name.endswith(".json"))


def architecture_of(hub_id: str) -> Architecture:
    """The shipped architecture of a hub id (``org/name`` or ``name``, an ``@revision`` ignored)."""
    name = hub_id.partition("@")[0].rsplit("/", 1)[-1]
    if name not in architecture_names():
        raise DefSentError(f"model hub:{hub_id}", f"no shipped architecture for a rehearsal (known: "
                                                  f"{', '.join(architecture_names())}; add its config.json to "
                                                  "defsent_plus/pipeline/architectures/)")
    text = resources.files(__package__).joinpath("architectures").joinpath(f"{name}.json").read_text(encoding="utf-8")
    return Architecture(name, json.loads(text))


def model_architecture(spec: str) -> Architecture:
    """The real architecture behind a config's model spec (a hub id's shipped one, else the model's config.json),
    named after its hub id, package or folder."""
    kind, value = spec_kind(spec)
    if kind == "hub":
        return architecture_of(value)
    path = Path(resolve_model(spec))
    config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    return Architecture(value if kind == "package" else path.name,
                        {**config, "architectures": config.get("architectures") or ["AutoModel"]})
