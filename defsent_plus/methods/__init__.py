"""Training methods as plugins: each module of this package declares one :class:`Method` named ``METHOD``.

The registry below is the only list of methods. Everything else (the config schema, the plan, the rules, the
reverse dictionary, the comparison tables, the CLI) asks a declaration, never a method's name. A method from
another package joins through config (``method_plugins: [my_package.my_method]``), without editing this one.
"""

from __future__ import annotations

from defsent_plus.methods.base import ENTRY_SPACE, Method
from defsent_plus.plugins import Registry

__all__ = ["DEFAULT_METHOD", "ENTRY_SPACE", "Method", "all_methods", "load_plugins", "method_of"]

REGISTRY = [  # one line a method: the module that declares it
    "defsent_plus.methods.defsent_plus",
    "defsent_plus.methods.defsent",
    "defsent_plus.methods.simcse",
    "defsent_plus.methods.slt_fai",
]
DEFAULT_METHOD = "defsent_plus"  # what a run trains when it names no method
METHODS: Registry[Method] = Registry("training method", "METHOD", Method, REGISTRY, "method_plugins")


def declaration(module: str, where: str = "config: method_plugins") -> Method:
    """The ``METHOD`` a module declares."""
    return METHODS.declaration(module, where)


def load_plugins(modules: list[str] | tuple[str, ...] = ()) -> None:
    """Register the built-in methods and those of ``modules`` (config ``method_plugins``): exactly these, so a
    plugin of one config is not registered for the next."""
    METHODS.load(modules)


def all_methods() -> dict[str, Method]:
    """Every registered method by name (built-ins first, in registry order)."""
    return METHODS.all()


def method_of(name: str, where: str = "config: method") -> Method:
    """The registered method called ``name``."""
    return METHODS.of(name, where)
