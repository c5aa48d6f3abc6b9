"""``toolnursery replay LOG``: a finished or crashed batch from a JsonlRecorder log, as cards.

A torn last line (a crash mid-write) is skipped and every complete event is shown; a call
whose result was never recorded is a pending card; any other line that is not an event
is an error naming it (exit 2). Cards come from the tools' presenters — the bundled
example tools by default, ``--tools`` like ``run`` — and unknown tools get generic cards.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import msgspec
import pytest
import trio
import trio.testing

from toolnursery import HookContext, TextContent, ToolCall, ToolErrorInfo, ToolExecutionResult
from toolnursery.__main__ import main
from toolnursery._cli._cards import NO_RESULT, read_batches
from toolnursery._cli._demo import DEMO_CALLS, run_demo
from toolnursery.examples import fill_sandbox
from toolnursery.log import (
    ApprovalEvent,
    ContextEvent,
    JsonlRecorder,
    RecorderEvent,
    ToolCallEvent,
    ToolResultEvent,
    read_log,
)

Capture = pytest.CaptureFixture[str]


def ok(text: str, meta: object = None) -> ToolExecutionResult:
    return ToolExecutionResult((TextContent(text),), False, meta=meta)


def write_log(path: Path, events: list[RecorderEvent]) -> Path:
    with JsonlRecorder(path) as recorder:
        for event in events:
            recorder.record(event)
    return path


def tear(path: Path, event: RecorderEvent) -> None:
    """Append half of ``event``'s line, as a crash mid-write leaves it."""
    line = msgspec.json.encode(event)
    with open(path, "ab") as file:
        file.write(line[: len(line) // 2])


README = ToolCall("c1", "read_file", '{"path": "README.md"}')
WRITE = ToolCall("c2", "write_file", '{"path": "notes/a.md", "content": "one\\ntwo\\n"}')
SLEEP = ToolCall("c3", "sleep", '{"seconds": 0.5}')
GHOST = ToolCall("c4", "ghost", '{"x": 1}')

FINISHED: list[RecorderEvent] = [
    ToolCallEvent("b1", 0, README),
    ToolCallEvent("b1", 1, WRITE),
    ToolResultEvent("b1", 0, "c1", ok("# Demo\n\nhello\n", {"lines": 3})),
    ToolResultEvent(
        "b1",
        1,
        "c2",
        ok('replaced "notes/a.md" (8 bytes)', {"created": False, "old_text": "one\n"}),
    ),
    ToolCallEvent("b1", 2, SLEEP),
    ToolCallEvent("b1", 3, GHOST),
    ToolResultEvent("b1", 2, "c3", ok("slept 0.5s")),
    ToolResultEvent(
        "b1",
        3,
        "c4",
        ToolExecutionResult(
            (TextContent('Error: unknown tool "ghost"'),),
            True,
            ToolErrorInfo("ToolNotFoundError", "UNKNOWN_TOOL"),
        ),
    ),
    ContextEvent("b1", 1, "c2", HookContext((TextContent("notes/ changed"),), "watcher")),
]

FINISHED_CARDS = """\
batch b1: 4 calls
╭─ Read README.md: 3 lines (read) ───────────╮
│ # Demo                                     │
│                                            │
│ hello                                      │
╰───────────────────────────────────── done ─╯
╭─ Replaced notes/a.md ──────────────────────╮
│ --- a/notes/a.md                           │
│ +++ b/notes/a.md                           │
│ @@ -1 +1,2 @@                              │
│  one                                       │
│ +two                                       │
╰───────────────────────────────────── done ─╯
╭─ terminal ─────────────────────────────────╮
│ $ sleep 0.5                                │
│ slept 0.5s                                 │
╰────────────────────────────── exit code 0 ─╯
╭─ ghost ────────────────────────────────────╮
│ {                                          │
│   "x": 1                                   │
│ }                                          │
│                                            │
│ Error: unknown tool "ghost"                │
╰─────────────────────────────────── failed ─╯
context for c2 from watcher: notes/ changed
"""


def test_a_finished_batch_prints_as_cards(tmp_path: Path, capsys: Capture) -> None:
    log = write_log(tmp_path / "log.jsonl", FINISHED)
    assert main(["replay", str(log), "--width", "46"]) == 0
    captured = capsys.readouterr()
    assert captured.out == FINISHED_CARDS
    assert captured.err == ""


def test_replay_as_markdown(tmp_path: Path, capsys: Capture) -> None:
    log = write_log(tmp_path / "log.jsonl", FINISHED)
    assert main(["replay", str(log), "--markdown"]) == 0
    assert capsys.readouterr().out == textwrap.dedent(
        """\
        ## Batch b1 (4 calls)

        ### Read README.md: 3 lines (read)

        ```text
        # Demo

        hello
        ```

        ### Replaced notes/a.md

        ```diff
        --- a/notes/a.md
        +++ b/notes/a.md
        @@ -1 +1,2 @@
         one
        +two
        ```

        ```console
        $ sleep 0.5
        slept 0.5s
        ```

        Exit code 0

        ### ghost — failed

        ```json
        {
          "x": 1
        }
        ```

        ```text
        Error: unknown tool "ghost"
        ```

        > context for c2 from watcher: notes/ changed

        """
    )


def test_a_torn_last_line_still_shows_every_complete_event(tmp_path: Path, capsys: Capture) -> None:
    log = write_log(tmp_path / "log.jsonl", FINISHED[:6])
    tear(log, FINISHED[6])  # the crash came while c3's result was being written
    assert main(["replay", str(log), "--width", "46"]) == 0
    captured = capsys.readouterr()
    assert captured.out == (
        """\
batch b1: 4 calls, 2 without a result
╭─ Read README.md: 3 lines (read) ───────────╮
│ # Demo                                     │
│                                            │
│ hello                                      │
╰───────────────────────────────────── done ─╯
╭─ Replaced notes/a.md ──────────────────────╮
│ --- a/notes/a.md                           │
│ +++ b/notes/a.md                           │
│ @@ -1 +1,2 @@                              │
│  one                                       │
│ +two                                       │
╰───────────────────────────────────── done ─╯
╭─ terminal ─────────────────────────────────╮
│ $ sleep 0.5                                │
│                                            │
│ no result recorded (the batch did not      │
│ finish)                                    │
╰────────────────────────────────────────────╯
╭─ ghost ────────────────────────────────────╮
│ {                                          │
│   "x": 1                                   │
│ }                                          │
│                                            │
│ no result recorded (the batch did not      │
│ finish)                                    │
╰────────────────────────────────────────────╯
"""
    )
    assert captured.err == (
        f"toolnursery: {log} line 7 is a torn event (a writer died mid-write); skipped\n"
    )


async def test_a_crashed_demo_batch(
    tmp_path: Path, capsys: Capture, autojump_clock: trio.abc.Clock
) -> None:
    """The demo's log, cut as if the process died while c7 moved notes/ideas.md."""
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    fill_sandbox(sandbox)
    log = tmp_path / "demo.jsonl"
    with JsonlRecorder(log) as recorder:
        await run_demo(sandbox, recorder=recorder)
    lines = log.read_bytes().splitlines(keepends=True)
    c7 = next(i for i, line in enumerate(lines) if b'"id":"c7"' in line)
    crashed = tmp_path / "crashed.jsonl"
    crashed.write_bytes(b"".join(lines[: c7 + 1]) + lines[c7 + 1][:70])
    batch = json.loads(lines[0])["batch"]

    assert main(["replay", str(crashed), "--width", "60"]) == 0
    captured = capsys.readouterr()
    assert captured.out.replace(batch, "<id>") == (
        """\
batch <id>: 7 calls, 1 without a result
╭─ Read notes/ideas.md: 2 lines (read) ────────────────────╮
│ - parallel reads                                         │
│ - exclusive writes                                       │
╰─────────────────────────────────────────────────── done ─╯
╭─ List src: 2 entries (read) ─────────────────────────────╮
│ app.py                                                   │
│ util.py                                                  │
╰─────────────────────────────────────────────────── done ─╯
╭─ Search "TODO": 2 matches in 2 files (search) ───────────╮
│ README.md:4: TODO: write the real README.                │
│ src/app.py:2: print("hello")  # TODO: greet by name      │
│ 2 matches in 2 files                                     │
╰─────────────────────────────────────────────────── done ─╯
╭─ terminal ───────────────────────────────────────────────╮
│ $ sleep 0.05                                             │
│ slept 0.05s                                              │
╰──────────────────────────────────────────── exit code 0 ─╯
╭─ Replaced notes/ideas.md ────────────────────────────────╮
│ --- a/notes/ideas.md                                     │
│ +++ b/notes/ideas.md                                     │
│ @@ -1,2 +1,3 @@                                          │
│  - parallel reads                                        │
│ -- exclusive writes                                      │
│ +- keyed writes                                          │
│ +- exclusive moves                                       │
╰─────────────────────────────────────────────────── done ─╯
╭─ Read README.md: 4 lines (read) ─────────────────────────╮
│ # Demo project                                           │
│                                                          │
│ A tiny project for the toolnursery demo.                 │
│ TODO: write the real README.                             │
╰─────────────────────────────────────────────────── done ─╯
╭─ Move notes/ideas.md to notes/archive/ideas.md (move) ───╮
│ files: notes/ideas.md, notes/archive/ideas.md            │
│                                                          │
│ no result recorded (the batch did not finish)            │
╰──────────────────────────────────────────────────────────╯
"""
    )
    assert f"line {c7 + 2} is a torn event" in captured.err


def test_a_process_that_died_mid_batch(tmp_path: Path) -> None:
    """A real crash: the tool kills its process; the log keeps what was committed."""
    tools = tmp_path / "crashtools.py"
    tools.write_text(
        textwrap.dedent(
            """
            import os
            from toolnursery import ToolDefinition, ToolRegistry
            from toolnursery.presentation import GenericCallView

            async def fine(args, ctx):
                return "fine"

            async def die(args, ctx):
                os._exit(3)

            registry = ToolRegistry()
            registry.register(ToolDefinition("fine", "f", {}, fine))
            registry.register(
                ToolDefinition(
                    "die", "d", {}, die, present_call=lambda args: GenericCallView(title="Die now")
                )
            )
            """
        ),
        encoding="utf-8",
    )
    calls = tmp_path / "calls.jsonl"
    calls.write_text(
        '{"id": "a", "name": "fine"}\n{"id": "b", "name": "die"}\n{"id": "c", "name": "fine"}\n'
    )
    log = tmp_path / "log.jsonl"
    command = [sys.executable, "-m", "toolnursery"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    died = subprocess.run(
        [*command, "run", str(calls), "--tools", f"{tools}:registry", "--log", str(log)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert died.returncode == 3
    with open(log, "ab") as file:
        file.write(b'{"event":"tool_result","batch"')  # and a torn line, for good measure
    shown = subprocess.run(
        [*command, "replay", str(log), "--tools", f"{tools}:registry", "--width", "40"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    cards = shown.stdout.split("\n", 1)[1]
    assert shown.stdout.split("\n", 1)[0].endswith(": 2 calls, 1 without a result")
    assert cards == (
        "╭─ fine ───────────────────────────────╮\n"
        "│ {}                                   │\n"
        "│                                      │\n"
        "│ fine                                 │\n"
        "╰─────────────────────────────── done ─╯\n"
        "╭─ Die now ────────────────────────────╮\n"
        "│ no result recorded (the batch did    │\n"
        "│ not finish)                          │\n"
        "╰──────────────────────────────────────╯\n"
    )
    assert "line 4 is a torn event" in shown.stderr


# -- what the log holds ----------------------------------------------------------------------


def test_batches_keep_their_calls_in_index_order(tmp_path: Path, capsys: Capture) -> None:
    log = write_log(
        tmp_path / "log.jsonl",
        [
            ToolCallEvent("b1", 1, ToolCall("y", "ghost", "")),
            ToolCallEvent("b2", 0, ToolCall("x", "ghost", "")),
            ToolCallEvent("b1", 0, ToolCall("x", "ghost", "")),
            ToolResultEvent("b2", 0, "x", ok("second batch")),
            ToolResultEvent("b1", 0, "x", ok("first batch")),
            ToolResultEvent("b1", 1, "y", ok("first batch, y")),
        ],
    )
    assert main(["replay", str(log), "--markdown"]) == 0
    out = capsys.readouterr().out
    assert out.index("## Batch b1 (2 calls)") < out.index("first batch\n")
    assert out.index("first batch\n") < out.index("first batch, y")
    assert out.index("first batch, y") < out.index("## Batch b2 (1 call)")
    assert out.index("## Batch b2 (1 call)") < out.index("second batch")


def test_a_result_whose_call_line_is_missing_is_still_shown(tmp_path: Path) -> None:
    log = write_log(tmp_path / "log.jsonl", [ToolResultEvent("b1", 0, "x", ok("orphan"))])
    batches, torn = read_batches(log)
    assert torn == []
    assert len(batches) == 1
    (entry,) = batches[0].calls
    assert (entry.position, entry.call, entry.result) == (
        0,
        ToolCall("x", "unknown tool"),
        ok("orphan"),
    )


def test_a_corrupt_line_is_an_error_naming_it(tmp_path: Path, capsys: Capture) -> None:
    log = write_log(tmp_path / "log.jsonl", FINISHED[:1])
    with open(log, "ab") as file:
        file.write(b'{"event": "tool_call", "batch": 1}\n')
    with JsonlRecorder(log) as recorder:
        recorder.record(FINISHED[1])
    assert main(["replay", str(log)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"toolnursery: error: {log} line 2: not a toolnursery event: "
        '\'{"event": "tool_call", "batch": 1}\'\n'
    )


@pytest.mark.parametrize("text", ["hello, world", "hello, world\n", "# notes\n\n* one\n"])
def test_a_file_that_is_not_a_log_exits_2_naming_the_line(
    tmp_path: Path, capsys: Capture, text: str
) -> None:
    """It used to say the line was incomplete ("a crash mid-write?") and exit 0."""
    log = tmp_path / "notes.md"
    log.write_text(text)
    assert main(["replay", str(log)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"toolnursery: error: {log} line 1: not a toolnursery event: ")
    assert "crash" not in captured.err


def test_torn_lines_anywhere_are_each_reported_and_skipped(tmp_path: Path, capsys: Capture) -> None:
    log = write_log(tmp_path / "log.jsonl", FINISHED[:1])
    tear(log, FINISHED[1])  # a writer died mid-write...
    write_log(log, FINISHED[1:2])  # ...and the next one started a fresh line
    tear(log, FINISHED[2])
    batches, torn = read_batches(log)
    assert torn == [2, 4]
    assert [entry.call for entry in batches[0].calls] == [README, WRITE]
    assert main(["replay", str(log), "--markdown"]) == 0
    assert capsys.readouterr().err == (
        f"toolnursery: {log} line 2 is a torn event (a writer died mid-write); skipped\n"
        f"toolnursery: {log} line 4 is a torn event (a writer died mid-write); skipped\n"
    )


def test_a_missing_or_empty_log(tmp_path: Path, capsys: Capture) -> None:
    assert main(["replay", str(tmp_path / "nope.jsonl")]) == 2
    assert "cannot read LOG" in capsys.readouterr().err
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert main(["replay", str(empty)]) == 0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"toolnursery: {empty}: no tool calls recorded\n"


# -- presenters ------------------------------------------------------------------------------


def test_tools_give_their_own_presenters_and_unknown_tools_fall_back(
    tmp_path: Path, capsys: Capture
) -> None:
    module = tmp_path / "mytools.py"
    module.write_text(
        textwrap.dedent(
            """
            from toolnursery import ToolDefinition, ToolRegistry
            from toolnursery.presentation import GenericCallView

            async def echo(args, ctx):
                return args["text"]

            registry = ToolRegistry()
            registry.register(
                ToolDefinition(
                    "echo", "e", {}, echo,
                    present_call=lambda args: GenericCallView(title="Echo " + args["text"]),
                )
            )
            """
        ),
        encoding="utf-8",
    )
    log = write_log(
        tmp_path / "log.jsonl",
        [
            ToolCallEvent("b1", 0, ToolCall("a", "echo", '{"text": "hi"}')),
            ToolCallEvent("b1", 1, README),
            ToolResultEvent("b1", 0, "a", ok("hi")),
        ],
    )
    assert main(["replay", str(log), "--tools", f"{module}:registry", "--markdown"]) == 0
    out = capsys.readouterr().out
    assert "### Echo hi\n" in out
    # read_file is not in this registry: a generic card with the raw input.
    assert '### read_file\n\n```json\n{\n  "path": "README.md"\n}\n```' in out
    assert f"*{NO_RESULT[0].upper()}{NO_RESULT[1:]}*" in out


def test_replay_needs_rich_for_terminal_cards_only(
    tmp_path: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = write_log(tmp_path / "log.jsonl", FINISHED)
    monkeypatch.setitem(sys.modules, "rich", None)  # as if it were not installed
    assert main(["replay", str(log)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "toolnursery: error: replay draws cards with rich, which is not installed: "
        "pip install -e '.[cli]' (or pip install rich)\n"
    )
    assert main(["replay", str(log), "--markdown"]) == 0
    assert capsys.readouterr().out.startswith("## Batch b1 (4 calls)")


def test_the_width_defaults_to_80_off_a_terminal(tmp_path: Path, capsys: Capture) -> None:
    log = write_log(tmp_path / "log.jsonl", FINISHED)
    assert main(["replay", str(log)]) == 0
    out = capsys.readouterr().out
    assert "\x1b[" not in out
    widths = {len(line) for line in out.splitlines() if line.startswith(("╭", "│", "╰"))}
    assert widths == {80}
    assert main(["replay", str(log), "--width", "0"]) == 2


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("no_color", ["", "1"])
def test_on_a_terminal_cards_fit_it_and_are_colored_unless_no_color(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_color: str
) -> None:
    log = write_log(tmp_path / "log.jsonl", FINISHED)
    screen = FakeTerminal()
    monkeypatch.setattr(sys, "stdout", screen)
    monkeypatch.setenv("COLUMNS", "52")
    monkeypatch.setenv("NO_COLOR", no_color)
    assert main(["replay", str(log)]) == 0
    out = screen.getvalue()
    assert ("\x1b[" in out) == (not no_color)
    plain = re.sub(r"\x1b\[[0-9;]*m", "", out)
    assert {len(line) for line in plain.splitlines() if line.startswith(("╭", "│", "╰"))} == {52}


# -- --timeline -----------------------------------------------------------------------


def _timeline_rows(svg: str) -> list[ET.Element]:
    root = ET.fromstring(svg.split("\n", 1)[1])
    return [g for g in root.iter("{http://www.w3.org/2000/svg}g") if g.get("class") == "call"]


@pytest.mark.timeout(60)
def test_demo_log_then_replay_timeline_draws_every_call_of_the_log(
    tmp_path: Path, capsys: Capture
) -> None:
    log = tmp_path / "L.jsonl"
    picture = tmp_path / "t.svg"
    assert main(["demo", "--log", str(log)]) == 0
    capsys.readouterr()
    assert main(["replay", str(log), "--timeline", str(picture)]) == 0
    captured = capsys.readouterr()
    assert captured.out == ""  # the picture instead of the cards
    assert f"wrote {picture}: 11 calls" in captured.err
    recorded = [e.call.id for e in read_log(log) if isinstance(e, ToolCallEvent)]
    drawn = _timeline_rows(picture.read_text())
    assert [row.get("data-call-id") for row in drawn] == recorded == [c.id for c in DEMO_CALLS]
    codes = {row.get("data-call-id"): row.get("data-code") for row in drawn}
    assert codes["c1"] == "ok"
    assert codes["c10"] == "INVALID_ARGS"
    assert codes["c11"] == "OUTSIDE_ROOT"


@pytest.mark.timeout(60)
def test_demo_draws_its_own_batch_as_html(tmp_path: Path, capsys: Capture) -> None:
    page = tmp_path / "demo.html"
    assert main(["demo", "--timeline", str(page)]) == 0
    captured = capsys.readouterr()
    assert "timeline:" in captured.out  # the report is still printed
    assert f"wrote {page}: 11 calls" in captured.err
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>")
    assert len(re.findall(r'<template id="card-\d+">', text)) == len(DEMO_CALLS)
    card = re.search(r'<template id="card-4">(.*?)</template>', text, re.S)
    assert card is not None
    assert card.group(1).startswith("c5 write_file — ok")  # the call, its times and waits
    assert "waited for: c1 (file:notes/ideas.md)" in card.group(1)
    assert "### Replaced notes/ideas.md" in card.group(1)  # the tool's own presenter
    svg = text[text.index("<svg") : text.index("</svg>") + 6]
    assert len(_timeline_rows("\n" + svg)) == len(DEMO_CALLS)


@pytest.mark.parametrize(
    "extra",
    [["--timeline", "t.png"], ["--timeline", "t.svg", "--markdown"]],
)
def test_replay_timeline_usage_errors(tmp_path: Path, capsys: Capture, extra: list[str]) -> None:
    log = write_log(tmp_path / "log.jsonl", FINISHED)
    assert main(["replay", str(log), *extra]) == 2
    assert "error:" in capsys.readouterr().err


def test_a_log_without_times_draws_every_call_saying_so(tmp_path: Path) -> None:
    log = write_log(tmp_path / "log.jsonl", FINISHED)
    picture = tmp_path / "old.svg"
    assert main(["replay", str(log), "--timeline", str(picture)]) == 0
    svg = picture.read_text()
    assert [r.get("data-call-id") for r in _timeline_rows(svg)] == ["c1", "c2", "c3", "c4"]
    assert "times unknown" in svg


@pytest.mark.parametrize("walls", [[-1e20], [1e308, -1e308]])
def test_replay_timeline_of_a_log_with_hostile_times_draws_it(
    tmp_path: Path, capsys: Capture, walls: list[float]
) -> None:
    lines = []
    for n, wall in enumerate(walls):
        call = ToolCall(f"c{n}", "fetch\x07", "{}")
        lines.append(msgspec.json.encode(ToolCallEvent(f"b{n}", 0, call, wall, 0.5)))
        lines.append(msgspec.json.encode(ToolResultEvent(f"b{n}", 0, f"c{n}", ok("r"), t=0.5)))
    log = tmp_path / "hostile.jsonl"
    log.write_bytes(b"\n".join(lines) + b"\n")
    picture = tmp_path / "t.svg"
    assert main(["replay", str(log), "--timeline", str(picture)]) == 0
    assert f"wrote {picture}: {len(walls)} call" in capsys.readouterr().err
    drawn = _timeline_rows(picture.read_text())
    assert [row.get("data-call-id") for row in drawn] == [f"c{n}" for n in range(len(walls))]


def failed(text: str) -> ToolExecutionResult:
    return ToolExecutionResult((TextContent(text),), True)


ASKED = [
    ToolCallEvent(batch="b", index=0, call=ToolCall("c0", "send", '{"to":"a"}')),
    ApprovalEvent(batch="b", index=0, call_id="c0", tool="send", reason="check a"),
    ApprovalEvent(
        batch="b", index=0, call_id="c0", tool="send", outcome="allowed-once", reason="check a"
    ),
    ToolResultEvent(batch="b", index=0, call_id="c0", result=ok("sent to a")),
    ToolCallEvent(batch="b", index=1, call=ToolCall("c1", "send", '{"to":"b"}')),
    ApprovalEvent(batch="b", index=1, call_id="c1", tool="send", reason="check b"),
    ApprovalEvent(
        batch="b", index=1, call_id="c1", tool="send", outcome="rejected", reason="check b"
    ),
    ToolResultEvent(
        batch="b", index=1, call_id="c1", result=failed('Error: the user rejected tool "send"')
    ),
    ToolCallEvent(batch="b", index=2, call=ToolCall("c2", "send", '{"to":"c"}')),
    ApprovalEvent(batch="b", index=2, call_id="c2", tool="send", reason="check c"),
    ToolCallEvent(batch="b", index=3, call=ToolCall("c3", "send", '{"to":"d"}')),
]
"""c0 allowed and sent, c1 rejected, c2 asked when the process died, c3 never asked."""


@pytest.mark.parametrize("markdown", [False, True], ids=["terminal", "markdown"])
def test_an_asked_call_says_it_was_asked_and_the_answer(
    tmp_path: Path, capsys: Capture, markdown: bool
) -> None:
    log = write_log(tmp_path / "log.jsonl", ASKED)
    assert main(["replay", str(log), *(["--markdown"] if markdown else ["--width", "60"])]) == 0
    out = capsys.readouterr().out
    quote = "> " if markdown else ""
    said = [line.removeprefix(quote) for line in out.splitlines() if ": approval " in line]
    assert said == [
        "c0 send: approval asked: allowed-once (check a)",
        "c1 send: approval asked: rejected (check b)",
        "c2 send: approval asked, no answer recorded (check c)",
    ]
    # each under its own card: after its result (or its pending note), before the next
    assert out.index("sent to a") < out.index("c0 send: approval") < out.index('"b"')
    assert out.index("the user rejected") < out.index("c1 send: approval") < out.index('"c"')
    assert out.index("c2 send: approval") < out.index('"d"')
    (batch,) = read_batches(log)[0]
    assert [(c.asked, c.answer) for c in batch.calls] == [
        (True, "allowed-once"),
        (True, "rejected"),
        (True, None),
        (False, None),
    ]
