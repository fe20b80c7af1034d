"""The manual names only what exists: every ``defsent_plus.<...>`` name in README.md and docs/*.md resolves, every
repository path they mention is there, every rule and CLI command they name is defined, and README.md stays a short
manual whose first code block is the two set-up commands."""

from __future__ import annotations

import dataclasses
import importlib
import re
from itertools import product
from pathlib import Path

import pytest
from conftest import REPO

README = REPO / "README.md"
DOCS = [README, *sorted((REPO / "docs").glob("*.md"))]
README_MAX_LINES = 160
SETUP_COMMANDS = ["bash bin/run", "bash bin/test"]

# A dotted name of the package; not the tail of a config key (methods.defsent_plus.lr) or of a path.
DOTTED = re.compile(r"(?<![\w./-])defsent_plus(?:\.[A-Za-z_]\w*)+")
# A repository path under one of these folders; `*` globs, `{a,b}` alternatives, `<name>` placeholders.
CHECKED_FOLDERS = ("defsent_plus", "rules", "workflow", "configs", "bench", "profiles", "tests", "docs", "bin",
                   "report", "envs", "data/checksums")
FOLDERS = "|".join(map(re.escape, CHECKED_FOLDERS))
PATH = re.compile(rf"(?<![\w./-])(?:{FOLDERS})/(?:[\w.*/-]|<[\w-]+>|\{{[\w.,-]*\}})*")
LINK = re.compile(r"\]\(([^)\s]+)\)")
RULE = re.compile(r"\b(?:[Rr]ule|[Cc]heckpoint) `(\w+)`|`(?:rule|checkpoint) (\w+)`")
RULE_DEFINITION = re.compile(r"^\s*(?:rule|checkpoint) (\w+):|^\s*use rule \w+ as (\w+)", re.MULTILINE)
CODE = re.compile(r"```.*?```|`[^`\n]+`", re.DOTALL)
COMMAND = re.compile(r"defsent-plus ([a-z][a-z-]*(?:\|[a-z][a-z-]*)*)")


def docs_ids() -> list[str]:
    return [str(path.relative_to(REPO)) for path in DOCS]


# ---------------------------------------------------------------------------------------------------- checks


def unresolved_name(name: str) -> str | None:
    """Why ``name`` (``defsent_plus.<module>[.<attribute>...]``) does not resolve, or None when it does: the longest
    importable module prefix is imported, the rest must be attributes (or fields of a dataclass)."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        module_name = ".".join(parts[:cut])
        try:
            target = importlib.import_module(module_name)
        except ModuleNotFoundError as err:
            if err.name is not None and not module_name.startswith(err.name):  # a real missing dependency
                return f"importing {module_name} failed: {err}"
            continue
        for attribute in parts[cut:]:
            field_names = {f.name for f in dataclasses.fields(target)} if dataclasses.is_dataclass(target) else ()
            if hasattr(target, attribute):
                target = getattr(target, attribute)
            elif attribute in field_names:
                target = None  # a dataclass field without a class-level default: nothing further to look up
            else:
                return f"{'.'.join(parts[:cut])} has no {'.'.join(parts[cut:])}"
        return None
    return "no importable module"


def expand(path: str) -> list[str]:
    """The paths a mention stands for: ``{a,b}`` alternatives expanded."""
    pieces = re.split(r"(\{[^}]*\})", path)
    choices = [piece[1:-1].split(",") if piece.startswith("{") else [piece] for piece in pieces]
    return ["".join(combination) for combination in product(*choices)]


def missing_path(mention: str, base: Path = REPO) -> str | None:
    """Why a mentioned path is not in the repository, or None. A `<placeholder>` stands for any one path
    component, a `*` is a glob; either must match at least one file."""
    for path in expand(mention.rstrip(".")):
        pattern = re.sub(r"<[\w-]+>", "*", path).rstrip("/")
        found = list(base.glob(pattern)) if "*" in pattern else [base / pattern] if (base / pattern).exists() else []
        if not found:
            return f"{path} does not exist"
    return None


def names_in(text: str) -> set[str]:
    return set(DOTTED.findall(text))


def paths_in(text: str) -> set[str]:
    return {match.rstrip(".") for match in PATH.findall(text)}


def links_in(text: str) -> set[str]:
    """Relative link targets of a markdown text, with their #anchor if any (not web addresses)."""
    return {target for target in LINK.findall(text) if not re.match(r"[a-z]+:", target)}


