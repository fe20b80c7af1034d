"""The comparison's front page: results/compare/summary.md for terminal users and the same page as the HTML report's
workflow description (summary.rst: the markdown rendered to HTML, each run's STS-by-step plot embedded), so the report
opens on the comparison tables, their intervals and verdicts instead of the rule graph."""

from __future__ import annotations

import base64
import os
from collections.abc import Sequence
from pathlib import Path

import markdown

from defsent_plus import banner
from defsent_plus.io import write_page

WHAT_THIS_IS = (
    "This workflow trains sentence encoders on dictionary definitions (DefSent+: each definition projected onto "
    "its entry in a frozen space of entry embeddings, with Progressive Separate Training) and compares them with "
    "their starting models and the methods around them, all scored by one evaluator from stored sentence embeddings. "
    "Every STS number carries a 95% bootstrap interval over the test pairs, and every trained model is tested "
    "against its starting model on the same pairs: read a difference as a gain or a loss only where its interval "
    "excludes 0.")


def demoted(text: str) -> str:
    """A page's markdown with every heading one level lower (it becomes a section of the summary)."""
    return "\n".join(f"#{line}" if line.startswith("#") else line for line in text.splitlines()) + "\n"


def run_links(runs: Sequence[dict], base: Path) -> str:
    """Markdown: per run, links (relative to ``base``) to its detail files."""
    lines = ["## Each run's details\n"]
    for record in runs:
        links = ", ".join(f"[{Path(path).name}]({os.path.relpath(path, base)})" for path in record["files"])
        lines.append(f"* **{record['run']}** ({record['method']}): {links}")
    return "\n".join(lines) + "\n"


def plots_markdown(plots: Sequence[tuple[str, str]], base: Path) -> str:
    """Markdown images of the runs' STS-by-step plots (paths relative to ``base``)."""
    if not plots:
        return ""
    return "## STS by PST step (bars: 95% intervals)\n\n" + "\n\n".join(
        f"![{run}]({os.path.relpath(path, base)})" for run, path in plots) + "\n"


def embedded_images(html: str, plots: Sequence[tuple[str, str]], base: Path) -> str:
    """``html`` with each plot's relative path replaced by the image itself (a data URI: the report is one file),
    its base64 in lines of 76 characters (docutils refuses lines over 10,000; URL parsing drops the newlines)."""
    for _, path in plots:
        data = base64.encodebytes(Path(path).read_bytes()).decode("ascii").strip()
        html = html.replace(f'src="{os.path.relpath(path, base)}"', f'src="data:image/png;base64,{data}"')
    return html


# Snakemake's report centres this page in a scrolling flex box, so a page taller than the window starts above the
# scroll origin, out of reach: the panel aligns it to the top instead, and its text gets a readable width.
LANDING_STYLE = """<style>
div.h-screen.overflow-auto.items-center { align-items: flex-start; }
div.prose.max-w-lg { max-width: min(64rem, 92vw); }
</style>"""


def as_rst(text: str, plots: Sequence[tuple[str, str]], base: Path) -> str:
    """The markdown page as reStructuredText for Snakemake's report: one raw HTML block (tables and images kept),
    with the style that lets a reader land on its top and scroll through all of it."""
    html = LANDING_STYLE + "\n" + embedded_images(markdown.markdown(text, extensions=["tables"]), plots, base)
    return ".. raw:: html\n\n" + "".join(f"    {line}\n" for line in html.splitlines())


def write_summary(pages: Sequence[str | Path], runs: Sequence[dict], plots: Sequence[tuple[str, str]],
                  out_md: str | Path, out_rst: str | Path) -> str:
    """``pages``: the comparison tables' markdown (sts.md, reverse_dictionary.md, ...); ``runs``: ``run``,
    ``method`` and ``files`` (its detail files); ``plots``: (run, png) of the STS-by-step plots."""
    base = Path(out_md).parent
    text = ("# What this run found\n\n" + WHAT_THIS_IS + "\n\n"
            + "".join(demoted(banner.without(Path(page).read_text(encoding="utf-8"))) + "\n" for page in pages)
            + plots_markdown(plots, base) + "\n" + run_links(runs, base))
    write_page(out_md, text)
    write_page(out_rst, as_rst(text, plots, base))
    return text
