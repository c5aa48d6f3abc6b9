"""The timeline's labels and legend agree with what the demo prints and what is drawn."""

from __future__ import annotations

import re
from pathlib import Path

from toolnursery._cli._demo import run_demo
from toolnursery.examples import fill_sandbox
from toolnursery.log import JsonlRecorder
from toolnursery.timeline import draw_timeline


async def _demo_svg(tmp_path: Path) -> str:
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    fill_sandbox(sandbox)
    log = tmp_path / "demo.jsonl"
    with JsonlRecorder(log) as recorder:
        run = await run_demo(str(sandbox), max_parallel=10, recorder=recorder)
    assert run.denied  # the demo denies a call: the case this checks
    return draw_timeline(log, format="svg")


async def test_a_denied_call_is_labelled_denied_as_the_demo_prints(tmp_path: Path) -> None:
    svg = await _demo_svg(tmp_path)
    assert "DENIED" in svg
    assert ">ERROR<" not in svg
    assert " ERROR" not in svg


async def test_the_legend_swatches_take_the_colour_the_bars_take(tmp_path: Path) -> None:
    svg = await _demo_svg(tmp_path)
    legend = svg.split('<g id="legend"', 1)[1]
    swatches = dict(
        (text, fill)
        for fill, text in re.findall(
            r'<rect width="14" height="10" fill="([^"]+)"[^>]*/>\s*<text[^>]*>([^<]+)</text>',
            legend,
        )
    )
    bars = set(re.findall(r'class="committing"[^>]*fill="([^"]+)"', svg))
    ok = "#2e9d57"
    assert swatches["committing"] == ok  # ok's green, lighter, as an ok call's bars
    assert swatches["running (its result's colour)"] == ok
    assert ok in bars


def _texts(svg: str) -> list[tuple[float, str, str, float, str]]:
    """Each text element: (x, anchor, class, font size, text), unescaped."""
    import html

    out = []
    for attrs, text in re.findall(r"<text([^>]*)>([^<]*)</text>", svg):
        x = float(re.search(r' x="([-0-9.]+)"', attrs).group(1))  # type: ignore[union-attr]
        size = re.search(r'font-size="([0-9.]+)"', attrs)
        anchor = "end" if 'text-anchor="end"' in attrs else "start"
        kind = re.search(r'class="([^"]+)"', attrs)
        out.append(
            (x, anchor, kind.group(1) if kind else "", float(size.group(1)) if size else 12.0,
             html.unescape(text))
        )  # fmt: skip
    return out


async def test_the_picture_is_as_wide_as_its_longest_note_and_labels_fit_left(
    tmp_path: Path,
) -> None:
    """Measured with the metrics the drawing uses (the browser test measures the real
    font): every note ends inside the picture, every label starts inside it, and no note
    is cut short of its own text (up to 90 characters)."""
    from toolnursery._timeline._draw import text_width

    svg = await _demo_svg(tmp_path)
    width = float(re.search(r'<svg[^>]* width="([0-9.]+)"', svg).group(1))  # type: ignore[union-attr]
    texts = _texts(svg)
    notes = [t for t in texts if t[2] == "note"]
    assert notes
    assert not any(t[4].endswith("…") for t in notes)  # the demo's notes are whole
    for x, anchor, kind, size, text in texts:
        if anchor == "start" and kind != "axis":
            assert x + text_width(text, size) <= width, (kind, text)
        if anchor == "end":
            assert x - text_width(text, size) >= 0, (kind, text)
    assert any(x + text_width(t, s) > width - 40 for x, _, k, s, t in notes if k == "note")
