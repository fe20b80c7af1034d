"""What an install brings: every package a command, rule or workflow script imports is declared (pyproject.toml's
dependencies, or the extra of the option that reaches it), constraints.txt pins every declared package at the
version installed here (the versions the tests pass with), and the catalog claims no deployment that cannot work."""

import ast
import importlib.metadata as md
import re
import subprocess
import sys
from pathlib import Path

import tomllib
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
SELF = canonicalize_name(PROJECT["name"])
# imports only an option reaches (config logging.report_to), each checked before use (check_trackers): their extra
OPTIONAL_IMPORTS = {"mlflow": "mlflow", "wandb": "wandb"}
# chosen by bin/setup per machine (a CPU or a CUDA build), so neither locked nor followed into its own requirements
BY_MACHINE = {"torch"}
# the environment's own installers, which pip freeze leaves out of the lock
INSTALLERS = {"pip", "setuptools", "wheel"}


def requirements(group: str | None = None) -> list[Requirement]:
    """pyproject.toml's dependencies (group None) or an extra's, the extras an extra names expanded."""
    listed = PROJECT["dependencies"] if group is None else PROJECT["optional-dependencies"][group]
    out = []
    for req in map(Requirement, listed):
        if canonicalize_name(req.name) == SELF:
            out += [r for extra in sorted(req.extras) for r in requirements(extra)]
        else:
            out.append(req)
    return out


def declared(group: str | None = None) -> set[str]:
    return {canonicalize_name(r.name) for r in requirements(group)}


def imported_modules() -> dict[str, set[str]]:
    """Top-level module -> the files importing it: the package, the workflow scripts, the Snakefile and rules (lazy
    imports inside functions included)."""
    found: dict[str, set[str]] = {}
    sources = [*(ROOT / "defsent_plus").rglob("*.py"), *(ROOT / "workflow" / "scripts").glob("*.py")]
    for path in sources:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
            for name in names:
                found.setdefault(name.split(".")[0], set()).add(str(path.relative_to(ROOT)))
    for path in [ROOT / "Snakefile", *(ROOT / "rules").glob("*.smk")]:
        for name in re.findall(r"^\s*(?:from|import)\s+([\w.]+)", path.read_text(), re.M):
            found.setdefault(name.split(".")[0], set()).add(str(path.relative_to(ROOT)))
    return found


def test_every_import_of_a_command_rule_or_script_is_a_declared_dependency():
    providers = md.packages_distributions()
    base = declared()
    missing = []
    for module, files in sorted(imported_modules().items()):
        if module in sys.stdlib_module_names or module == "defsent_plus":
            continue
        allowed = base | (declared(OPTIONAL_IMPORTS[module]) if module in OPTIONAL_IMPORTS else set())
        dists = {canonicalize_name(d) for d in providers.get(module, [])}
        if not dists & allowed:
            missing.append(f"{module} (from {sorted(dists) or 'no installed distribution'}; "
                           f"imported by {', '.join(sorted(files))})")
    assert not missing, "imported but not declared in pyproject.toml:\n" + "\n".join(missing)


def locked() -> dict[str, str]:
    """constraints.txt: package -> pinned version."""
    pins = {}
    for number, line in enumerate((ROOT / "constraints.txt").read_text().splitlines(), 1):
        if line.strip() and not line.startswith("#"):
            name, sep, version = line.partition("==")
            assert sep and version, f"constraints.txt line {number}: expected name==version, got {line!r}"
            pins[canonicalize_name(name)] = version.strip()
    return pins


def test_the_lock_pins_every_declared_package_at_a_version_its_range_allows():
    pins = locked()
    groups = [None, *PROJECT["optional-dependencies"]]
    for req in (r for group in groups for r in requirements(group) if canonicalize_name(r.name) not in BY_MACHINE):
        name = canonicalize_name(req.name)
        assert name in pins, f"constraints.txt pins no version of {req.name}, which pyproject.toml declares"
        assert req.specifier.contains(pins[name], prereleases=True), (
            f"constraints.txt pins {req.name}=={pins[name]}, outside pyproject.toml's {req}")


def installed_closure() -> set[str]:
    """Every distribution this package with all its extras requires here, directly or not (torch's own apart)."""
    seen: set[str] = set()
    todo = [(SELF, set(PROJECT["optional-dependencies"]))]
    while todo:
        name, extras = todo.pop()
        for text in md.distribution(name).requires or []:
            req = Requirement(text)
            wanted = req.marker is None or any(req.marker.evaluate({"extra": e}) for e in extras | {""})
            dep = canonicalize_name(req.name)
            if wanted and dep != SELF and dep not in seen:
                seen.add(dep)
                if dep not in BY_MACHINE:
                    todo.append((dep, set(req.extras)))
    return seen - BY_MACHINE - INSTALLERS


def test_the_lock_is_the_versions_installed_here():
    pins = locked()
    unpinned = sorted(installed_closure() - set(pins))
    assert not unpinned, f"installed as requirements but not in constraints.txt: {unpinned}"
    differing = {name: (version, md.version(name)) for name, version in pins.items() if md.version(name) != version}
    assert not differing, f"constraints.txt pins (left) other versions than those installed (right): {differing}"


def test_bin_setup_names_the_extras_it_knows_when_given_another():
    result = subprocess.run(["bash", str(ROOT / "bin" / "setup"), "nosuch"], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 2
    extras = " ".join(PROJECT["optional-dependencies"])
    assert result.stderr.strip() == f"bin/setup: unknown extra 'nosuch'; expected some of: {extras}"


def conda_env_files() -> set[str]:
    rules = [ROOT / "Snakefile", *(ROOT / "rules").glob("*.smk")]
    return {m for path in rules for m in re.findall(r"^\s*conda:\s*\n\s*\"([^\"]+)\"", path.read_text(), re.M)}


def test_the_catalog_claims_conda_only_where_every_environment_works_from_a_copy():
    """A module from a repository (github(...)) gets its rules' env files copied to a temporary file, where a path in
    one (pip's ``-e ..``) points nowhere: the catalog may claim conda only when no env file holds one."""
    catalog = yaml.safe_load((ROOT / ".snakemake-workflow-catalog.yml").read_text())
    envs = conda_env_files()
    assert envs, "no rule names a conda environment"
    relative = {env: pip for env in sorted(envs) for pip in pip_entries(ROOT / "rules" / env)
                if pip.startswith(("-e", "."))}
    if catalog["usage"]["software-stack-deployment"]["conda"]:
        assert not relative, f"the catalog claims conda, but these env files install from a relative path: {relative}"


def pip_entries(env_file: Path) -> list[str]:
    deps = yaml.safe_load(env_file.read_text())["dependencies"]
    return [p for dep in deps if isinstance(dep, dict) for p in dep.get("pip", [])]
