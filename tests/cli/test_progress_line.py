"""``run --progress``: the one-line status and the live view, fed event by event."""

from __future__ import annotations

import argparse
import io
import re
import sys
from pathlib import Path

import msgspec
import pytest

from toolnursery import LogReport, ProgressReport, TextContent, ToolCall, ToolExecutionResult
from toolnursery._batch._recorder import RecorderEvent
from toolnursery._cli._progress import LiveView, ProgressLine
from toolnursery.log import ProgressEvent, ToolCallEvent, ToolResultEvent

OK = ToolExecutionResult((TextContent("ok"),), False)
FAILED = ToolExecutionResult((TextContent("Error: no"),), True)
CLEAR = "\r\x1b[2K"


class Log:
    """A recorder that keeps what it is given."""

    def __init__(self) -> None:
        self.events: list[RecorderEvent] = []

    def record(self, event: RecorderEvent, /) -> None:
        self.events.append(event)


def started(index: int, name: str) -> ToolCallEvent:
    return ToolCallEvent("b", index, ToolCall(f"c{index}", name, "{}"))


def finished(index: int, result: ToolExecutionResult = OK) -> ToolResultEvent:
    return ToolResultEvent("b", index, f"c{index}", result)


def reported(index: int, report: ProgressReport | LogReport) -> ProgressEvent:
    return ProgressEvent("b", index, f"c{index}", report)


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # the status is cut to the terminal's width


def test_every_event_reaches_the_log_even_those_the_status_ignores() -> None:
    log = Log()
    line = ProgressLine(io.StringIO(), 2, log)
    events: list[RecorderEvent] = [
        started(0, "read"),
        reported(0, LogReport(level="info", data="hi")),
        reported(1, ProgressReport(progress=1)),  # call 1 is not running
        finished(0),
    ]
    for event in events:
        line.record(event)
    assert log.events == events


def test_the_status_counts_running_tools_and_shows_the_latest_progress() -> None:
    line = ProgressLine(io.StringIO(), 4, None)
    for event in [
        started(0, "read"),
        started(1, "read"),
        started(2, "sleep"),
        reported(2, ProgressReport(progress=1, total=3, message="waiting")),
        reported(0, ProgressReport(progress=0.5)),
        finished(1, FAILED),
    ]:
        line.record(event)
    assert line.status() == "toolnursery: 1/4 done, 1 failed  running: read, sleep  [read 0.5]"
    line.record(finished(0))
    assert line.status() == ("toolnursery: 2/4 done, 1 failed  running: sleep  [sleep 1/3 waiting]")


def test_a_tool_running_twice_is_counted_once_with_its_number() -> None:
    line = ProgressLine(io.StringIO(), 2, None)
    line.record(started(0, "read"))
    line.record(started(1, "read"))
    assert line.status() == "toolnursery: 0/2 done  running: read x2"


def test_a_log_report_does_not_redraw() -> None:
    stream = io.StringIO()
    line = ProgressLine(stream, 1, None)
    line.record(started(0, "read"))
    drawn = stream.getvalue()
    line.record(reported(0, LogReport(level="info", data="hi")))
    assert stream.getvalue() == drawn


def test_clear_erases_only_a_drawn_status_and_finish_leaves_the_count() -> None:
    stream = io.StringIO()
    line = ProgressLine(stream, 1, None)
    line.clear()
    assert stream.getvalue() == ""
    line.record(started(0, "read"))
    line.record(finished(0, FAILED))
    line.finish()
    assert stream.getvalue().endswith(CLEAR + "toolnursery: 1/1 done, 1 failed\n")
    assert not line.shown


def test_a_status_that_cannot_be_written_does_not_fail_the_batch() -> None:
    class Gone(io.StringIO):
        def write(self, text: str) -> int:
            raise OSError("the terminal went away")

    log = Log()
    line = ProgressLine(Gone(), 1, log)
    line.record(started(0, "read"))
    line.record(finished(0))
    line.finish()
    assert len(log.events) == 2


# -- the live view (a terminal with rich) ---------------------------------------------

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def plain(text: str) -> str:
    return ANSI.sub("", text)


def test_the_live_view_shows_each_call_in_flight_with_its_bar_and_elapsed_time() -> None:
    clock = Clock()
    log = Log()
    view = LiveView(io.StringIO(), 3, log, clock=clock, width=100)
    view.record(started(0, "fetch"))
    clock.now += 1.5
    view.record(started(1, "think"))
    view.record(reported(0, ProgressReport(progress=3, total=4, message="chunk 3")))
    view.record(reported(1, LogReport(level="info", data="hi")))  # no bar for a log
    clock.now += 0.5
    lines = plain(view.render()).splitlines()
    assert lines[0] == "toolnursery: 0/3 done  2.0s"
    assert lines[1].startswith("c0 fetch ")
    assert "3/4 chunk 3" in lines[1]
    assert lines[1].rstrip().endswith("2.0s")
    assert lines[2].startswith("c1 think ")
    assert lines[2].rstrip().endswith("0.5s")
    assert len(lines) == 3
    # The bar of c0 is three quarters full: rich draws done and to-do in two styles.
    bar = view.render().splitlines()[1]
    assert "━" in plain(bar)
    view.record(finished(0, FAILED))
    lines = plain(view.render()).splitlines()
    assert lines[0].startswith("toolnursery: 1/3 done, 1 failed")
    assert [line.split()[0] for line in lines[1:]] == ["c1"]
    assert len(log.events) == 5  # every event reached the log, the ignored one too


