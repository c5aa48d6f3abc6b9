"""Per-call progress and log reports: ctx.report_progress / ctx.log, sinks, batches,
the recorder and the command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio
import trio.testing

from support import always
from toolnursery import (
    CallReport,
    LogReport,
    ProgressReport,
    ToolCall,
    ToolDefinition,
    ToolExecutionInput,
    ToolRegistry,
    report_log,
    report_progress,
    reporting,
    run_tool_calls,
)
from toolnursery._core._progress import current_sink, install_sink, remove_sink
from toolnursery.log import (
    JsonlRecorder,
    ProgressEvent,
    ToolCallEvent,
    ToolResultEvent,
    read_log,
    replay_log,
)


async def stepper(args: Any, ctx: Any) -> str:
    for step in range(1, int(args.get("steps", 3)) + 1):
        ctx.report_progress(step, args.get("steps", 3), f"step {step}")
        await trio.sleep(0.001)
    ctx.log("info", {"finished": ctx.call_id})
    return "done"


def sync_stepper(args: Any, ctx: Any) -> str:
    ctx.report_progress(1, 1, "thread")
    return "done"


def registry() -> ToolRegistry:
    reg = ToolRegistry()
    reg.register(
        ToolDefinition("step", "d", {"type": "object"}, stepper, is_concurrency_safe=always)
    )
    reg.register(ToolDefinition("sync", "d", {"type": "object"}, sync_stepper))
    return reg


async def test_reports_reach_the_sink_in_order_with_the_call_id() -> None:
    reports: list[Any] = []
    with reporting(reports.append):
        result = await registry().execute(ToolExecutionInput("c1", "step", {"steps": 2}))
    assert not result.is_error
    assert reports == [
        ProgressReport(progress=1, total=2, message="step 1", call_id="c1"),
        ProgressReport(progress=2, total=2, message="step 2", call_id="c1"),
        LogReport(level="info", data={"finished": "c1"}, call_id="c1"),
    ]


async def test_a_thread_body_reports_too() -> None:
    reports: list[Any] = []
    with reporting(reports.append):
        await registry().execute(ToolExecutionInput("t", "sync", {}))
    assert reports == [ProgressReport(progress=1, total=1, message="thread", call_id="t")]


async def test_without_a_sink_reporting_does_nothing() -> None:
    result = await registry().execute(ToolExecutionInput("c", "step", {}))
    assert not result.is_error
    report_progress(1)  # outside any call and any sink
    report_log("debug", "nobody listens")


async def test_sinks_nest_innermost_first() -> None:
    seen: list[str] = []
    with reporting(lambda r: seen.append("outer")), reporting(lambda r: seen.append("inner")):
        report_progress(1)
    assert seen == ["inner", "outer"]


def test_bad_reports_are_refused() -> None:
    with reporting(lambda r: None):
        with pytest.raises(ValueError, match="finite"):
            report_progress(float("nan"))
        with pytest.raises(ValueError, match="total"):
            report_progress(1, total=True)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="level"):
            report_log("loud", "x")  # type: ignore[arg-type]


async def test_a_batchs_parallel_calls_report_per_call_in_order(autojump_clock: Any) -> None:
    """A sink around the batch hears every call, each call's reports in order."""
    reports: list[Any] = []
    calls = [ToolCall(f"c{i}", "step", json.dumps({"steps": 3})) for i in range(4)]
    with trio.fail_after(10), reporting(reports.append):
        results = await run_tool_calls(registry(), calls)
    assert all(not r.is_error for r in results)
    for i in range(4):
        mine = [
            r.progress for r in reports if isinstance(r, ProgressReport) and r.call_id == f"c{i}"
        ]
        assert mine == [1, 2, 3]
    # the calls overlapped: every call's first report came before any call's last one
    firsts = [i for i, r in enumerate(reports) if isinstance(r, ProgressReport) and r.progress == 1]
    lasts = [i for i, r in enumerate(reports) if isinstance(r, ProgressReport) and r.progress == 3]
    assert max(firsts) < min(lasts)


