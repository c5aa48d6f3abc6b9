"""The README's quickstart runs as written and prints what it says it prints."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_readme_has_a_quickstart() -> None:
    assert _python_blocks(), "README.md lost its python quickstart"


def test_quickstart_runs(capsys: pytest.CaptureFixture[str]) -> None:
    code = _python_blocks()[0]
    exec(compile(code, str(README), "exec"), {"__name__": "__readme__"})
    printed = capsys.readouterr().out.strip().splitlines()
    expected = re.search(r"# (\['hi'.*\])", code)
    assert expected is not None
    assert printed[-1] == expected.group(1)
