"""What toolnursery draws on a terminal never obeys a control character it was given.

Tool names (a model's choice), progress messages and result text (a tool's, a mounted
server's) reach the one-line status, the live view, ``--show`` cards, ``replay`` and
the messages on stderr: every C0/C1 control character in them is shown escaped
(``\\x1b``), a newline kept only where one is meant. The JSON-lines output escapes
them its own way (JSON's ``\\u001b``) and decodes back to the very text.
"""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path

import msgspec
import pytest

from support import tools_module, write_calls
from toolnursery import ProgressReport, TextContent, ToolCall, ToolExecutionResult
from toolnursery.__main__ import main
from toolnursery._cli._progress import LiveView, ProgressLine
from toolnursery.log import ProgressEvent, ToolCallEvent, ToolResultEvent

TITLE = "\x1b]0;PWNED\x07"  # sets the window title
CLEAR_SCREEN = "\x1b[2J"
LINK = "\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\"  # an OSC 8 hyperlink
CSI_C1 = "\x9b2J"  # the C1 form of CSI
HOSTILE = [TITLE, CLEAR_SCREEN, LINK, CSI_C1, "\x08\x0b\x0c\r\x7f"]

# What toolnursery itself writes: erase a line, move up, SGR styles, OSC-free.
OURS = re.compile(r"\r\x1b\[2K|\x1b\[1A\x1b\[2K|\x1b\[[0-9;]*m|\n")


def obeyed(text: str) -> set[str]:
    """The control characters in ``text`` besides toolnursery's own sequences."""
    return {ch for ch in OURS.sub("", text) if ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F}


def escaped(text: str) -> str:
    return "".join(
        f"\\x{ord(ch):02x}" if ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F else ch for ch in text
    )


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # the status is cut to the terminal's width


@pytest.mark.parametrize("hostile", HOSTILE)
def test_the_one_line_status_shows_names_and_messages_escaped(hostile: str) -> None:
    stream = io.StringIO()
    line = ProgressLine(stream, 2, None)
    line.record(ToolCallEvent("b", 0, ToolCall("c0", f"fetch{hostile}", "{}")))
    line.record(
        ProgressEvent("b", 0, "c0", ProgressReport(progress=1, total=5, message=f"m{hostile}\nx"))
    )
    drawn = stream.getvalue()
    assert obeyed(drawn) == set()
    assert escaped(f"fetch{hostile}") in drawn
    assert escaped(f"m{hostile}") + "\\x0ax" in drawn  # one line: its newline shown too


@pytest.mark.parametrize("hostile", HOSTILE)
def test_the_live_view_shows_names_and_messages_escaped(hostile: str) -> None:
    stream = io.StringIO()
    view = LiveView(stream, 2, None, clock=lambda: 0.0, width=200, interval=0)
    view.record(ToolCallEvent("b", 0, ToolCall(f"c{hostile}", f"fetch{hostile}", "{}")))
    view.record(
        ProgressEvent("b", 0, "c", ProgressReport(progress=1, total=5, message=f"m{hostile}"))
    )
    view.record(
        ProgressEvent("b", 0, "c", ProgressReport(progress=2, total=5, message=f"n{hostile}"))
    )
    drawn = stream.getvalue()
    assert obeyed(drawn) == set()
    assert escaped(f"n{hostile}") in drawn
    view.record(ToolResultEvent("b", 0, "c", ToolExecutionResult((TextContent("r"),), False)))
    view.finish()
    assert obeyed(stream.getvalue()) == set()


TOOLS = """
import trio
from toolnursery import ToolDefinition, ToolRegistry

HOSTILE = {hostile!r}

async def fetch(args, ctx):
    ctx.report_progress(1, 5, message="chunk" + HOSTILE)
    if args.get("linger"):
        await trio.sleep(0.8)  # the workload: the live view ticks (every 0.25 s) meanwhile
    return "got" + HOSTILE

registry = ToolRegistry()
registry.register(ToolDefinition("fetch", "fetch", {{"type": "object"}}, fetch))
"""