def slug(heading: str) -> str:
    """The anchor GitHub gives a markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def broken_link(link: str, doc: Path) -> str | None:
    """Why a relative link of ``doc`` leads nowhere (a missing file, or no heading with its #anchor), or None."""
    path, _, anchor = link.partition("#")
    if path and (why := missing_path(path, doc.parent)):
        return why
    target = (doc.parent / path) if path else doc
    if anchor and target.suffix == ".md":
        prose = re.sub(r"^```.*?^```", "", target.read_text(encoding="utf-8"), flags=re.DOTALL | re.MULTILINE)
        headings = re.findall(r"^#+ (.+)$", prose, re.MULTILINE)  # not the comments of a code block
        if anchor not in {slug(heading) for heading in headings}:
            return f"{target.name} has no heading #{anchor}"
    return None


def rules_in(text: str) -> set[str]:
    return {a or b for a, b in RULE.findall(text)}


def commands_in(text: str) -> set[str]:
    """CLI sub-commands named in code (``defsent-plus encode``, ``defsent-plus encode|similarity``)."""
    code = " ".join(CODE.findall(text))
    return {command for found in COMMAND.findall(code) for command in found.split("|")}


def defined_rules() -> set[str]:
    text = "\n".join(path.read_text(encoding="utf-8") for path in [REPO / "Snakefile", *(REPO / "rules").glob("*.smk")])
    return {a or b for a, b in RULE_DEFINITION.findall(text)}


def cli_commands() -> set[str]:
    from defsent_plus.cli import build_parser

    parser = build_parser()
    (subparsers,) = [action for action in parser._actions if action.choices and action.dest == "command"]
    return set(subparsers.choices)


def first_code_block(text: str) -> list[str]:
    """The commands of a markdown text's first fenced code block (comments and blank lines dropped)."""
    match = re.search(r"^```[^\n]*\n(.*?)^```", text, re.DOTALL | re.MULTILINE)
    if match is None:
        return []
    return [line.split("#")[0].strip() for line in match.group(1).splitlines() if line.split("#")[0].strip()]


# ----------------------------------------------------------------------------------------------------- tests


@pytest.mark.parametrize("doc", DOCS, ids=docs_ids())
def test_every_package_name_in_the_docs_resolves(doc):
    text = doc.read_text(encoding="utf-8")
    problems = {name: why for name in sorted(names_in(text)) if (why := unresolved_name(name))}
    assert not problems, f"{doc.name}: {problems}"


@pytest.mark.parametrize("doc", DOCS, ids=docs_ids())
def test_every_repository_path_in_the_docs_exists(doc):
    text = doc.read_text(encoding="utf-8")
    problems = {path: why for path in sorted(paths_in(text)) if (why := missing_path(path))}
    problems |= {link: why for link in sorted(links_in(text)) if (why := broken_link(link, doc))}
    assert not problems, f"{doc.name}: {problems}"


@pytest.mark.parametrize("doc", DOCS, ids=docs_ids())
def test_every_rule_and_command_in_the_docs_is_defined(doc):
    text = doc.read_text(encoding="utf-8")
    unknown = {"rules": rules_in(text) - defined_rules(), "defsent-plus commands": commands_in(text) - cli_commands()}
    assert not any(unknown.values()), f"{doc.name}: not defined: {unknown}"


def test_the_readme_is_a_short_manual_that_starts_with_the_two_setup_commands():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= README_MAX_LINES
    assert first_code_block(text) == SETUP_COMMANDS


def test_the_checks_find_what_does_not_exist():
    text = ("`defsent_plus.pipeline.plan.Plan.no_such_method`, `defsent_plus.no_such_module.thing`, "
            "`defsent_plus/no_such.py`, `rules/no_such.smk`, `configs/{bert-base,no-such}.yaml`, "
            "[gone](no_such.md), [no heading](execution.md#no-such-heading), [here](execution.md#on-a-slurm-cluster), "
            "rule `no_such_rule`, Rule `no_such_either`, `defsent-plus encode|no-such-command`, "
            "`methods.defsent_plus.lr` and `bin/run`.")
    assert {name for name in names_in(text) if unresolved_name(name)} == {
        "defsent_plus.pipeline.plan.Plan.no_such_method", "defsent_plus.no_such_module.thing"}
    assert {path for path in paths_in(text) if missing_path(path)} == {
        "defsent_plus/no_such.py", "rules/no_such.smk", "configs/{bert-base,no-such}.yaml"}
    doc = REPO / "docs" / "any.md"
    assert {link for link in links_in(text) if broken_link(link, doc)} == {"no_such.md",
                                                                             "execution.md#no-such-heading"}
    assert rules_in(text) - defined_rules() == {"no_such_rule", "no_such_either"}
    assert commands_in(text) - cli_commands() == {"no-such-command"}
    assert first_code_block("text\n```bash\nbash bin/run   # the run\n\nbash bin/test\n```\n") == SETUP_COMMANDS


def test_the_checks_accept_what_exists():
    assert unresolved_name("defsent_plus.methods.base.Method.name") is None  # a dataclass field without a default
    assert unresolved_name("defsent_plus.pipeline.plan.Plan.training_files") is None
    assert missing_path("rules/*.smk") is None and missing_path("configs/<x>.yaml") is None
    assert slug("DefSent (`defsent`, 001/002)") == "defsent-defsent-001002"
    assert slug("Isotropy of the default run's entry spaces") == "isotropy-of-the-default-runs-entry-spaces"
    assert missing_path("configs/defsent-{bert-base,roberta-large}.yaml") is None
    assert {"train", "select_best", "dev_score", "all"} <= defined_rules()
    assert {"encode", "similarity", "reverse-dictionary", "predict-words", "export", "setup-wordnet",
            "rehearse", "estimate"} == cli_commands()
