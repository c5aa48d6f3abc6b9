"""The browser tests' fixtures: Chromium (tests/headless.py) and the built site.

The tests are opt-in (``TOOLNURSERY_BROWSER=1``; ``nox -s browser`` sets it and builds
the site into ``TOOLNURSERY_BROWSER_SITE``): they need Chromium (``apt-get install
chromium`` on Debian, or ``TOOLNURSERY_CHROMIUM`` naming the binary) and, for the docs
pages, a built site.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from headless import Chromium


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "browser: runs headless Chromium (nox -s browser)")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if os.environ.get("TOOLNURSERY_BROWSER") == "1":
        return
    skip = pytest.mark.skip(reason="browser tests are opt-in: nox -s browser")
    for item in items:
        if item.get_closest_marker("browser"):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def chromium() -> Chromium:
    binary = os.environ.get("TOOLNURSERY_CHROMIUM") or next(
        filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None
    )
    if binary is None:
        pytest.skip("no Chromium: apt-get install chromium, or set TOOLNURSERY_CHROMIUM")
    return Chromium(binary)


@pytest.fixture(scope="session")
def site() -> Path:
    """The built documentation site (``mkdocs build --site-dir``)."""
    folder = os.environ.get("TOOLNURSERY_BROWSER_SITE")
    if not folder or not (Path(folder) / "index.html").exists():
        pytest.skip("no built site in TOOLNURSERY_BROWSER_SITE: nox -s browser builds one")
    return Path(folder)
