"""A mistyped option is a usage error naming what was meant; the demo ends with a next step."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolnursery.__main__ import main

Capture = pytest.CaptureFixture[str]


def test_a_mistyped_option_is_a_usage_error_naming_the_option_meant(
    tmp_path: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no file named anthropic: it is not read as the CALLS
    assert main(["run", "--formt", "anthropic"]) == 2
    err = capsys.readouterr().err
    assert "usage: toolnursery run" in err
    assert "unrecognized arguments: --formt (did you mean --format?)" in err
    assert "anthropic" not in err.splitlines()[-1].split("--formt", 1)[0]


def test_an_unknown_option_with_nothing_close_is_named_alone(capsys: Capture) -> None:
    assert main(["replay", "log.jsonl", "--zzzz"]) == 2
    assert capsys.readouterr().err.rstrip().endswith("unrecognized arguments: --zzzz")


def test_the_demo_ends_with_a_next_step(capsys: Capture) -> None:
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    last = out.rstrip().split("\n\n")[-1]
    assert last.startswith("next: ")
    assert "toolnursery demo --timeline" in last
    assert "docs/tutorial.md" in last
