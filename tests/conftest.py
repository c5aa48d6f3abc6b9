"""Fixtures shared by the test modules (helpers live in ``support``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolnursery.examples import fill_sandbox


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A directory filled with the bundled example project, for the example tools."""
    sandbox = tmp_path / "root"
    sandbox.mkdir()
    fill_sandbox(sandbox)
    return sandbox
