"""Methods as plugins: the registry is the only list of methods, every declaration resolves, no code outside a
method's own modules names it, the package's imports form no cycle, and parsing the workflow needs no torch."""

from __future__ import annotations

import ast
import io
import re
import subprocess
import sys
import tokenize
from dataclasses import fields
from pathlib import Path

import pytest
from conftest import REPO

from defsent_plus.errors import DefSentError
from defsent_plus.methods import METHODS, REGISTRY, all_methods, load_plugins, method_of
from defsent_plus.methods.base import ENTRY_SPACE, Lazy
from defsent_plus.pipeline.config_schema import load_schema
from defsent_plus.training.options import OPTIMISATION_OPTIONS

SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
PACKAGE = REPO / "defsent_plus"
PLUGINS = Path(__file__).parent / "plugins"


def test_the_schema_lists_exactly_the_registered_methods_with_their_declared_defaults():
    schema = load_schema(SCHEMA)
    methods = all_methods()
    assert list(methods) == [METHODS.declaration(module).name for module in REGISTRY]
    blocks = schema["properties"]["methods"]["properties"]
    assert set(blocks) == set(methods)
    for name, method in methods.items():
        assert blocks[name]["properties"] == method.options and blocks[name]["additionalProperties"] is False
    assert schema["properties"]["runs"]["additionalProperties"]["properties"]["method"]["enum"] == list(methods)
    assert "enum" not in SCHEMA.read_text().split("runs:")[-1].split("method:")[1].splitlines()[0]  # not by hand


def test_every_shared_optimisation_option_is_a_trainer_setting():
    from defsent_plus.training.trainer import TrainConfig

    assert set(OPTIMISATION_OPTIONS) <= {f.name for f in fields(TrainConfig)}


@pytest.mark.parametrize("name", list(all_methods()))
def test_every_declaration_resolves_and_says_what_it_trains_against(name):
    method = method_of(name)
    assert callable(method.build_task)
    if method.reverse_dictionary is not None:
        assert callable(method.reverse_dictionary.write)
        assert callable(method.reverse_dictionary.splits)
        assert method.reverse_dictionary.description
    assert method.uses_entry_space == (method.target == ENTRY_SPACE)
    named = [method.build_task] + ([] if method.reverse_dictionary is None else [method.reverse_dictionary.write])
    for reference in named:  # "module:function", imported when called: each names a function that exists
        assert isinstance(reference, Lazy) and callable(reference.function()), reference
    assert method.training_card()["method"] == name and isinstance(method.training_card()["deviations"], list)


def own_modules(name: str) -> set[Path]:
    """The files that may name a method: its package (methods/<name>/: the declaration, its objective, its
    reverse-dictionary protocol), or the one module that declares a method from elsewhere."""
    method = method_of(name)
    declared = REPO / next(module for module in REGISTRY if METHODS.declaration(module) is method).replace(".", "/")
    return set(declared.rglob("*.py")) if declared.is_dir() else {declared.with_suffix(".py")}


def string_literals(path: Path) -> list[tuple[int, str]]:
    """(line, value) of every string literal of a Python file (snakemake files: of their Python lines)."""
    source = path.read_text(encoding="utf-8")
    found = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.STRING:
            try:
                found.append((token.start[0], ast.literal_eval(token.string)))
            except (ValueError, SyntaxError):  # f-strings: their literal text still counts
                found.append((token.start[0], token.string))
    return found


def code_files() -> list[Path]:
    return [*PACKAGE.rglob("*.py"), *(REPO / "workflow" / "scripts").glob("*.py"), *(REPO / "rules").glob("*.smk")]


@pytest.mark.parametrize("name", list(all_methods()))
def test_no_code_outside_a_methods_own_modules_names_it(name):
    naming = re.compile(rf"^{re.escape(name)}$|methods\.{re.escape(name)}\b")
    allowed = own_modules(name) | {PACKAGE / "methods" / "__init__.py"}  # the registry lists its module
    # a method may name a variant after the method it builds on (SLT-FAI's "simcse" variant): data of its own
    variants = {path: set(method.variants or ()) for other, method in all_methods().items()
                for path in own_modules(other)}
    found = []
    for path in code_files():
        if path in allowed:
            continue
        lines = path.read_text(encoding="utf-8").splitlines() if path.suffix == ".smk" else None
        literals = re.findall(r"\"([^\"]*)\"|'([^']*)'", "\n".join(lines)) if lines else None
        values = [a or b for a, b in literals] if literals is not None else [v for _, v in string_literals(path)]
        found += [f"{path.relative_to(REPO)}: {value!r}" for value in values
                  if isinstance(value, str) and naming.search(value) and value not in variants.get(path, ())]
    assert not found, f"{name} is named outside its modules: {found}"


