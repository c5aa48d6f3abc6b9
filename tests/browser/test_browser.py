"""The docs site and the HTML timeline, opened in headless Chromium: they render.

Opt-in (``nox -s browser``; CI runs them where it can install Chromium): see conftest.py.
Each page is screenshotted and the picture read back: not one flat colour, and the
colours that say what was drawn are there.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from headless import Chromium

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

# A page of text and pictures: far from a blank page's 0.
MIN_VARIANCE = 200.0
# The site's header (material's indigo), each picture's telling colour.
HEADER = "#3f51b5"
COLOURS = {"phases": "#2e9d5b", "keys-schedule": "#e07b1a", "benchmark-ratios": "#3b6fd4"}


def test_a_docs_page_renders_with_its_pictures(
    chromium: Chromium, site: Path, tmp_path: Path
) -> None:
    page = (site / "design" / "index.html").as_uri()
    shot = chromium.screenshot(page, tmp_path / "design.png", 1000, 700)
    assert (shot.width, shot.height) == (1000, 700)
    assert shot.luminance_variance() > MIN_VARIANCE
    assert shot.count(HEADER) > 10_000  # the theme's CSS loaded
    dom = chromium.dom(page)
    assert 'src="../images/generated/phases.svg"' in dom
    assert 'src="../images/house.svg"' in dom


@pytest.mark.parametrize("name", sorted(COLOURS))
def test_each_generated_picture_renders(
    chromium: Chromium, site: Path, tmp_path: Path, name: str
) -> None:
    picture = site / "images" / "generated" / f"{name}.svg"
    assert picture.exists(), sorted(p.name for p in picture.parent.glob("*"))
    shot = chromium.screenshot(picture.as_uri(), tmp_path / f"{name}.png", 1250, 900)
    assert shot.luminance_variance() > MIN_VARIANCE
    assert shot.count(COLOURS[name]) > 500


TIMELINE = importlib.util.find_spec("toolnursery.timeline") is not None


@pytest.mark.skipif(
    not TIMELINE,
    reason="the HTML timeline (toolnursery replay --timeline) is not on this branch yet",
)
def test_the_html_timeline_shows_every_call_of_the_demo(chromium: Chromium, tmp_path: Path) -> None:
    from toolnursery.log import read_log

    log, page = tmp_path / "demo.jsonl", tmp_path / "timeline.html"
    toolnursery = [sys.executable, "-m", "toolnursery"]
    subprocess.run([*toolnursery, "demo", "--log", str(log)], check=True, timeout=120)
    subprocess.run(
        [*toolnursery, "replay", str(log), "--timeline", str(page)], check=True, timeout=120
    )
    ids = {event.call.id for event in read_log(log) if hasattr(event, "call")}
    assert len(ids) >= 5
    shot = chromium.screenshot(page.as_uri(), tmp_path / "timeline.png", 1200, 900)
    assert shot.luminance_variance() > MIN_VARIANCE
    dom = chromium.dom(page.as_uri())
    # One row per call, each marked with its id (and labelled with it).
    assert sorted(set(re.findall(r'data-call-id="([^"]+)"', dom))) == sorted(ids)