def test_the_live_view_counts_the_calls_it_cannot_list() -> None:
    view = LiveView(io.StringIO(), 30, None, clock=Clock(), width=100, rows=3)
    for index in range(5):
        view.record(started(index, "fetch"))
    lines = plain(view.render()).splitlines()
    assert [line.split()[0] for line in lines[1:4]] == ["c0", "c1", "c2"]
    assert lines[4] == "… and 2 more running"


def test_the_live_view_erases_exactly_what_it_drew_and_leaves_the_summary() -> None:
    stream = io.StringIO()
    clock = Clock()
    view = LiveView(stream, 2, None, clock=clock, width=100, interval=0)
    view.clear()
    assert stream.getvalue() == ""
    view.record(started(0, "fetch"))
    view.record(started(1, "fetch"))
    assert view.lines == 3
    stream.seek(0)
    stream.truncate()
    view.clear()
    assert stream.getvalue() == CLEAR + "\x1b[1A\x1b[2K" * 2
    view.record(finished(0))
    view.record(finished(1, FAILED))
    clock.now += 3
    stream.seek(0)
    stream.truncate()
    view.finish()
    assert stream.getvalue() == CLEAR + "toolnursery: 2/2 done, 1 failed in 3.0s\n"
    assert view.lines == 0


def test_a_live_view_that_cannot_be_written_does_not_fail_the_batch() -> None:
    class Gone(io.StringIO):
        def write(self, text: str) -> int:
            raise OSError("the terminal went away")

    log = Log()
    view = LiveView(Gone(), 1, log, clock=Clock(), width=80)
    view.record(started(0, "read"))
    view.record(finished(0))
    view.finish()
    assert len(log.events) == 2


@pytest.mark.parametrize(("tty", "kind"), [(True, LiveView), (False, ProgressLine)])
def test_run_shows_the_live_view_on_a_terminal_and_the_line_elsewhere(
    monkeypatch: pytest.MonkeyPatch, tty: bool, kind: type
) -> None:
    from toolnursery._cli import _run

    class Stderr(io.StringIO):
        def isatty(self) -> bool:
            return tty

    monkeypatch.setattr(sys, "stderr", Stderr())
    options = argparse.Namespace(progress="auto" if tty else "always")
    assert type(_run._status(options, 3, None)) is kind
    assert _run._status(argparse.Namespace(progress="never"), 3, None) is None


@pytest.mark.timeout(30)
def test_run_on_a_terminal_draws_the_live_view_and_ends_with_the_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from support import tools_module, write_calls
    from toolnursery.__main__ import main

    module = tools_module(
        tmp_path,
        """
        import trio
        from toolnursery import ToolDefinition, ToolRegistry

        async def fetch(args, ctx):
            for step in range(3):
                await trio.lowlevel.checkpoint()
                ctx.report_progress(step + 1, 3, "chunk")
            return "ok"

        registry = ToolRegistry()
        registry.register(
            ToolDefinition("fetch", "fetch", {"type": "object"}, fetch,
                           is_concurrency_safe=lambda args: True)
        )
        """,
    )
    calls = write_calls(tmp_path, {"id": "a", "name": "fetch"}, {"id": "b", "name": "fetch"})

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main(["run", str(calls), "--tools", f"{module}:registry"]) == 0
    drawn = plain(terminal.getvalue())
    assert "a fetch" in drawn
    assert re.search(r"toolnursery: 2/2 done in \d+\.\ds\n\Z", drawn)
    out = capsys.readouterr().out
    assert [msgspec.json.decode(line)["id"] for line in out.splitlines()] == ["a", "b"]


def test_the_live_view_renders_at_most_once_an_interval_and_redraws_what_it_rendered() -> None:
    stream = io.StringIO()
    clock = Clock()
    view = LiveView(stream, 1, None, clock=clock, width=100, interval=0.1)
    view.record(started(0, "fetch"))
    first = stream.getvalue()
    assert "c0 fetch" in plain(first)
    view.record(reported(0, ProgressReport(progress=1, total=4)))
    assert stream.getvalue() == first  # within the interval: not rendered, not rewritten
    view.clear()
    view.draw()  # after a result was written: the view comes back as last rendered
    assert stream.getvalue().endswith(first)
    clock.now += 0.2
    view.record(reported(0, ProgressReport(progress=2, total=4)))
    assert "2/4" in plain(stream.getvalue().rsplit("toolnursery:", 1)[1])
    clock.now += 0.01
    view.tick()  # a tick renders whatever the interval: the elapsed time moved on
    assert plain(stream.getvalue()).endswith("0.2s")
