"""Recording a batch: durable event order, the JSON-lines log, torn lines, replay."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from drivers import Driver, current, neutral, neutral_registry
from support import registry_with
from toolnursery import (
    Accept,
    HookContext,
    LogFormatError,
    PostToolDecision,
    PreToolDecision,
    TextContent,
    ToolCall,
    ToolDefinition,
    ToolExecution,
    ToolExecutionResult,
    ToolRunContext,
    run_tool_calls,
)
from toolnursery._batch import _recorder as _recorder_module
from toolnursery.log import (
    ContextEvent,
    JsonlRecorder,
    ProgressEvent,
    RecorderEvent,
    ToolCallEvent,
    ToolResultEvent,
    iter_log,
    read_log,
    replay_log,
)

OBJECT: dict[str, Any] = {"type": "object"}


class ListRecorder:
    """A recorder that keeps every event (and whatever else the test appends)."""

    def __init__(self, log: list[Any] | None = None) -> None:
        self.log: list[Any] = log if log is not None else []

    def record(self, event: RecorderEvent, /) -> None:
        self.log.append(event)


async def sleepy(args: Any, ctx: ToolRunContext) -> str:
    await current().sleep(args["s"])
    return f"slept {args['s']}"


async def with_context(args: Any, ctx: ToolRunContext) -> str:
    ctx.defer_context(HookContext((TextContent(f"deferred by {ctx.call_id}"),), "tool"))
    await current().checkpoint()  # a body that suspends runs as a pool task
    return "ok"


def parallel(name: str, body: Any) -> ToolDefinition:
    return ToolDefinition(name, name, OBJECT, neutral(body), is_concurrency_safe=lambda args: True)


def kinds(events: list[Any]) -> list[tuple[str, int]]:
    return [
        (type(e).__name__, e.index)
        for e in events
        if isinstance(e, ToolCallEvent | ToolResultEvent | ContextEvent)
    ]


# -- durable order --------------------------------------------------------------------


def test_tool_call_is_recorded_before_its_pre_execute_runs(driver: Driver) -> None:
    async def main() -> None:
        registry = neutral_registry(parallel("sleepy", sleepy))
        recorder = ListRecorder()

        async def pre(
            execution: ToolExecution, next_: Callable[[], Awaitable[PreToolDecision]]
        ) -> PreToolDecision:
            recorder.log.append(("pre", execution.call_id))
            return await next_()

        registry.on_pre_execute(pre)
        calls = [ToolCall("a", "sleepy", '{"s": 0}'), ToolCall("b", "sleepy", '{"s": 0}')]
        await driver.run_tool_calls(registry, calls, recorder=recorder)

        for call_id in ("a", "b"):
            started = next(
                i
                for i, e in enumerate(recorder.log)
                if isinstance(e, ToolCallEvent) and e.call.id == call_id
            )
            assert recorder.log.index(("pre", call_id)) > started

    driver.run(main)


def test_results_are_recorded_in_model_order(driver: Driver) -> None:
    async def main() -> None:
        # The later calls finish first; their results still commit in model order.
        registry = neutral_registry(parallel("sleepy", sleepy))
        recorder = ListRecorder()
        calls = [ToolCall(f"c{i}", "sleepy", f'{{"s": {3 - i}}}') for i in range(3)]
        results = await driver.run_tool_calls(registry, calls, recorder=recorder)

        result_events = [e for e in recorder.log if isinstance(e, ToolResultEvent)]
        assert [e.index for e in result_events] == [0, 1, 2]
        assert [e.call_id for e in result_events] == ["c0", "c1", "c2"]
        assert [e.result for e in result_events] == results
        # Every call was started (recorded) before the first result committed.
        assert kinds(recorder.log)[:3] == [("ToolCallEvent", i) for i in range(3)]

    driver.run(main)


def test_contexts_are_recorded_after_every_result_of_the_batch(driver: Driver) -> None:
    async def main() -> None:
        registry = neutral_registry(parallel("ctx", with_context), parallel("plain", sleepy))

        async def post(
            execution: ToolExecution,
            result: ToolExecutionResult,
            next_: Callable[[], Awaitable[PostToolDecision]],
        ) -> PostToolDecision:
            if execution.name != "ctx":
                return await next_()
            return Accept(additional_contexts=(HookContext((TextContent("from post"),), "policy"),))

        registry.on_post_execute(post)
        recorder = ListRecorder()
        calls = [
            ToolCall("a", "ctx", ""),
            ToolCall("b", "plain", '{"s": 0}'),
            ToolCall("c", "ctx", ""),
        ]
        await driver.run_tool_calls(registry, calls, recorder=recorder)

        order = kinds(recorder.log)
        last_result = max(i for i, (kind, _) in enumerate(order) if kind == "ToolResultEvent")
        first_context = min(i for i, (kind, _) in enumerate(order) if kind == "ContextEvent")
        assert first_context > last_result
        contexts = [e for e in recorder.log if isinstance(e, ContextEvent)]
        # Model order, and within a call the pipeline's order (deferred, then post-execute).
        assert [(e.call_id, e.context.source) for e in contexts] == [
            ("a", "tool"),
            ("a", "policy"),
            ("c", "tool"),
            ("c", "policy"),
        ]
        assert contexts[0].context.content == (TextContent("deferred by a"),)

    driver.run(main)


def test_a_streamed_batch_records_the_same_durable_order(driver: Driver) -> None:
    async def main() -> None:
        registry = neutral_registry(parallel("ctx", with_context))
        recorder = ListRecorder()
        async with driver.open_tool_batch(registry, recorder=recorder) as batch:
            batch.submit(ToolCall("a", "ctx", ""))
            await driver.wait_all_tasks_blocked()
            batch.submit(ToolCall("b", "ctx", ""))
            batch.close()
        assert kinds(recorder.log) == [
            ("ToolCallEvent", 0),
            ("ToolResultEvent", 0),
            ("ToolCallEvent", 1),
            ("ToolResultEvent", 1),
            ("ContextEvent", 0),
            ("ContextEvent", 1),
        ]

    driver.run(main)


def test_a_raising_recorder_fails_the_batch_after_in_flight_calls_settle(driver: Driver) -> None:
    async def main() -> None:
        finished: list[str] = []

        async def body(args: Any, ctx: ToolRunContext) -> str:
            await driver.sleep(0)
            finished.append(ctx.call_id)
            return "ok"

        class Failing:
            def record(self, event: RecorderEvent, /) -> None:
                if isinstance(event, ToolCallEvent) and event.index == 1:
                    raise OSError("disk full")

        registry = neutral_registry(parallel("t", body))
        with pytest.raises(OSError, match="disk full"):
            await driver.run_tool_calls(
                registry, [ToolCall("a", "t", ""), ToolCall("b", "t", "")], recorder=Failing()
            )
        assert finished == ["a"]

    driver.run(main)


# -- the JSON-lines log -----------------------------------------------------------------


def test_the_log_reads_back_exactly_the_recorded_events(driver: Driver, tmp_path: Path) -> None:
    async def main() -> None:
        registry = neutral_registry(parallel("ctx", with_context), parallel("sleepy", sleepy))
        seen = ListRecorder()
        path = tmp_path / "log.jsonl"

        class Both:
            def __init__(self, jsonl: JsonlRecorder) -> None:
                self.jsonl = jsonl

            def record(self, event: RecorderEvent, /) -> None:
                seen.record(event)
                self.jsonl.record(event)

        calls = [
            ToolCall("a", "ctx", ""),
            ToolCall("b", "sleepy", '{"s": 0}'),
            ToolCall("c", "nope", "not json ✓"),
        ]
        with JsonlRecorder(path) as jsonl:
            await driver.run_tool_calls(registry, calls, recorder=Both(jsonl))

        assert read_log(path) == seen.log
        lines = path.read_bytes().splitlines()
        assert len(lines) == len(seen.log)
        first = msgspec.json.decode(lines[0])
        assert first["event"] == "tool_call"
        assert first["call"] == {"id": "a", "name": "ctx", "arguments": ""}
        decoded = [msgspec.json.decode(line) for line in lines]
        assert [d["event"] for d in decoded] == [
            "tool_call",
            "tool_call",
            "tool_result",
            "tool_result",
            "tool_call",  # "nope" is unknown, so exclusive: it waits for a and b
            "tool_result",
            "context",
        ]
        assert decoded[2]["callId"] == "a"
        assert decoded[2]["result"]["isError"] is False
        assert decoded[5]["result"]["error"] == {
            "name": "ToolNotFoundError",
            "code": "UNKNOWN_TOOL",
        }
        assert decoded[6]["context"]["source"] == "tool"

    driver.run(main)


def test_each_event_is_on_disk_as_soon_as_it_is_recorded(driver: Driver, tmp_path: Path) -> None:
    async def main() -> None:
        # A crash mid-batch loses nothing recorded so far: the log is not buffered.
        path = tmp_path / "log.jsonl"
        release = driver.event()

        async def blocked(args: Any, ctx: ToolRunContext) -> str:
            await release.wait()
            return "released"

        registry = neutral_registry(parallel("blocked", blocked), parallel("sleepy", sleepy))
        calls = [ToolCall("a", "sleepy", '{"s": 0}'), ToolCall("b", "blocked", "")]
        with JsonlRecorder(path) as recorder:
            async with driver.open_nursery() as nursery:
                nursery.start_soon(
                    partial(driver.run_tool_calls, registry, calls, recorder=recorder)
                )
                await driver.wait_all_tasks_blocked()
                # Mid-batch, as a reader after a crash would see it.
                assert replay_log(path) == [
                    (calls[0], ToolExecutionResult((TextContent("slept 0"),), False)),
                    (calls[1], None),
                ]
                release.set()
        assert replay_log(path)[1] == (
            calls[1],
            ToolExecutionResult((TextContent("released"),), False),
        )

    driver.run(main)


def test_a_torn_last_line_is_skipped_and_every_complete_event_is_read(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    events: list[RecorderEvent] = [
        ToolCallEvent("b1", 0, ToolCall("a", "read", '{"path": "x"}')),
        ToolResultEvent("b1", 0, "a", ToolExecutionResult((TextContent("hi"),), False)),
        ToolCallEvent("b1", 1, ToolCall("b", "read", "")),
    ]
    with JsonlRecorder(path) as recorder:
        for event in events:
            recorder.record(event)
    whole = msgspec.json.encode(
        ToolResultEvent("b1", 1, "b", ToolExecutionResult((TextContent("cut"),), False))
    )
    with open(path, "ab") as file:
        file.write(whole[: len(whole) // 2])  # the crash came mid-write

    assert read_log(path) == events
    assert replay_log(path) == [
        (ToolCall("a", "read", '{"path": "x"}'), ToolExecutionResult((TextContent("hi"),), False)),
        (ToolCall("b", "read", ""), None),
    ]


def test_a_torn_line_in_the_middle_is_skipped(tmp_path: Path) -> None:
    """A writer died mid-write; the next writer started a fresh line after it."""
    path = tmp_path / "log.jsonl"
    first = ToolCallEvent("b1", 0, ToolCall("a", "read", ""))
    second = ToolCallEvent("b1", 1, ToolCall("b", "read", ""))
    with JsonlRecorder(path) as recorder:
        recorder.record(first)
    with open(path, "ab") as file:
        file.write(b'{"event": "tool_call", "batch": ')
    with JsonlRecorder(path) as recorder:
        recorder.record(second)
    assert path.read_bytes().count(b"\n") == 3
    assert read_log(path) == [first, second]
    assert [event for _, event, _ in iter_log(path)] == [first, None, second]


@pytest.mark.parametrize(
    "line",
    [
        "hello world",
        '{"a": 1}',
        '{"event": "other"}',
        '{"event": "tool_call", "batch": "b"}',
        "[1,",
    ],
)
def test_a_line_that_is_not_an_event_raises_naming_the_line(tmp_path: Path, line: str) -> None:
    path = tmp_path / "log.jsonl"
    event = msgspec.json.encode(ToolCallEvent("b1", 0, ToolCall("a", "read", ""))).decode()
    for text in (f"{event}\n{line}\n{event}\n", f"{event}\n{line}"):  # middle, or last
        path.write_text(text)
        with pytest.raises(LogFormatError, match=r"log\.jsonl:2: not a toolnursery event") as info:
            read_log(path)
        assert (info.value.line, isinstance(info.value, ValueError)) == (2, True)
        with pytest.raises(ValueError, match=r":2:"):
            replay_log(path)


def test_blank_lines_are_ignored(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    event = ToolCallEvent("b1", 0, ToolCall("a", "read", ""))
    path.write_bytes(b"\n" + msgspec.json.encode(event) + b"\n\n  \n")
    assert read_log(path) == [event]


def test_replay_pairs_by_batch_and_index_even_with_duplicate_call_ids(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    ok = ToolExecutionResult((TextContent("one"),), False)
    other = ToolExecutionResult((TextContent("two"),), False)
    with JsonlRecorder(path) as recorder:
        recorder.record(ToolCallEvent("b1", 0, ToolCall("x", "t", "1")))
        recorder.record(ToolCallEvent("b2", 0, ToolCall("x", "t", "2")))
        recorder.record(ToolResultEvent("b2", 0, "x", other))
        recorder.record(ToolResultEvent("b1", 0, "x", ok))
        recorder.record(ToolCallEvent("b2", 1, ToolCall("y", "t", "3")))
    assert replay_log(path) == [
        (ToolCall("x", "t", "1"), ok),
        (ToolCall("x", "t", "2"), other),
        (ToolCall("y", "t", "3"), None),
    ]


def test_a_recorder_appends_to_an_existing_log(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    first = ToolCallEvent("b1", 0, ToolCall("a", "t", ""))
    second = ToolCallEvent("b2", 0, ToolCall("b", "t", ""))
    with JsonlRecorder(path) as recorder:
        recorder.record(first)
    with JsonlRecorder(os.fspath(path), fsync=True) as recorder:
        recorder.record(second)
    assert read_log(path) == [first, second]


def test_a_closed_recorder_refuses_events_and_closing_twice_is_fine(tmp_path: Path) -> None:
    recorder = JsonlRecorder(tmp_path / "log.jsonl")
    recorder.close()
    recorder.close()
    with pytest.raises(ValueError, match="is closed"):
        recorder.record(ToolCallEvent("b1", 0, ToolCall("a", "t", "")))


def test_appending_after_a_crash_loses_no_event(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    before = ToolCallEvent("b1", 0, ToolCall("a", "t", ""))
    after = ToolCallEvent("b2", 0, ToolCall("b", "t", ""))
    with JsonlRecorder(path) as recorder:
        recorder.record(before)
    with open(path, "ab") as file:
        file.write(b'{"event": "tool_result", "batch": "b1", "ind')  # the crash
    with JsonlRecorder(path) as recorder:  # the restarted process appends
        recorder.record(after)
    assert read_log(path) == [before, after]


def test_a_log_that_is_only_a_torn_line_keeps_it_and_reads_past_it(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"event": "tool_ca')
    event = ToolCallEvent("b1", 0, ToolCall("a", "t", ""))
    with JsonlRecorder(path) as recorder:
        recorder.record(event)
    assert path.read_bytes().startswith(b'{"event": "tool_ca\n')
    assert read_log(path) == [event]


def test_a_complete_last_event_without_a_newline_is_never_deleted(tmp_path: Path) -> None:
    """Reopening used to cut everything after the last newline, a whole event included."""
    path = tmp_path / "log.jsonl"
    first = ToolCallEvent("b1", 0, ToolCall("a", "t", ""))
    second = ToolCallEvent("b1", 1, ToolCall("b", "t", ""))
    path.write_bytes(msgspec.json.encode(first))  # no trailing newline
    assert read_log(path) == [first]
    with JsonlRecorder(path) as recorder:
        assert read_log(path) == [first]  # opening changes nothing
        recorder.record(second)
    assert read_log(path) == [first, second]


def test_opening_a_log_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"event": "tool_result", "ba')
    JsonlRecorder(path).close()
    assert path.read_bytes() == b'{"event": "tool_result", "ba'


def test_a_failed_write_removes_only_its_own_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "log.jsonl"
    before = ToolCallEvent("b1", 0, ToolCall("a", "t", ""))
    with JsonlRecorder(path) as recorder:
        recorder.record(before)
        size = path.stat().st_size
        real_write = os.write

        def half_then_full(fd: int, data: Any) -> int:
            real_write(fd, bytes(data)[: len(data) // 2])
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(os, "write", half_then_full)
        with pytest.raises(OSError, match="No space"):
            recorder.record(ToolCallEvent("b1", 1, ToolCall("b", "t", "x" * 1000)))
        monkeypatch.undo()
        assert path.stat().st_size == size
        recorder.record(before)
    assert read_log(path) == [before, before]


def test_fsync_flushes_every_event(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    monkeypatch.setattr(_recorder_module, "_sync", synced.append)
    event = ToolCallEvent("b1", 0, ToolCall("a", "t", ""))
    with JsonlRecorder(tmp_path / "a.jsonl", fsync=True) as recorder:
        recorder.record(event)
        recorder.record(event)
    with JsonlRecorder(tmp_path / "b.jsonl") as recorder:
        recorder.record(event)
    assert len(synced) == 2


def test_two_recorders_on_one_log_interleave_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    events = [ToolCallEvent(f"b{i % 2}", i, ToolCall(f"c{i}", "t", "x" * i)) for i in range(50)]
    with JsonlRecorder(path) as one, JsonlRecorder(path) as two:
        for event in events:
            (one if event.index % 2 else two).record(event)
    assert read_log(path) == events


_APPENDER = """
import sys
from toolnursery import TextContent, ToolExecutionResult
from toolnursery.log import JsonlRecorder, ToolResultEvent

