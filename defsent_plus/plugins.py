"""A registry of declarations (training methods, evaluators): the package's own modules, then those a config names
(``method_plugins``, ``evaluator_plugins``), each a module holding one declaration under a fixed attribute.

The registry is the only list of its kind; everything else asks a declaration by name.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Generic, TypeVar

from defsent_plus.errors import DefSentError

T = TypeVar("T")


class Registry(Generic[T]):
    """Declarations of one kind (``kind``: how errors name it), each the ``attribute`` of a module, an instance of
    ``declared``, named by its ``name``; ``built_in``: the package's own modules; ``config_key``: the plugins' key."""

    def __init__(self, kind: str, attribute: str, declared: type, built_in: Sequence[str], config_key: str):
        self.kind, self.attribute, self.declared = kind, attribute, declared
        self.built_in, self.config_key = tuple(built_in), config_key
        self._loaded: dict[str, T] = {}

    def declaration(self, module: str, where: str | None = None) -> T:
        """The declaration ``module`` holds."""
        where = where or f"config: {self.config_key}"
        try:
            declared = getattr(importlib.import_module(module), self.attribute)
        except (ImportError, AttributeError) as err:
            raise DefSentError(where, f"{module!r} does not declare a declaration of this kind ({self.kind}: a "
                                      f"module with {self.attribute}): {err}") from None
        if not isinstance(declared, self.declared):
            raise DefSentError(where, f"{module}.{self.attribute} is of type {type(declared).__name__}, expected "
                                      f"{self.declared.__name__}")
        return declared

    def load(self, plugins: Sequence[str] = ()) -> None:
        """Register the built-in declarations and those of ``plugins``: exactly these, so a plugin of one config
        is not registered for the next."""
        if not isinstance(plugins, list | tuple) or not all(isinstance(p, str) for p in plugins):
            raise DefSentError(f"config: {self.config_key}", f"expected a list of module names, got {plugins!r}")
        loaded: dict[str, T] = {}
        sources = [*((m, f"the {self.kind} registry") for m in self.built_in),
                   *((m, f"config: {self.config_key}") for m in plugins)]
        for module, where in sources:
            declared = self.declaration(module, where)
            name = declared.name
            if name in loaded and loaded[name] is not declared:
                raise DefSentError(where, f"{module} declares {self.kind} {name!r}, which another module declares")
            loaded[name] = declared
        self._loaded = loaded

    def all(self) -> dict[str, T]:
        """Every registered declaration by name (built-ins first, in registry order)."""
        if not self._loaded:
            self.load()
        return dict(self._loaded)

    def of(self, name: str, where: str) -> T:
        """The registered declaration called ``name``."""
        declared = self.all()
        if name not in declared:
            raise DefSentError(where, f"unknown {self.kind} {name!r}; expected one of {sorted(declared)}")
        return declared[name]
