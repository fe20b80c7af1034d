"""Every workflow script's imports resolve (a script is a few lines calling one package function: a moved or
renamed function would otherwise fail only when its job runs)."""

from __future__ import annotations

import ast
import importlib

import pytest
from conftest import REPO

SCRIPTS = sorted((REPO / "workflow" / "scripts").glob("*.py"))


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda path: path.name)
def test_the_scripts_imports_resolve(script):
    imports = [node for node in ast.parse(script.read_text()).body if isinstance(node, ast.ImportFrom)]
    assert imports, "a script calls a package function"
    for node in imports:
        module = importlib.import_module(node.module)
        for alias in node.names:
            assert hasattr(module, alias.name), f"{script.name}: {node.module} has no {alias.name}"
