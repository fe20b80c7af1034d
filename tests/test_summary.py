"""The comparison's front page (results/compare/summary.md and the report's summary.rst)."""

from __future__ import annotations

import base64

from docutils.core import publish_parts

from defsent_plus.evaluation.summary import write_summary

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGA"
                       "hKmMIQAAAABJRU5ErkJggg==")  # a 1x1 image


def test_the_summary_holds_the_tables_the_plots_and_the_links(tmp_path):
    compare, run = tmp_path / "results" / "compare", tmp_path / "results" / "r1" / "eval"
    compare.mkdir(parents=True)
    run.mkdir(parents=True)
    (compare / "sts.md").write_text("# STS of every run\n\n| model | avg |\n|---|---|\n| base | 78.87 |\n\n"
                                    "## Uncertainty\n\nnote\n")
    (run / "sts_by_step.png").write_bytes(PNG)
    text = write_summary([compare / "sts.md"], [{"run": "r1", "method": "defsent_plus",
                                                 "files": [str(run / "sts.md")]}],
                         [("r1", str(run / "sts_by_step.png"))], compare / "summary.md", compare / "summary.rst")
    assert "## STS of every run" in text and "### Uncertainty" in text  # the pages become sections
    assert "![r1](../r1/eval/sts_by_step.png)" in text and "[sts.md](../r1/eval/sts.md)" in text
    rst = (compare / "summary.rst").read_text()
    assert rst.startswith(".. raw:: html\n")
    html = publish_parts(rst, writer_name="html")["body"]  # as Snakemake's report renders its description
    assert "<table>" in html and "<td>78.87</td>" in html
    assert embedded(html) == PNG
    big = bytes(range(256)) * 100  # an image whose base64 is longer than docutils' 10,000-character line limit
    (run / "sts_by_step.png").write_bytes(big)
    write_summary([compare / "sts.md"], [], [("r1", str(run / "sts_by_step.png"))], compare / "summary.md",
                  compare / "summary.rst")
    rst = (compare / "summary.rst").read_text()
    assert max(map(len, rst.splitlines())) < 10_000
    html = publish_parts(rst, writer_name="html", settings_overrides={"halt_level": 2})["body"]
    assert embedded(html) == big


def embedded(html: str) -> bytes:
    """The image of the page's data URI (its base64 may be split over lines, which URL parsing drops)."""
    src = html.split('src="data:image/png;base64,')[1].split('"')[0]
    return base64.b64decode("".join(src.split()))