path, count, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with JsonlRecorder(path) as recorder:
    print("ready", flush=True)
    for i in range(count):
        result = ToolExecutionResult((TextContent(str(i) * size),), False)
        recorder.record(ToolResultEvent("big", i, f"c{i}", result))
"""


def test_a_second_opener_never_cuts_another_process_event_in_flight(tmp_path: Path) -> None:
    """Another process appends 8 MB events while this one opens the log and appends,
    again and again: every event of both survives (it used to lose 10 of 10)."""
    path = tmp_path / "log.jsonl"
    count, size = 10, 8 * 1024 * 1024
    mine = 0
    with subprocess.Popen(
        [sys.executable, "-c", _APPENDER, str(path), str(count), str(size)],
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    ) as child:
        assert child.stdout is not None
        assert child.stdout.readline() == b"ready\n"
        while child.poll() is None:
            with JsonlRecorder(path) as recorder:
                recorder.record(ToolCallEvent("small", mine, ToolCall(f"s{mine}", "t", "")))
            mine += 1
    assert child.returncode == 0
    events = read_log(path)
    big = [e for e in events if isinstance(e, ToolResultEvent)]
    small = [e for e in events if isinstance(e, ToolCallEvent)]
    assert [e.index for e in big] == list(range(count))
    assert all(e.result.content == (TextContent(str(e.index) * size),) for e in big)
    assert [e.index for e in small] == list(range(mine))
    assert mine > 0
    assert all(event is not None for _, event, _ in iter_log(path))  # not one torn line


def test_an_event_holding_a_lone_surrogate_is_recorded_escaped(tmp_path: Path) -> None:
    """A call id or raw arguments no stage made JSON-safe must not fail the recorder."""
    path = tmp_path / "log.jsonl"
    with JsonlRecorder(path) as recorder:
        recorder.record(ToolCallEvent("b1", 0, ToolCall("id\udce9", "t", '{"p": "\ud800"}')))
    (event,) = read_log(path)
    assert isinstance(event, ToolCallEvent)
    assert event.call == ToolCall("id\\xe9", "t", '{"p": "\\ud800"}')


# -- times ----------------------------------------------------------------------------

_TIMED = ("wall", "t", "mode", "keys", "admitted", "began", "ended")


async def _reporting(args: Any, ctx: ToolRunContext) -> str:
    for step in range(args["steps"]):
        await trio.sleep(args["s"])
        ctx.report_progress(step + 1, args["steps"])
    await trio.sleep(args["s"])
    return "ok"


def _script_registry() -> Any:
    from toolnursery import ResourceKey

    registry = registry_with(parallel("par", _reporting))
    registry.register(
        ToolDefinition(
            "key",
            "key",
            OBJECT,
            _reporting,
            concurrency_keys=lambda args: [ResourceKey.write(args["k"])],
        )
    )
    registry.register(ToolDefinition("bar", "bar", OBJECT, _reporting))
    return registry


_scripts = st.lists(
    st.tuples(
        st.sampled_from(["par", "key", "bar"]),
        st.integers(0, 3),  # the resource key
        st.integers(0, 20),  # ms per step
        st.integers(0, 3),  # progress reports
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(script=_scripts, cap=st.integers(1, 4))
def test_times_are_monotonic_per_call_and_commits_in_model_order(
    script: list[tuple[str, int, int, int]], cap: int
) -> None:
    calls = [
        ToolCall(
            f"c{i}", name, msgspec.json.encode({"k": f"r{k}", "s": ms / 1000, "steps": n}).decode()
        )
        for i, (name, k, ms, n) in enumerate(script)
    ]
    recorder = ListRecorder()
    trio.run(
        partial(run_tool_calls, _script_registry(), calls, recorder=recorder, max_parallel=cap),
        clock=trio.testing.MockClock(autojump_threshold=0),
    )
    events = recorder.log
    starts = {e.index: e for e in events if isinstance(e, ToolCallEvent)}
    results = {e.index: e for e in events if isinstance(e, ToolResultEvent)}
    assert len({e.wall for e in starts.values()}) == 1  # one run, one wall-clock start
    committed = []
    for index, start in starts.items():
        result = results[index]
        assert (
            start.mode == {"par": "parallel", "key": "keyed", "bar": "exclusive"}[script[index][0]]
        )
        times = [start.t, result.admitted, result.began, result.ended, result.t]
        known = [t for t in times if t is not None]
        assert known == sorted(known), (index, times)
        assert start.t is not None
        assert result.t is not None
        assert result.began is not None
        assert result.ended is not None
        assert start.t >= 0
        committed.append(result.t)
        reports = [e for e in events if isinstance(e, ProgressEvent) and e.index == index]
        assert len(reports) == script[index][3]
        assert all(e.t is not None and result.began <= e.t <= result.ended for e in reports)
    assert committed == sorted(committed)


_stamps = st.none() | st.floats(0, 1e6, allow_nan=False)
_events = st.one_of(
    st.builds(
        ToolCallEvent,
        st.text(min_size=1),
        st.integers(0, 99),
        st.builds(ToolCall, st.text(), st.text(), st.text()),
        _stamps,
        _stamps,
        st.none() | st.sampled_from(["parallel", "keyed", "exclusive"]),
    ),
    st.builds(
        ToolResultEvent,
        st.text(min_size=1),
        st.integers(0, 99),
        st.text(),
        st.builds(ToolExecutionResult, st.just((TextContent("r"),)), st.booleans()),
        _stamps,
        _stamps,
        _stamps,
        _stamps,
    ),
)


@given(_events)
def test_old_and_new_format_events_round_trip(event: RecorderEvent) -> None:
    line = _recorder_module.encode_event(event)
    assert _recorder_module._decoder.decode(line) == event
    # Times left unknown are not written: such a line is the old format, as it was.
    wire = msgspec.json.decode(line)
    assert all(wire.get(key) is not None for key in _TIMED if key in wire and key != "keys")
    old = {k: v for k, v in wire.items() if k not in _TIMED}
    decoded = _recorder_module._decoder.decode(msgspec.json.encode(old))
    assert type(decoded) is type(event)
    assert getattr(decoded, "t", None) is None


async def test_an_old_log_without_times_still_reads_replays_and_resumes(
    tmp_path: Path, autojump_clock: trio.abc.Clock
) -> None:
    registry = registry_with(parallel("sleepy", sleepy))
    calls = [ToolCall("a", "sleepy", '{"s": 1}'), ToolCall("b", "sleepy", '{"s": 2}')]
    new = tmp_path / "new.jsonl"
    with JsonlRecorder(new) as jsonl:
        results = await run_tool_calls(registry, calls, recorder=jsonl)
    old = tmp_path / "old.jsonl"
    stripped = []
    for line in new.read_bytes().splitlines():
        wire = msgspec.json.decode(line)
        assert wire["event"] != "tool_result" or "began" in wire  # the new log had times
        stripped.append(msgspec.json.encode({k: v for k, v in wire.items() if k not in _TIMED}))
    old.write_bytes(b"\n".join(stripped) + b"\n")

    assert replay_log(old) == replay_log(new) == list(zip(calls, results, strict=True))
    assert all(getattr(e, "t", None) is None for e in read_log(old))
    ran: list[str] = []

    async def spy(view: Any, next_: Callable[[], Awaitable[ToolExecutionResult]]) -> Any:
        ran.append(view.call_id)
        return await next_()

    registry.on_execute(spy)
    assert await run_tool_calls(registry, calls, resume_from=old) == results
    assert ran == []  # both results were recorded: nothing runs again


async def test_a_retried_call_records_when_each_attempt_began(
    autojump_clock: trio.abc.Clock,
) -> None:
    from toolnursery import ToolError, install_retry_policy

    class BusyError(ToolError):
        code = "BUSY"

    tries: list[float] = []

    async def flaky(args: Any, ctx: ToolRunContext) -> str:
        tries.append(trio.current_time())
        await trio.sleep(1)
        if len(tries) < 3:
            raise BusyError("busy")
        return "ok"

    registry = registry_with(
        ToolDefinition("flaky", "flaky", OBJECT, flaky, idempotent=True),
        parallel("sleepy", sleepy),
    )
    install_retry_policy(registry, codes=["BUSY"], backoff_ms=500, jitter=0)
    recorder = ListRecorder()
    start = trio.current_time()
    calls = [ToolCall("r", "flaky", "{}"), ToolCall("s", "sleepy", '{"s": 1}')]
    await run_tool_calls(registry, calls, recorder=recorder)
    retried, once = [e for e in recorder.log if isinstance(e, ToolResultEvent)]
    assert retried.attempts == tuple(round(t - start, 6) for t in tries)
    assert retried.attempts == (0.0, 1.5, 3.5)  # each: 1 s of body, then the backoff
    assert retried.began == 0.0
    assert retried.ended == 4.5
    assert once.attempts == ()  # the policy applies to idempotent tools only
