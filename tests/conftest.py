"""Fixtures shared by the test modules (helpers live in ``support``; every test's time
limit in ``time_limits``, a plugin the root conftest loads)."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from toolnursery.examples import fill_sandbox


@pytest.fixture
def sigint_default() -> Iterator[None]:
    """SIGINT raises ``KeyboardInterrupt`` during the test, as in an interactive shell.

    A test that sends itself SIGINT must not inherit pytest's disposition: started in the
    background by a script (``&``, ``nohup``), pytest runs with SIGINT ignored.
    """
    with _sigint(signal.default_int_handler):
        yield


@pytest.fixture
def sigint_ignored() -> Iterator[None]:
    """SIGINT is ignored during the test, as in a script's background job."""
    with _sigint(signal.SIG_IGN):
        yield


@contextlib.contextmanager
def _sigint(handler: Any) -> Iterator[None]:
    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A directory filled with the bundled example project, for the example tools."""
    sandbox = tmp_path / "root"
    sandbox.mkdir()
    fill_sandbox(sandbox)
    return sandbox


# Hypothesis: no per-example deadline. A test's time is bounded by its time limit
# (pytest-timeout, tests/time_limits.py), and speed is measured in benchmarks/, never
# asserted: on a loaded machine (or beside another xdist worker) a deadline only flakes.
settings.register_profile("suite", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "suite"))
