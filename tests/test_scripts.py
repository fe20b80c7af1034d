"""Every workflow script's, benchmark's and bin/ snippet's package imports resolve (a script is a few lines calling one
package function: a moved or renamed function would otherwise fail only when its job, or the benchmark, runs)."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re

import pytest
import yaml
from conftest import REPO

SCRIPTS = sorted((REPO / "workflow" / "scripts").glob("*.py"))
BENCHMARKS = sorted((REPO / "bench").glob("*.py"))


def package_imports(path):
    """Every ``from defsent_plus... import`` of a file, function-level ones included."""
    return imports_of(path.read_text())


def imports_of(source: str) -> list[ast.ImportFrom]:
    return [node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ImportFrom)
            and node.module and node.module.startswith("defsent_plus")]


def test_the_package_imports_of_bin_and_the_profiles_python_resolve():
    """bin/'s ``python -c`` snippets and the profiles' YTE definitions run only when a user runs them."""
    snippets = [snippet for path in (REPO / "bin").iterdir() for snippet in re.findall(r"python -c '([^']*)'",
                                                                                          path.read_text())]
    for profile in (REPO / "profiles").glob("*/config.yaml"):
        snippets += [line for line in yaml.safe_load(profile.read_text()).get("__definitions__", [])]
    imports = [node for snippet in snippets for node in imports_of(snippet)]
    assert {node.module for node in imports} >= {"defsent_plus.dictionary.sources", "defsent_plus.encoders.devices"}
    for node in imports:
        module = importlib.import_module(node.module)
        missing = [alias.name for alias in node.names if not hasattr(module, alias.name)]
        assert not missing, f"{node.module} lacks {missing}"


@pytest.mark.parametrize("script", SCRIPTS + BENCHMARKS, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_the_package_imports_of_scripts_and_benchmarks_resolve(script):
    imports = package_imports(script)
    assert imports or script.parent.name == "bench", "a workflow script calls a package function"
    for node in imports:
        module = importlib.import_module(node.module)
        for alias in node.names:
            assert hasattr(module, alias.name) or is_submodule(f"{node.module}.{alias.name}"), \
                f"{script.name}: {node.module} has no {alias.name}"


def is_submodule(name: str) -> bool:
    """``from package import module`` names a module, an attribute of its package only once something imported it."""
    return importlib.util.find_spec(name) is not None
