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
load_plugins = METHODS.load  # (modules): register the built-in methods and exactly those of config method_plugins
all_methods = METHODS.all  # (): every registered method by name, built-ins first (registry order)


def method_of(name: str, where: str = "config: method") -> Method:
    """The registered method called ``name``."""
    return METHODS.of(name, where)
