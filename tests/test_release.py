"""The release's files agree: the package version is the changelog's newest, CITATION.cff's and the one the module
example pins; CITATION.cff is valid CFF 1.2.0 in its required keys; LICENSE is Apache-2.0 as pyproject declares."""

from __future__ import annotations

import re

import yaml
from conftest import REPO

PYPROJECT = (REPO / "pyproject.toml").read_text(encoding="utf-8")
VERSION = re.search(r'^version = "([^"]+)"$', PYPROJECT, re.MULTILINE).group(1)
CFF_REQUIRED = {"cff-version", "message", "title", "authors"}


def test_the_changelog_describes_the_package_version_first():
    text = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    versions = re.findall(r"^## (\d+\.\d+\.\d+)\b", text, re.MULTILINE)
    assert versions and versions[0] == VERSION, f"CHANGELOG.md: newest version {versions[:1]}, pyproject {VERSION}"


def test_the_package_reports_the_version():
    from defsent_plus import __version__

    assert __version__ == VERSION


def test_the_module_example_pins_the_released_version():
    wrapper = (REPO / "docs" / "module" / "Snakefile").read_text(encoding="utf-8")
    assert re.findall(r'tag="v([^"]+)"', wrapper) == [VERSION]


def test_citation_cff_is_complete_and_names_the_version_and_the_defsent_plus_paper():
    cff = yaml.safe_load((REPO / "CITATION.cff").read_text(encoding="utf-8"))
    assert CFF_REQUIRED <= set(cff), f"CITATION.cff lacks {CFF_REQUIRED - set(cff)}"
    assert cff["cff-version"] == "1.2.0"
    assert cff["version"] == VERSION and cff["license"] == "Apache-2.0"
    assert re.search(r'^license = "Apache-2.0"$', PYPROJECT, re.MULTILINE)
    assert all("name" in author or "family-names" in author for author in cff["authors"])
    assert any(ref["title"].startswith("DefSent+:") for ref in cff["references"])


def test_the_license_is_apache_2():
    text = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert text.startswith("Copyright 2026 the defsent-plus authors")
