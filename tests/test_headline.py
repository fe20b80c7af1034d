"""The README's STS table is what ``defsent_plus.evaluation.headline`` prints for the run the README names, whose
comparison files are stored in tests/fixtures/headline/ (``sts.tsv`` and ``sts_uncertainty.tsv``, the two files the
generator reads, copied from that run's ``results/compare/``)."""

from __future__ import annotations

import re

import pytest
from conftest import REPO

from defsent_plus.evaluation.headline import headline_table

README = REPO / "README.md"
STORED_RUN = REPO / "tests" / "fixtures" / "headline"
TABLE_START = "| model | STS12 |"


def readme_table(text: str) -> str:
    """The README's headline table: the block of table lines that starts with the generator's header."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith(TABLE_START)]
    if len(starts) != 1:
        raise AssertionError(f"README.md: expected one table starting {TABLE_START!r}, found {len(starts)}")
    block = []
    for line in lines[starts[0]:]:
        if not line.startswith("|"):
            break
        block.append(line)
    return "\n".join(block) + "\n"


def test_the_stored_run_holds_what_the_generator_reads():
    assert sorted(path.name for path in STORED_RUN.iterdir()) == ["sts.tsv", "sts_uncertainty.tsv"]


def test_the_readme_table_is_what_the_generator_prints_for_the_stored_run():
    assert readme_table(README.read_text(encoding="utf-8")) == headline_table(STORED_RUN)


def test_the_readme_names_the_run_of_its_table():
    text = README.read_text(encoding="utf-8")
    assert re.search(r"Run: \d{4}-\d{2}-\d{2}, .*commit [0-9a-f]{7,40}", text), "README.md: no line naming the run"


def test_a_changed_cell_is_found():
    text = README.read_text(encoding="utf-8")
    changed = text.replace("| base (minilm) | 72.37 |", "| base (minilm) | 72.38 |", 1)
    assert changed != text
    assert readme_table(changed) != headline_table(STORED_RUN)
    with pytest.raises(AssertionError, match="found 0"):
        readme_table("no table here\n")