def test_the_name_scan_finds_a_method_named_in_other_code(tmp_path):
    """The scan above can fail: a literal like those it forbids is found."""
    path = tmp_path / "x.py"
    path.write_text('KEY = "config: methods.slt_fai.alpha"\nif method == "simcse":\n    pass\n')
    values = [value for _, value in string_literals(path)]
    assert any(re.search(r"methods\.slt_fai\b", v) for v in values) and "simcse" in values


def import_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports (anywhere in the file: function-level imports count too)."""
    modules = {".".join(p.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__"): p
               for p in PACKAGE.rglob("*.py")}
    graph = {}
    for module, path in modules.items():
        imported = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("defsent_plus"):
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    imported.add(full if full in modules else node.module)
            elif isinstance(node, ast.Import):
                imported |= {alias.name for alias in node.names if alias.name.startswith("defsent_plus")}
        graph[module] = {m for m in imported if m in modules and m != module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import cycle found by depth-first search (empty: the graph is acyclic)."""
    found, state = [], {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                found.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return found


def test_the_package_has_no_import_cycles():
    graph = import_graph()
    assert "defsent_plus.training.task" in graph["defsent_plus.methods.defsent_plus.objective"]
    assert not cycles(graph), cycles(graph)


def stage_folders() -> set[str]:
    """The package's stage folders (``defsent_plus.<folder>`` with an ``__init__.py``)."""
    return {path.parent.name for path in PACKAGE.glob("*/__init__.py")}


def folder_graph(graph: dict[str, set[str]], folders: set[str] | None = None) -> dict[str, set[str]]:
    """Stage folder -> the stage folders its modules import, a folder's own ``__init__`` included (``from
    defsent_plus.methods import method_of`` is an import of ``methods``); top-level modules (the shared names, io,
    errors, STS data, the CLI) left out."""
    stages = stage_folders() if folders is None else folders

    def folder(module: str) -> str | None:
        parts = module.split(".")
        return parts[1] if len(parts) > 1 and parts[1] in stages else None

    folders: dict[str, set[str]] = {}
    for module, imported in graph.items():
        for other in imported:
            if folder(module) and folder(other) and folder(module) != folder(other):
                folders.setdefault(folder(module), set()).add(folder(other))
    return folders


def test_the_stage_folders_import_in_one_direction():
    """No two stage folders import each other, through any path: training reads the STS data and its score from
    evaluation (defsent_plus.evaluation.sts), never the other way, and the cost model's architectures live in the
    pipeline, which rehearsals use."""
    folders = folder_graph(import_graph())
    assert {"encoders", "dictionary"} <= folders["training"]
    assert "methods" not in folders["training"]  # the trainer is handed a method's declaration (TrainingMethod)
    assert "training" not in folders["evaluation"]
    assert "methods" not in folders["evaluation"]  # each method's own protocol is in its package
    assert not cycles(folders), cycles(folders)


def test_the_folder_graph_sees_a_function_level_import_between_folders():
    graph = {"defsent_plus.training.a": {"defsent_plus.evaluation.b"}, "defsent_plus.evaluation.b": set(),
             "defsent_plus.names": set()}
    assert folder_graph(graph) == {"training": {"evaluation"}}


def test_the_folder_graph_sees_an_import_of_a_folders_own_init():
    """``from defsent_plus.methods import method_of`` in the trainer made training and methods import each other; a
    graph of three-part module names alone did not see it."""
    graph = {"defsent_plus.training.trainer": {"defsent_plus.methods"},
             "defsent_plus.methods": {"defsent_plus.methods.base"},
             "defsent_plus.methods.base": {"defsent_plus.training.task"}, "defsent_plus.training.task": set(),
             "defsent_plus.names": set()}
    folders = folder_graph(graph, {"training", "methods"})
    assert folders == {"training": {"methods"}, "methods": {"training"}}
    assert cycles(folders)


def test_the_cycle_check_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c", "a"]]


def test_methods_and_the_workflows_plan_load_without_torch():
    code = ("import sys; from defsent_plus.pipeline import dag, rule_inputs; "
            "from defsent_plus.pipeline.config_schema import load_schema; "
            f"load_schema({str(SCHEMA)!r}); import defsent_plus.methods as m; m.all_methods(); "
            "assert 'torch' not in sys.modules, 'torch was imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_plugin_registers_beside_the_built_in_methods_and_bad_ones_are_named(monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(str(PLUGINS))
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "not_a_method.py").write_text("METHOD = 1\n")
    load_plugins(["toy_mirror"])
    assert method_of("mirror").target == "mirror"
    assert "mirror" in load_schema(SCHEMA, ["toy_mirror"])["properties"]["methods"]["properties"]
    with pytest.raises(DefSentError, match="config: method_plugins.*'no_such_module' does not declare"):
        load_plugins(["no_such_module"])
    with pytest.raises(DefSentError, match="is of type int, expected Method"):
        load_plugins(["not_a_method"])
    (tmp_path / "second_mirror.py").write_text("from toy_mirror import METHOD as FIRST\n"
                                               "import dataclasses\nMETHOD = dataclasses.replace(FIRST)\n")
    with pytest.raises(DefSentError, match="config: method_plugins.*declares training method 'mirror', which another"):
        load_plugins(["toy_mirror", "second_mirror"])
    load_plugins()  # the next config without the plugin: only the built-in methods
    assert "mirror" not in all_methods() and "mirror" not in load_schema(SCHEMA)["properties"]["methods"][
        "properties"]


def test_method_plugins_must_be_a_list_of_module_names():
    from defsent_plus.pipeline.config_schema import validated_config

    with pytest.raises(DefSentError, match="config: method_plugins.*expected a list of module names"):
        validated_config({"method_plugins": "toy_mirror"}, SCHEMA)


@pytest.mark.parametrize(("change", "message"), [
    ({"name": "Mirror-1"}, "expected lowercase letters"),
    ({"target": "amp.ica"}, "must be a plain name and not an entry space"),
    ({"target": "Two words"}, "must be a plain name"),
    ({"commands": ("encode", "translate")}, r"unknown commands \['translate'\]"),
    ({"encoder_passes": 0}, "encoder_passes must be an integer >= 1"),
])
def test_a_declaration_that_the_system_could_not_use_is_refused(change, message):
    import dataclasses

    with pytest.raises(ValueError, match=message):
        dataclasses.replace(method_of("simcse"), **change)


def test_each_method_declares_the_encoder_passes_of_its_step():
    """What the cost model's step latency and activations count (docs/results.md, "GPU measurements"): SimCSE's second
    view is a second forward pass, SLT-FAI's incomplete sentences a third."""
    passes = {name: method.encoder_passes for name, method in all_methods().items()}
    assert passes == {"defsent": 1, "defsent_plus": 1, "simcse": 2, "slt_fai": 3}


def test_overriding_defaults_of_options_a_method_does_not_have_is_refused():
    from defsent_plus.methods.base import with_defaults

    assert with_defaults(OPTIMISATION_OPTIONS, adam_eps=1e-8)["adam_eps"]["default"] == 1e-8
    with pytest.raises(ValueError, match=r"no such options: \['adam_epsilon'\]"):
        with_defaults(OPTIMISATION_OPTIONS, adam_epsilon=1e-8)


def test_an_entry_space_method_without_a_space_is_refused_naming_the_dataset():
    from defsent_plus.methods.defsent_plus.objective import build_task
    from defsent_plus.training.task import TaskInputs

    with pytest.raises(DefSentError, match="toy.parquet: this method trains against an entry space"):
        build_task(TaskInputs(None, None, [], None, "cls", 0, "toy.parquet", {}, 2))


def test_a_card_lists_an_option_deviation_only_where_the_options_in_force_have_it():
    defsent = method_of("defsent")
    rounded = [text for (name, value), text in defsent.option_deviations if name == "warmup_rounding"]
    assert rounded and defsent.options_in_force({})["warmup_rounding"] == "none"
    assert not set(rounded) & set(defsent.training_card({})["deviations"])  # DefSent's own unrounded warm-up
    assert set(rounded) <= set(defsent.training_card({"warmup_rounding": "up"})["deviations"])


@pytest.mark.parametrize("name", sorted(all_methods()))
def test_every_option_deviation_names_an_option_and_a_value_it_can_take(name):
    method = all_methods()[name]
    for (option, value), _ in method.option_deviations:
        spec = method.options[option]
        assert value in spec.get("enum", [value]), (option, value)


def test_a_methods_cost_facts_name_a_known_output_layer():
    from defsent_plus.methods.base import CLASSES, TrainingCosts

    assert {TrainingCosts(classes=c).classes for c in CLASSES} == set(CLASSES)
    with pytest.raises(ValueError, match="classes 'vocab'"):
        TrainingCosts(classes="vocab")
