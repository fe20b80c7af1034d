"""Training methods as plugins: each module of this package declares one :class:`Method` named ``METHOD``.

The registry below is the only list of methods. Everything else (the config schema, the plan, the rules, the
reverse dictionary, the comparison tables, the CLI) asks a declaration, never a method's name. A method from
another package joins through config (``method_plugins: [my_package.my_method]``), without editing this one.
"""

from __future__ import annotations

import importlib

from defsent_plus.errors import DefSentError
from defsent_plus.methods.base import ENTRY_SPACE, Method

__all__ = ["DEFAULT_METHOD", "ENTRY_SPACE", "Method", "all_methods", "load_plugins", "method_of"]

REGISTRY = [  # one line a method: the module that declares it
    "defsent_plus.methods.defsent_plus",
    "defsent_plus.methods.defsent",
    "defsent_plus.methods.simcse",
    "defsent_plus.methods.slt_fai",
]
DEFAULT_METHOD = "defsent_plus"  # what a run trains when it names no method
_LOADED: dict[str, Method] = {}


def declaration(module: str, where: str = "config: method_plugins") -> Method:
    """The ``METHOD`` a module declares."""
    try:
        method = importlib.import_module(module).METHOD
    except (ImportError, AttributeError) as err:
        raise DefSentError(where, f"{module!r} does not declare a training method (a module with METHOD): {err}"
                           ) from None
    if not isinstance(method, Method):
        raise DefSentError(where, f"{module}.METHOD is a {type(method).__name__}, not a Method")
    return method


def load_plugins(modules: list[str] | tuple[str, ...] = ()) -> None:
    """Register the built-in methods and those of ``modules`` (config ``method_plugins``): exactly these, so a
    plugin of one config is not registered for the next."""
    loaded: dict[str, Method] = {}
    for module, where in [*((m, "defsent_plus.methods.REGISTRY") for m in REGISTRY),
                          *((m, "config: method_plugins") for m in modules)]:
        method = declaration(module, where)
        if method.name in loaded and loaded[method.name] is not method:
            raise DefSentError(where, f"{module} declares method {method.name!r}, which another module declares")
        loaded[method.name] = method
    _LOADED.clear()
    _LOADED.update(loaded)


def all_methods() -> dict[str, Method]:
    """Every registered method by name (built-ins first, in registry order)."""
    if not _LOADED:
        load_plugins()
    return dict(_LOADED)


def method_of(name: str, where: str = "config: method") -> Method:
    """The registered method called ``name``."""
    methods = all_methods()
    if name not in methods:
        raise DefSentError(where, f"unknown training method {name!r}; expected one of {sorted(methods)}")
    return methods[name]