async def test_the_recorder_logs_progress_events_that_replay(
    tmp_path: Path, autojump_clock: Any
) -> None:
    path = tmp_path / "run.jsonl"
    calls = [ToolCall("a", "step", '{"steps": 2}'), ToolCall("b", "step", '{"steps": 1}')]
    with JsonlRecorder(path) as log, trio.fail_after(10):
        await run_tool_calls(registry(), calls, recorder=log)
    events = read_log(path)
    progress = [e for e in events if isinstance(e, ProgressEvent)]
    assert len(progress) == 5  # three progress reports and two log lines
    for call_id, index, expected in (("a", 0, [1, 2]), ("b", 1, [1])):
        mine = [e for e in progress if e.call_id == call_id]
        assert [e.report.progress for e in mine if isinstance(e.report, ProgressReport)] == expected
        assert {e.index for e in mine} == {index}
        started = next(
            i for i, e in enumerate(events) if isinstance(e, ToolCallEvent) and e.call.id == call_id
        )
        ended = next(
            i
            for i, e in enumerate(events)
            if isinstance(e, ToolResultEvent) and e.call_id == call_id
        )
        assert all(started < events.index(e) < ended for e in mine)
    assert [call.id for call, _ in replay_log(path)] == ["a", "b"]


TOOLS = """
import trio
from toolnursery import ToolDefinition, ToolRegistry

async def slow(args, ctx):
    for step in (1, 2):
        ctx.report_progress(step, 2, "working")
        await trio.sleep(0.01)
    return "ok"

def make():
    registry = ToolRegistry()
    registry.register(ToolDefinition("slow", "d", {"type": "object"}, slow))
    return registry
"""


def test_the_command_logs_progress_and_shows_it(tmp_path: Path) -> None:
    tools = tmp_path / "tools.py"
    tools.write_text(TOOLS)
    calls = tmp_path / "calls.jsonl"
    calls.write_text('{"id": "s1", "name": "slow", "arguments": "{}"}\n')
    log = tmp_path / "run.jsonl"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "toolnursery",
            "run",
            str(calls),
            "--tools",
            f"{tools}:make",
            "--log",
            str(log),
            "--progress",
            "always",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "[slow 1/2 working]" in done.stderr
    events = [e for e in read_log(log) if isinstance(e, ProgressEvent)]
    assert [e.report.progress for e in events if isinstance(e.report, ProgressReport)] == [1, 2]


async def test_an_open_tool_batch_consumer_sees_the_reports(autojump_clock: Any) -> None:
    from toolnursery import open_tool_batch

    reports: list[Any] = []
    with reporting(reports.append):
        async with open_tool_batch(registry()) as batch:
            batch.submit(ToolCall("x", "step", '{"steps": 2}'))
            batch.close()
            results = [result async for _, result in batch]
    assert not results[0].is_error
    assert [r.progress for r in reports if isinstance(r, ProgressReport)] == [1, 2]


# -- sinks and reports on their own ---------------------------------------------------------


def test_install_and_remove_a_sink_by_hand() -> None:
    seen: list[Any] = []
    assert current_sink() is None
    token = install_sink(seen.append)
    assert current_sink() is not None
    report_progress(1, message="one")
    inner = install_sink(lambda report: seen.append("inner"))
    report_log("info", "two")
    remove_sink(inner)
    report_progress(3)
    remove_sink(token)
    assert current_sink() is None
    report_progress(4)  # nobody listens any more
    assert seen == [
        ProgressReport(progress=1, message="one"),
        "inner",
        LogReport(level="info", data="two"),
        ProgressReport(progress=3),
    ]


def test_a_lone_sink_is_installed_as_itself() -> None:
    def sink(report: Any) -> None:
        pass

    with reporting(sink):
        assert current_sink() is sink


def test_a_sink_that_raises_fails_the_report() -> None:
    def broken(report: Any) -> None:
        raise RuntimeError("sink broke")

    reached: list[Any] = []
    with (
        reporting(reached.append),
        reporting(broken),
        pytest.raises(RuntimeError, match="sink broke"),
    ):
        report_progress(1)
    assert reached == []  # the inner sink failed first


