"""Every ```python block in docs/ and README.md runs as a test, through Sybil.

The blocks of one page run in order, in one namespace, in a fresh temporary working
directory, so a page (the tutorial) builds on its earlier blocks and may write files.
The convention for blocks that must not run (a network service, a signature sketch, a
fragment) is in docs/contributing.md: ``<!-- skip: next -->`` on the line before the
block, or a ``text``/``sh``/``json`` fence for output, commands and data.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from sybil import Sybil
from sybil.parsers.markdown import ClearNamespaceParser, PythonCodeBlockParser, SkipParser


@pytest.fixture(scope="module")
def docs_workdir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One empty working directory per page, for the examples that write files."""
    previous = Path.cwd()
    workdir = tmp_path_factory.mktemp("docs")
    os.chdir(workdir)
    try:
        yield workdir
    finally:
        os.chdir(previous)


# Every test's time limit, the docs' examples included (tests/time_limits.py).
pytest_plugins = ["time_limits"]

pytest_collect_file = Sybil(
    parsers=[PythonCodeBlockParser(), SkipParser(), ClearNamespaceParser()],
    patterns=["*.md"],
    fixtures=["docs_workdir"],
).pytest()
