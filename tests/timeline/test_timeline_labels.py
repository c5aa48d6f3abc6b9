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