async def test_a_body_whose_report_fails_fails_with_it() -> None:
    def broken(report: Any) -> None:
        raise RuntimeError("sink broke")

    with reporting(broken):
        result = await registry().execute(ToolExecutionInput("c1", "step", {"steps": 1}))
    assert result.is_error
    assert "sink broke" in result.content[0].text  # type: ignore[union-attr]


def test_reports_travel_tagged_in_camel_case_without_defaults() -> None:
    progress = ProgressReport(progress=2, total=4, call_id="c1")
    assert json.loads(msgspec.json.encode(progress)) == {
        "type": "progress",
        "progress": 2,
        "total": 4,
        "callId": "c1",
    }
    log = LogReport(level="warning", data={"n": [1]}, logger="fs")
    assert json.loads(msgspec.json.encode(log)) == {
        "type": "log",
        "level": "warning",
        "data": {"n": [1]},
        "logger": "fs",
    }
    decoded = msgspec.json.decode(msgspec.json.encode([progress, log]), type=list[CallReport])
    assert decoded == [progress, log]
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(b'{"type":"log","level":"loud","data":1}', type=CallReport)


@pytest.mark.parametrize(
    "bad", [float("inf"), float("-inf"), float("nan"), "1", True, 10**400, -(10**400)]
)
def test_progress_and_total_must_be_finite_numbers(bad: Any) -> None:
    with reporting(lambda report: None):
        with pytest.raises(ValueError, match=r"report_progress\(\): progress must be a finite"):
            report_progress(bad)
        with pytest.raises(ValueError, match=r"report_progress\(\): total must be a finite"):
            report_progress(1, total=bad)


def test_progress_none_is_refused() -> None:
    with reporting(lambda report: None), pytest.raises(ValueError, match="progress must be"):
        report_progress(None)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [3, b"bytes", {"text": "x"}])
def test_a_progress_message_must_be_text(bad: Any) -> None:
    reports: list[Any] = []
    with reporting(reports.append), pytest.raises(ValueError, match="message must be a str"):
        report_progress(1, message=bad)
    assert reports == []


def waking_registry() -> tuple[ToolRegistry, list[str]]:
    """A sync body reporting progress and a log line (from its worker thread)."""
    seen: list[str] = []

    def body(args: Any, ctx: Any) -> str:
        ctx.report_progress(1, 2, "half")
        ctx.log("info", "from the thread")
        return "done"

    reg = ToolRegistry()
    reg.register(ToolDefinition("threaded", "d", {"type": "object"}, body))
    return reg, seen


async def test_a_thread_body_reports_to_a_sink_that_wakes_a_trio_task() -> None:
    # The sink is a channel's send_nowait, which wakes the receiving task: called from
    # the worker thread as it is, it would corrupt the run (TrioInternalError).
    registry, _ = waking_registry()
    send, receive = trio.open_memory_channel[CallReport](10)
    received: list[CallReport] = []

    async def drain() -> None:
        async for report in receive:
            received.append(report)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(drain)
        await trio.testing.wait_all_tasks_blocked()
        with send, reporting(send.send_nowait):
            result = await registry.execute(ToolExecutionInput("w", "threaded", {}))
    assert result.text == "done"
    assert received == [
        ProgressReport(progress=1, total=2, message="half", call_id="w"),
        LogReport(level="info", data="from the thread", call_id="w"),
    ]


def test_every_syslog_level_is_accepted_and_no_other() -> None:
    seen: list[Any] = []
    levels = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
    with reporting(seen.append):
        for level in levels:
            report_log(level, level)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="level must be one of"):
            report_log("INFO", "x")  # type: ignore[arg-type]
    assert [report.level for report in seen] == levels
    with pytest.raises(ValueError, match="level must be one of"):
        report_log("verbose", "x")  # type: ignore[arg-type]  # checked with no sink too
