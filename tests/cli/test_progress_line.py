"""``run --progress``: the one-line status, fed event by event."""

from __future__ import annotations

import io

import pytest

from toolnursery import LogReport, ProgressReport, TextContent, ToolCall, ToolExecutionResult
from toolnursery._batch._recorder import RecorderEvent
from toolnursery._cli._progress import ProgressLine
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
