"""What the ``toolnursery`` commands share: counts, CALLS, ``--tools``, ``--root``, ``--log``."""

from __future__ import annotations

import argparse
import io
import sys
from contextlib import ExitStack
from pathlib import Path

import pytest

import toolnursery
from support import tools_module, write_calls
from toolnursery import ToolCall
from toolnursery.__main__ import main
from toolnursery._cli._common import (
    MAX_CALLS,
    MAX_PARALLEL,
    MAX_REPEAT,
    MAX_WIDTH,
    UsageError,
    bounded_int,
    load_registry,
    open_log,
    read_calls,
    sandbox_registry,
    say,
    version,
)
from toolnursery._cli._main import _parser


def test_bounded_int_takes_one_up_to_its_limit() -> None:
    count = bounded_int(12)
    assert count("1") == 1
    assert count("12") == 12


@pytest.mark.parametrize("text", ["0", "-3", "x", "1.5", "", "13", "99999999999999999999"])
def test_bounded_int_refuses_anything_else_naming_it_and_the_limit(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError) as raised:
        bounded_int(12)(text)
    assert str(raised.value) == f"expected a positive integer of at most 12, got {text!r}"


def test_bounded_int_cuts_a_number_too_long_to_convert() -> None:
    text = "9" * 10_000  # past int()'s digit limit: a ValueError, not a huge int
    with pytest.raises(argparse.ArgumentTypeError) as raised:
        bounded_int(12)(text)
    assert str(raised.value) == f"expected a positive integer of at most 12, got {'9' * 37!r}..."


HUGE = "99999999999999999999"

BOUNDED = [
    (["bench", "-n"], MAX_CALLS),
    (["bench", "--repeat"], MAX_REPEAT),
    (["bench", "--max-parallel"], MAX_PARALLEL),
    (["run", "calls.jsonl", "--max-parallel"], MAX_PARALLEL),
    (["run", "calls.jsonl", "--show", "--width"], MAX_WIDTH),
    (["demo", "--max-parallel"], MAX_PARALLEL),
    (["replay", "log.jsonl", "--width"], MAX_WIDTH),
]


@pytest.mark.parametrize(("argv", "limit"), BOUNDED)
def test_every_count_option_refuses_a_huge_number_in_one_line_naming_it(
    capsys: pytest.CaptureFixture[str], argv: list[str], limit: int
) -> None:
    assert main([*argv, HUGE]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines()[-1] == (
        f"toolnursery {argv[0]}: error: argument {argv[-1]}: expected a positive integer "
        f"of at most {limit}, got {HUGE!r}"
    )
    assert _parser().parse_args([*argv, str(limit)]) is not None  # the limit itself is taken


def _typed_options() -> list[tuple[str, argparse.Action]]:
    commands = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    return [
        (name, action)
        for name, sub in commands.choices.items()
        for action in sub._actions
        if action.type is not None
    ]


def test_no_option_of_any_command_takes_an_unbounded_number() -> None:
    typed = _typed_options()
    for _, action in typed:
        assert callable(action.type)
        with pytest.raises(argparse.ArgumentTypeError):
            action.type(HUGE)  # a count, a size or a port: each has a ceiling
    options = {(name, action.option_strings[-1]) for name, action in typed}
    # every count or size option is pinned by the test above; serve --http is a port
    assert options == {(argv[0], argv[-1]) for argv, _ in BOUNDED} | {("serve", "--http")}


def test_read_calls_reads_a_file(tmp_path: Path) -> None:
    calls = write_calls(tmp_path, {"id": "a", "name": "list_dir", "arguments": {}})
    assert read_calls(str(calls)) == [ToolCall("a", "list_dir", "{}")]


def test_read_calls_reads_stdin_for_a_dash(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO('{"id": "a", "name": "list_dir"}\n'))
    assert [call.id for call in read_calls("-")] == ["a"]


def test_stdin_that_is_not_utf8_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    stdin = io.TextIOWrapper(io.BytesIO(b"\xff\xfe\n"), encoding="utf-8")
    monkeypatch.setattr(sys, "stdin", stdin)
    with pytest.raises(UsageError, match=r"^<stdin>: not UTF-8 text$"):
        read_calls("-")


def test_a_file_that_is_not_utf8_names_the_line(tmp_path: Path) -> None:
    calls = tmp_path / "calls.jsonl"
    calls.write_bytes(b'{"id": "a", "name": "x"}\n\n\xff\n')
    with pytest.raises(UsageError, match=r"line 3: not UTF-8 text$"):
        read_calls(str(calls))


def test_input_that_does_not_parse_is_a_usage_error_naming_the_source(tmp_path: Path) -> None:
    calls = tmp_path / "calls.json"
    calls.write_text('{"nope": 1}', encoding="utf-8")
    with pytest.raises(UsageError, match=str(calls)):
        read_calls(str(calls))


def test_a_tools_file_that_fails_to_import_leaves_no_module_behind(tmp_path: Path) -> None:
    module = tools_module(tmp_path, "raise RuntimeError('half-way')\n")
    before = set(sys.modules)
    with pytest.raises(UsageError, match="raised RuntimeError: half-way"):
        load_registry(f"{module}:registry")
    assert set(sys.modules) == before


def test_a_tools_path_that_is_not_python_is_a_usage_error(tmp_path: Path) -> None:
    data = tmp_path / "tools.txt"
    data.write_text("registry = 1\n", encoding="utf-8")
    with pytest.raises(UsageError, match="is not a Python file"):
        load_registry(f"{data}:registry")


def test_without_root_the_example_tools_work_in_a_sandbox_removed_on_exit(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with ExitStack() as stack:
        registry = sandbox_registry(None, stack)
        err = capsys.readouterr().err
        assert err.startswith("toolnursery: no --root: the example tools work in a temporary ")
        sandbox = Path(err.split("temporary sandbox ", 1)[1].split(" ", 1)[0])
        assert (sandbox / "README.md").is_file()
        assert registry.get("read_file") is not None
    assert not sandbox.exists()


def test_a_root_that_is_not_a_directory_is_a_usage_error(tmp_path: Path) -> None:
    plain = tmp_path / "file"
    plain.write_text("", encoding="utf-8")
    with ExitStack() as stack, pytest.raises(UsageError, match="is not a directory"):
        sandbox_registry(str(plain), stack)


def test_open_log_is_none_without_log_and_closed_with_the_stack(tmp_path: Path) -> None:
    with ExitStack() as stack:
        assert open_log(None, stack) is None
        recorder = open_log(str(tmp_path / "log.jsonl"), stack)
        assert recorder is not None
    with pytest.raises(ValueError, match="is closed"):
        recorder.record(toolnursery.log.ToolCallEvent("b", 0, ToolCall("a", "x", "{}")))


def test_a_log_that_cannot_be_opened_is_a_usage_error(tmp_path: Path) -> None:
    with ExitStack() as stack, pytest.raises(UsageError, match="cannot open --log"):
        open_log(str(tmp_path / "missing" / "log.jsonl"), stack)


def test_say_writes_one_prefixed_line_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    say("hello")
    assert capsys.readouterr() == ("", "toolnursery: hello\n")


def test_version_is_the_packages_own_from_a_wheel_or_a_bare_tree() -> None:
    assert version() == toolnursery.__version__
