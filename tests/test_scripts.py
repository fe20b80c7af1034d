"""Every workflow script's, benchmark's and bin/ snippet's package imports resolve (a script is a few lines calling one
package function: a moved or renamed function would otherwise fail only when its job, or the benchmark, runs)."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re

import pytest
from conftest import REPO

SCRIPTS = sorted((REPO / "workflow" / "scripts").glob("*.py"))
BENCHMARKS = sorted((REPO / "bench").glob("*.py"))


def package_imports(path):
    """Every ``from defsent_plus... import`` of a file, function-level ones included."""
    return imports_of(path.read_text())


def imports_of(source: str) -> list[ast.ImportFrom]:
    return [node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ImportFrom)
            and node.module and node.module.startswith("defsent_plus")]


def test_the_package_imports_of_the_bin_scripts_python_snippets_resolve():
    snippets = [snippet for path in (REPO / "bin").iterdir() for snippet in re.findall(r"python -c '([^']*)'",
                                                                                          path.read_text())]
    imports = [node for snippet in snippets for node in imports_of(snippet)]
    assert imports, "bin/setup checks WordNet through the package"
    for node in imports:
        module = importlib.import_module(node.module)
        assert all(hasattr(module, alias.name) for alias in node.names), f"bin/: {node.module} lacks {node.names}"


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
