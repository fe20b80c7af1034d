"""The HTML report's layout as a real browser lays it out: Debian's chromium, headless, at a given window size.

A copy of the report gets a script that, once the page has rendered, measures the front page's scrolling panel and
every heading in it and writes the numbers into the DOM, which ``chromium --dump-dom`` prints.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

MEASURE = """
<script>
window.addEventListener("load", () => setTimeout(() => {
  const panel = [...document.querySelectorAll("div")].find(d => d.classList.contains("h-screen")
                                                            && d.classList.contains("overflow-auto"));
  const box = panel.getBoundingClientRect();
  const heads = [...panel.querySelectorAll("h1, h2, h3")].map(h => ({
    text: h.textContent.trim(),
    top: h.getBoundingClientRect().top - box.top + panel.scrollTop,  // from the scroll origin: < 0 is unreachable
  }));
  const out = document.createElement("pre");
  out.id = "layout-check";
  out.textContent = JSON.stringify({height: panel.clientHeight, scrollHeight: panel.scrollHeight,
                                    scrollTop: panel.scrollTop, heads});
  document.body.appendChild(out);
}, 1000));
</script>
"""


def chromium() -> str:
    """Debian's chromium (bin/setup installs it)."""
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        raise AssertionError("chromium is not installed (bin/setup installs Debian's chromium for this test)")
    return path


def report_layout(report: Path, width: int, height: int, workdir: Path) -> dict:
    """The report's front-page panel (its height, scroll height, initial scroll) and each heading's offset from
    the panel's scroll origin, laid out in a ``width`` x ``height`` window."""
    page = workdir / f"measured-{width}x{height}.html"
    html = report.read_text(encoding="utf-8")
    end = html.rindex("</body>")  # the page's own: an embedded result may hold one too
    page.write_text(html[:end] + MEASURE + html[end:], encoding="utf-8")
    result = subprocess.run(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         f"--window-size={width},{height}", "--virtual-time-budget=15000", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=180)
    found = re.search(r'<pre id="layout-check">(.*?)</pre>', result.stdout, re.S)
    if found is None:
        raise AssertionError(f"no layout measured: {result.stderr[-2000:]}")
    return json.loads(found.group(1).replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">"))