@pytest.mark.timeout(30)
@pytest.mark.parametrize("hostile", [TITLE, LINK, CSI_C1])
def test_run_progress_always_draws_no_control_character_of_a_tool_or_a_model(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    hostile: str,
) -> None:
    """``--progress always`` off a terminal: the one-line status, drawn at every event."""
    module = tools_module(tmp_path, TOOLS.format(hostile=hostile))
    calls = write_calls(
        tmp_path,
        {"id": "a", "name": "fetch"},
        {"id": f"b{hostile}", "name": f"ghost{hostile}"},  # a model's own choice of name
    )
    stderr = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stderr)
    argv = ["run", str(calls), "--tools", f"{module}:registry", "--progress", "always"]
    assert main(argv) == 0
    drawn = stderr.getvalue()
    assert obeyed(drawn) == set()
    assert escaped(f"chunk{hostile}") in drawn
    assert escaped(f"ghost{hostile}") in drawn
    out = capsys.readouterr().out
    # JSON lines: escaped as JSON does (C1 and DEL too), the very text once decoded
    assert obeyed(out) == set()
    lines = [msgspec.json.decode(line) for line in out.splitlines()]
    assert [line["id"] for line in lines] == ["a", f"b{hostile}"]
    assert lines[0]["result"]["content"][0]["text"] == f"got{hostile}"


@pytest.mark.timeout(60)
@pytest.mark.parametrize("hostile", [TITLE, CSI_C1])
def test_the_live_view_on_a_pty_draws_no_control_character(tmp_path: Path, hostile: str) -> None:
    """``run`` in a subprocess whose stderr is a real pseudo-terminal: the live view."""
    import os
    import pty
    import subprocess

    module = tools_module(tmp_path, TOOLS.format(hostile=hostile))
    calls = write_calls(tmp_path, {"id": "a", "name": "fetch", "arguments": {"linger": True}})
    master, slave = pty.openpty()
    env = {**os.environ, "COLUMNS": "200", "TERM": "xterm"}
    env.pop("NO_COLOR", None)
    with subprocess.Popen(
        [sys.executable, "-m", "toolnursery", "run", str(calls), "--tools", f"{module}:registry"],
        stdout=subprocess.PIPE,
        stderr=slave,
        env=env,
    ) as process:
        os.close(slave)
        drawn = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            drawn += chunk
        assert process.stdout is not None
        out = process.stdout.read()
        assert process.wait(timeout=30) == 0
    os.close(master)
    text = drawn.decode("utf-8", "replace").replace("\r\n", "\n")  # the pty adds CRs
    assert "toolnursery: 1/1 done" in text
    assert escaped(f"chunk{hostile}") in re.sub(r"\x1b\[[0-9;]*m", "", text)
    assert obeyed(text) == set()
    assert msgspec.json.decode(out)["result"]["content"][0]["text"] == f"got{hostile}"


@pytest.mark.timeout(30)
@pytest.mark.parametrize("hostile", HOSTILE)
def test_show_cards_and_their_replay_draw_no_control_character(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    hostile: str,
) -> None:
    module = tools_module(tmp_path, TOOLS.format(hostile=hostile))
    calls = write_calls(
        tmp_path,
        {"id": "a", "name": "fetch", "arguments": {"q": f"q{hostile}"}},
        {"id": "b", "name": f"ghost{hostile}"},
    )
    log = tmp_path / "log.jsonl"
    argv = ["run", str(calls), "--tools", f"{module}:registry", "--show", "--width", "200"]
    assert main([*argv, "--log", str(log)]) == 0
    captured = capsys.readouterr()
    assert obeyed(captured.out) == obeyed(captured.err) == set()
    assert escaped(f"got{hostile}") in captured.out
    assert escaped(f"ghost{hostile}") in captured.out
    for extra in ([], ["--markdown"]):
        assert main(["replay", str(log), "--tools", f"{module}:registry", *extra]) == 0
        replayed = capsys.readouterr().out
        assert obeyed(replayed) == set()
        assert escaped(f"got{hostile}") in replayed


@pytest.mark.timeout(30)
def test_colored_cards_keep_their_styles_and_escape_the_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from toolnursery._cli import _cards

    module = tools_module(tmp_path, TOOLS.format(hostile=TITLE))
    calls = write_calls(tmp_path, {"id": "a", "name": "fetch"})
    monkeypatch.setattr(_cards, "wants_color", lambda: True)
    from toolnursery._cli import _run

    monkeypatch.setattr(_run, "wants_color", lambda: True)
    assert main(["run", str(calls), "--tools", f"{module}:registry", "--show"]) == 0
    out = capsys.readouterr().out
    assert "\x1b[" in out  # rich's own styles
    assert obeyed(out) == set()
    assert escaped(f"got{TITLE}") in re.sub(r"\x1b\[[0-9;]*m", "", out)
