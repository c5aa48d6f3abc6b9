"""The tutorial's timeline as a person sees it: legible where it stands, nothing cut off.

Opt-in (``nox -s browser``): see conftest.py. Chromium lays the built tutorial page out
in a 1280-px-wide window and a script on the page measures the picture; then the same
SVG, inlined at the width it was drawn at there, has every text element measured: its
font size in CSS px as drawn (the size in the SVG times the picture's scale) and its
box against the picture's edges.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest
import trio

from headless import Chromium
from toolnursery import (
    ResourceKey,
    ToolCall,
    ToolDefinition,
    ToolError,
    ToolRegistry,
    ToolRunContext,
    run_tool_calls,
)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

VIEWPORT = (1280, 900)
LEGIBLE_PX = 11.0  # the smallest text a person reads without zooming
PICTURE = "demo-timeline.svg"

_REPORT = """
<script>
addEventListener("load", () => {{
  const out = ({measure})();
  const pre = document.createElement("pre");
  pre.id = "measured";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
}});
</script>
"""

_ON_THE_PAGE = """() => {
  const img = document.querySelector('img[src$="PICTURE"]');
  if (img === null) return {found: false};
  const box = img.getBoundingClientRect();
  const links = [...document.querySelectorAll("a")].map(a => a.href);
  return {
    found: true,
    loaded: img.complete && img.naturalWidth > 0,
    width: box.width,
    natural: img.naturalWidth,
    viewport: document.documentElement.clientWidth,
    linked: links.some(href => href.endsWith("/PICTURE")),
  };
}""".replace("PICTURE", PICTURE)

_IN_THE_PICTURE = """() => {
  const svg = document.querySelector("svg");
  const frame = svg.getBoundingClientRect();
  const scale = frame.width / svg.viewBox.baseVal.width;
  return {
    scale: scale,
    texts: [...svg.querySelectorAll("text")].map(t => {
      const box = t.getBoundingClientRect();
      return {
        text: t.textContent,
        cls: t.getAttribute("class") || t.parentNode.getAttribute("id") || "",
        px: parseFloat(getComputedStyle(t).fontSize) * scale,
        left: box.left - frame.left,
        right: box.right - frame.left,
        frame: frame.width,
      };
    }),
  };
}"""


def _measured(chromium: Chromium, page: Path) -> Any:
    dom = chromium.dom(page.as_uri(), *VIEWPORT)
    found = re.search(r'<pre id="measured">(.*?)</pre>', dom, re.S)
    assert found is not None, dom[-2000:]
    return json.loads(html.unescape(found.group(1)))


def _tutorial(chromium: Chromium, site: Path, tmp_path: Path) -> Any:
    """The built tutorial page, with a measuring script, as a 1280-px window lays it out."""
    folder = site / "tutorial"
    source = (folder / "index.html").read_text(encoding="utf-8")
    base = f'<base href="{folder.as_uri()}/">'
    page = tmp_path / "tutorial.html"
    page.write_text(
        source.replace("<head>", "<head>" + base, 1).replace(
            "</body>", _REPORT.format(measure=_ON_THE_PAGE) + "</body>", 1
        ),
        encoding="utf-8",
    )
    return _measured(chromium, page)


def _picture(chromium: Chromium, site: Path, tmp_path: Path, width: float) -> Any:
    """The picture inlined at ``width`` CSS px, its text measured."""
    svg = (site / "images" / "generated" / PICTURE).read_text(encoding="utf-8")
    svg = re.sub(r"<\?xml[^>]*\?>", "", svg)
    page = tmp_path / "picture.html"
    page.write_text(
        '<!doctype html><html><head><meta charset="utf-8"></head>'
        f'<body style="margin:0"><div style="width:{width}px">'
        + svg.replace("<svg ", f'<svg style="display:block;width:{width}px;height:auto" ', 1)
        + "</div>"
        + _REPORT.format(measure=_IN_THE_PICTURE)
        + "</body></html>",
        encoding="utf-8",
    )
    return _measured(chromium, page)


def test_the_tutorial_shows_the_timeline_at_a_legible_size_and_links_it(
    chromium: Chromium, site: Path, tmp_path: Path
) -> None:
    shown = _tutorial(chromium, site, tmp_path)
    assert shown["found"], "the tutorial has no demo timeline"
    assert shown["loaded"], "the timeline did not load"
    assert shown["viewport"] <= VIEWPORT[0]
    assert shown["linked"], "the tutorial does not link the picture at full size"
    measured = _picture(chromium, site, tmp_path, shown["width"])
    # The picture is drawn at its own size on the page (not scaled down to the column).
    assert shown["width"] == pytest.approx(shown["natural"], abs=1)
    assert measured["scale"] == pytest.approx(shown["width"] / shown["natural"], rel=0.01)
    small = sorted(
        {
            (round(t["px"], 1), t["cls"], t["text"])
            for t in measured["texts"]
            if t["px"] < LEGIBLE_PX
        }
    )
    assert small == [], f"text under {LEGIBLE_PX} CSS px: {small[:8]}"


def test_no_text_of_the_timeline_runs_past_its_edges(
    chromium: Chromium, site: Path, tmp_path: Path
) -> None:
    shown = _tutorial(chromium, site, tmp_path)
    measured = _picture(chromium, site, tmp_path, shown["width"])
    texts = measured["texts"]
    assert any(t["cls"] == "note" for t in texts), "the demo's timeline has no notes"
    past = [
        (t["cls"], t["text"], round(t["left"], 1), round(t["right"] - t["frame"], 1))
        for t in texts
        if t["left"] < -0.5 or t["right"] > t["frame"] + 0.5
    ]
    assert past == [], (
        f"text cut off at the picture's edges (class, text, left, past right): {past}"
    )


class _Wide(ToolError):
    code = "WWWW_MMMM_QUOTA_EXCEEDED_WWW"


def _wide_registry() -> ToolRegistry:
    registry = ToolRegistry()

    async def body(args: Any, ctx: ToolRunContext) -> str:
        await trio.sleep(0.01)
        if args.get("fail"):
            raise _Wide("no room")
        return "done"

    for name in ("WRITE_WWWWWWWWWWWWWWWWWWWWWWWWWWWWWW", "m" * 40):
        registry.register(
            ToolDefinition(
                name,
                "writes",
                {"type": "object"},
                body,
                concurrency_keys=lambda args: [ResourceKey.write("WWW:" + "W" * 30)],
            )
        )
    return registry


def test_long_labels_and_notes_stay_inside_any_timeline(chromium: Chromium, tmp_path: Path) -> None:
    """The widest text a log can hold (uppercase, long ids, long codes, long waits) drawn
    in Chromium's own sans-serif: every label and note fits inside the picture."""
    from toolnursery.log import JsonlRecorder
    from toolnursery.timeline import draw_timeline

    names = ["WRITE_WWWWWWWWWWWWWWWWWWWWWWWWWWWWWW", "m" * 40]
    calls = [
        ToolCall(f"CALL_WWWWWWWW_{i}", names[i % 2], '{"fail": true}' if i % 3 else "{}")
        for i in range(6)
    ] + [ToolCall("MMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMM", "NO_SUCH_TOOL_WWWWWWWWWWWWW", "{}")]
    log = tmp_path / "wide.jsonl"
    with JsonlRecorder(log) as recorder:
        trio.run(lambda: run_tool_calls(_wide_registry(), calls, recorder=recorder))
    svg = draw_timeline(log, title="W" * 40)
    site = tmp_path / "site"
    (site / "images" / "generated").mkdir(parents=True)
    (site / "images" / "generated" / PICTURE).write_text(svg, encoding="utf-8")
    natural = float(re.search(r'<svg[^>]* width="([0-9.]+)"', svg).group(1))  # type: ignore[union-attr]
    measured = _picture(chromium, site, tmp_path, natural)
    texts = measured["texts"]
    assert sum(t["cls"] == "note" for t in texts) >= len(calls) - 1  # the first waited for none
    past = [
        (t["cls"], t["text"], round(t["left"], 1), round(t["right"] - t["frame"], 1))
        for t in texts
        if t["left"] < -0.5 or t["right"] > t["frame"] + 0.5
    ]
    assert past == [], (
        f"text cut off at the picture's edges (class, text, left, past right): {past}"
    )
    labels = [t for t in texts if t["cls"] == "label"]
    assert len(labels) == len(calls)
    assert all(t["right"] <= 250 for t in labels)  # left of the plot they label
