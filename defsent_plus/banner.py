"""The banner of a rehearsal's outputs: every table and plot a rehearsal writes says that its numbers come from
random weights and capped data (config ``rehearsal``; rules that write tables or plots pass it as ``params.banner``,
and :func:`defsent_plus.pipeline.jobs.start_job` activates it for the job)."""

from __future__ import annotations

import textwrap

_active: str | None = None


def banner_text(rehearsal: dict | None) -> str | None:
    """The banner of a config's ``rehearsal`` block (None: a real run, no banner)."""
    if not rehearsal:
        return None
    weights = "the real architectures" if rehearsal["size"] == "full" else "tiny architectures"
    return (f"REHEARSAL of {rehearsal['config']} ({rehearsal['size']} size): random weights of {weights} and capped "
            "stand-in data. These numbers say nothing about any method.")


def activate(text: str | None) -> None:
    global _active
    _active = text


def active() -> str | None:
    return _active


def on_text(text: str) -> str:
    """A markdown or reStructuredText page with the banner as its first paragraph."""
    return text if _active is None else f"**{_active}**\n\n{text}"


def without(text: str) -> str:
    """A page :func:`on_text` wrote, without its banner (a page that includes it has its own)."""
    return text if _active is None else text.removeprefix(f"**{_active}**\n\n")


def comment_line() -> str:
    """The first line of a TSV table (``#``: pandas reads past it with ``comment="#"``), or nothing."""
    return "" if _active is None else f"# {_active}\n"


def on_figure(figure) -> None:
    """The banner on a matplotlib figure: a watermark across it and the text at its foot."""
    if _active is not None:
        figure.text(0.5, 0.5, "REHEARSAL: random weights", ha="center", va="center", rotation=25, fontsize=26,
                    color="darkred", alpha=0.18, weight="bold")
        figure.text(0.5, 0.003, "\n".join(textwrap.wrap(_active, 120)), ha="center", va="bottom", fontsize=5,
                    color="darkred")
