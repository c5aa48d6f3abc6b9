"""Statistics: ``ToolRegistry.statistics()`` and ``ToolBatch.statistics()`` snapshots.

Counts are exact; phase times are checked exactly by replacing the phase clock with
trio's (mock) clock, so the phase boundaries land on the autojump clock's whole seconds.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolnursery._batch._driver as batch_module
import toolnursery._batch._pool as pool_module
import toolnursery._machine._batch as commit_module
import toolnursery._pipeline._stages as pipeline_module
from support import RecorderBrokeError, replace_batch_dispatch
from toolnursery import (
    CancelSignal,
    Deny,
    ToolBatch,
    ToolCall,
    ToolDefinition,
    ToolExecution,
    ToolExecutionInput,
    ToolExecutionResult,
    ToolRegistry,
    ToolRunContext,
    define_tool,
    open_tool_batch,
    run_tool_calls,
)
from toolnursery._core._decisions import PostToolDecision, PreToolDecision, ResourceKey
from toolnursery._core._statistics import ToolStatistics
from toolnursery._pipeline._call import CallRecord
from toolnursery.log import RecorderEvent, ToolCallEvent, ToolResultEvent

PHASES = ("prepare", "wait", "dispatch", "finalize")


@pytest.fixture
def mock_phase_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Time the phases on trio's clock (nanoseconds), so the mock clock decides."""

    def now() -> int:
        return round(trio.current_time() * 1e9)

    monkeypatch.setattr(pipeline_module, "_now", now)
    monkeypatch.setattr(batch_module, "_now", now)
    monkeypatch.setattr(pool_module, "_now", now)
    monkeypatch.setattr(commit_module, "_now", now)


async def sleepy(args: Any, ctx: ToolRunContext) -> str:
    if isinstance(args, dict) and args.get("fail"):
        raise RuntimeError("boom")
    await trio.sleep(args.get("d", 0) if isinstance(args, dict) else 0)
    return "ok"


def registry_with(*tools: ToolDefinition) -> ToolRegistry:
    """A registry that times its phases (``phase_seconds`` is opt-in)."""
    registry = ToolRegistry(phase_timings=True)
    for definition in tools:
        registry.register(definition)
    return registry


def parallel(name: str = "p") -> ToolDefinition:
    return ToolDefinition(name, name, {}, sleepy, is_concurrency_safe=lambda a: True)


def execute_input(call_id: str, name: str = "p", **args: Any) -> ToolExecutionInput:
    return ToolExecutionInput(call_id, name, args)


def phases(stats: ToolStatistics) -> tuple[float, ...]:
    return tuple(stats.phase_seconds[p] for p in PHASES)


async def test_a_fresh_registry_has_all_zero_statistics() -> None:
    """Every field starts at zero; every phase is present."""
    stats = ToolRegistry().statistics()
    assert stats == ToolStatistics(results_by_code={}, phase_seconds=dict.fromkeys(PHASES, 0.0))
    assert tuple(stats.phase_seconds) == PHASES


async def test_registry_counts_calls_by_outcome() -> None:
    """ok, error codes, and ``error`` for errors without a code; nothing in flight."""
    registry = registry_with(
        parallel(),
        define_tool(
            name="typed",
            description="d",
            parameters={"x": {"type": "number", "required": True}},
            execute=sleepy,
        ),
    )

    async def deny(
        execution: ToolExecution, next_: Callable[[], Awaitable[PreToolDecision]]
    ) -> PreToolDecision:
        return Deny("no") if execution.call_id == "denied" else await next_()

    registry.on_pre_execute(deny)
    for input in [
        execute_input("a"),
        execute_input("b"),
        execute_input("fails", fail=True),
        execute_input("ghost", "missing"),
        execute_input("bad", "typed", x="one"),
        execute_input("denied"),
    ]:
        await registry.execute(input)
    stats = registry.statistics()
    assert (stats.started, stats.committed, stats.abandoned, stats.in_flight) == (6, 6, 0, 0)
    assert stats.results_by_code == {"INVALID_ARGS": 1, "UNKNOWN_TOOL": 1, "error": 2, "ok": 2}
    assert list(stats.results_by_code) == sorted(stats.results_by_code)
    assert stats.waiting == 0


async def test_a_call_under_way_is_in_flight() -> None:
    """A snapshot taken by the body itself: started, not committed."""
    seen: list[ToolStatistics] = []
    registry = ToolRegistry()

    async def body(args: Any, ctx: ToolRunContext) -> str:
        seen.append(registry.statistics())
        return "ok"

    registry.register(ToolDefinition("t", "t", {}, body))
    await registry.execute(execute_input("c", "t"))
    (during,) = seen
    assert (during.started, during.committed, during.in_flight) == (1, 0, 1)
    after = registry.statistics()
    assert (after.started, after.committed, after.in_flight) == (1, 1, 0)


async def test_execute_phase_times(
    autojump_clock: trio.testing.MockClock, mock_phase_clock: None
) -> None:
    """pre-execute 1 s, body 2 s, post-execute 3 s: exactly those seconds per phase."""
    registry = registry_with(parallel())

    async def pre(
        execution: ToolExecution, next_: Callable[[], Awaitable[PreToolDecision]]
    ) -> PreToolDecision:
        await trio.sleep(1)
        return await next_()

    async def post(
        execution: ToolExecution,
        result: ToolExecutionResult,
        next_: Callable[[], Awaitable[PostToolDecision]],
    ) -> PostToolDecision:
        await trio.sleep(3)
        return await next_()

    registry.on_pre_execute(pre)
    registry.on_post_execute(post)
    await registry.execute(execute_input("c", d=2))
    assert phases(registry.statistics()) == (1, 0, 2, 3)


async def test_phases_without_hooks_read_no_clock(
    autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no hooks only dispatch is timed: two clock reads per call."""
    reads: list[int] = []

    def now() -> int:
        reads.append(1)
        return round(trio.current_time() * 1e9)

    monkeypatch.setattr(pipeline_module, "_now", now)
    registry = registry_with(parallel())
    await registry.execute(execute_input("c", d=1))
    assert len(reads) == 2
    assert phases(registry.statistics()) == (0, 0, 1, 0)


async def test_a_call_cancelled_from_outside_is_abandoned(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """execute() under an enclosing cancel scope: started, never committed, not in flight."""
    registry = registry_with(parallel())
    with trio.move_on_after(1):
        await registry.execute(execute_input("c", d=5))
    stats = registry.statistics()
    assert (stats.started, stats.committed, stats.abandoned, stats.in_flight) == (1, 0, 1, 0)
    assert stats.results_by_code == {}


async def test_batch_statistics_and_their_sum_in_the_registry(
    autojump_clock: trio.testing.MockClock, mock_phase_clock: None
) -> None:
    """A batch reports its own calls and phases; the registry adds them up across batches."""
    registry = registry_with(parallel())

    async def pre(
        execution: ToolExecution, next_: Callable[[], Awaitable[PreToolDecision]]
    ) -> PreToolDecision:
        await trio.sleep(1)
        return await next_()

    registry.on_pre_execute(pre)
    calls = [ToolCall(f"c{i}", "p", json.dumps({"d": 2})) for i in range(3)]
    snapshots: list[ToolStatistics] = []
    async with open_tool_batch(registry) as batch:
        for c in calls:
            batch.submit(c)
        batch.close()
        await trio.sleep(2.5)  # c0 runs 1-3, c1 2-4, c2 3-5
        snapshots.append(batch.statistics())
        pairs = [pair async for pair in batch]
    assert len(pairs) == 3
    during = snapshots[0]
    assert (during.started, during.committed, during.in_flight) == (3, 0, 3)
    final = batch.statistics()
    assert (final.started, final.committed, final.in_flight) == (3, 3, 0)
    assert final.results_by_code == {"ok": 3}
    assert phases(final) == (3, 0, 6, 0)
    await run_tool_calls(registry, calls[:1])
    total = registry.statistics()
    assert (total.started, total.committed) == (4, 4)
    assert phases(total) == (4, 0, 8, 0)


async def test_batch_counts_synthetic_and_duplicate_results_the_registry_does_not(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """An abort's ABORTED_BEFORE_DISPATCH and a duplicate id are batch results only."""
    registry = registry_with(parallel(), ToolDefinition("x", "x", {}, sleepy))
    signal = CancelSignal()
    calls = [
        ToolCall("a", "p", '{"d": 5}'),
        ToolCall("a", "p", "{}"),
        ToolCall("b", "x", "{}"),
        ToolCall("c", "p", "{}"),
    ]
    async with open_tool_batch(registry, signal=signal) as batch:
        for c in calls:
            batch.submit(c)
        batch.close()
        await trio.sleep(1)
        signal.cancel("stop")
        results = [r async for _, r in batch]
    assert [r.error.code if r.error else None for r in results] == [
        "ABORTED",
        "DUPLICATE_CALL_ID",
        "ABORTED_BEFORE_DISPATCH",
        "ABORTED_BEFORE_DISPATCH",
    ]
    stats = batch.statistics()
    assert (stats.started, stats.committed, stats.in_flight) == (4, 4, 0)
    assert stats.results_by_code == {
        "ABORTED": 1,
        "ABORTED_BEFORE_DISPATCH": 2,
        "DUPLICATE_CALL_ID": 1,
    }
    assert registry.statistics().results_by_code == {"ABORTED": 1}
    assert registry.statistics().started == 1


async def test_batch_wait_phase_and_waiting_count(
    autojump_clock: trio.testing.MockClock, mock_phase_clock: None
) -> None:
    """A keyed write waiting 3 s behind a read of its resource: one waiting, 3 s of wait."""

    def keys(args: Any) -> list[ResourceKey]:
        return [ResourceKey("A", args["mode"])]

    registry = registry_with(ToolDefinition("f", "f", {}, sleepy, concurrency_keys=keys))
    calls = [
        ToolCall("r", "f", json.dumps({"mode": "read", "d": 3})),
        ToolCall("w", "f", json.dumps({"mode": "write", "d": 1})),
    ]
    waiting: list[int] = []
    async with open_tool_batch(registry) as batch:
        for c in calls:
            batch.submit(c)
        batch.close()
        await trio.sleep(1)
        waiting.append(batch.statistics().waiting)
    assert waiting == [1]
    assert phases(batch.statistics()) == (0, 3, 4, 0)


async def test_an_internal_failure_abandons_the_calls_that_did_not_commit(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A recorder that fails at c1's result: c1 and c2 started, never committed."""
    registry = registry_with(parallel())

    class Broken:
        def record(self, event: RecorderEvent, /) -> None:
            if isinstance(event, ToolResultEvent) and event.call_id == "c1":
                raise RecorderBrokeError("disk full")

    with pytest.raises(RecorderBrokeError):
        await run_tool_calls(
            registry,
            [ToolCall("c1", "p", '{"d": 1}'), ToolCall("c2", "p", '{"d": 2}')],
            recorder=Broken(),
        )
    stats = registry.statistics()
    # c1 finalized (post-execute and observers ran) before its result failed to record.
    assert (stats.started, stats.committed, stats.abandoned, stats.in_flight) == (2, 1, 1, 0)


async def test_a_batch_cut_off_by_its_recorder_reports_abandoned_calls(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The streaming form: the batch's own snapshot after the failure."""
    registry = registry_with(parallel())
    events: list[str] = []

    class Broken:
        def record(self, event: RecorderEvent, /) -> None:
            if isinstance(event, ToolCallEvent) and event.call.id == "c2":
                raise RecorderBrokeError("disk full")
            events.append(type(event).__name__)

    batches: list[ToolBatch] = []

    async def stream() -> None:
        async with open_tool_batch(registry, recorder=Broken(), max_parallel=1) as batch:
            batches.append(batch)
            batch.submit(ToolCall("c1", "p", '{"d": 1}'))
            batch.submit(ToolCall("c2", "p", "{}"))
            batch.close()

    with pytest.raises(RecorderBrokeError):
        await stream()
    stats = batches[0].statistics()
    assert (stats.started, stats.committed, stats.abandoned, stats.in_flight) == (2, 1, 1, 0)


async def test_a_recorder_failing_on_the_first_event_leaves_no_negative_count() -> None:
    """The call's ``tool_call`` line failed: it never reached the registry, so the
    registry neither started nor abandoned it; the batch took it up and abandoned it."""
    registry = registry_with(parallel())

    class Broken:
        def record(self, event: RecorderEvent, /) -> None:
            raise RecorderBrokeError("disk full")

    batches: list[ToolBatch] = []

    async def stream() -> None:
        async with open_tool_batch(registry, recorder=Broken()) as batch:
            batches.append(batch)
            batch.submit(ToolCall("c1", "p", "{}"))
            batch.close()

    with pytest.raises(RecorderBrokeError):
        await stream()
    stats = registry.statistics()
    assert (stats.started, stats.committed, stats.abandoned, stats.in_flight) == (0, 0, 0, 0)
    stats = batches[0].statistics()
    assert (stats.started, stats.committed, stats.abandoned, stats.in_flight) == (1, 0, 1, 0)
    with pytest.raises(RecorderBrokeError):
        await run_tool_calls(registry, [ToolCall("c1", "p", "{}")], recorder=Broken())
    assert registry.statistics().in_flight == 0


async def test_a_recorder_failing_on_an_aborted_calls_line_leaves_no_negative_count(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The exclusive call was classified, then the abort came: its synthetic
    ``ABORTED_BEFORE_DISPATCH`` never passes the registry, even when recording it fails."""
    registry = registry_with(parallel(), ToolDefinition("x", "x", {}, sleepy))
    signal = CancelSignal()
    seen = [0]

    class Broken:
        def record(self, event: RecorderEvent, /) -> None:
            seen[0] += 1
            if seen[0] == 3:  # c1's call, c1's result, then x's synthetic call line
                raise RecorderBrokeError("disk full")

    async def stop() -> None:
        signal.cancel("stop")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(stop)
        with pytest.raises(RecorderBrokeError):
            await run_tool_calls(
                registry,
                [ToolCall("c1", "p", '{"d": 0}'), ToolCall("x", "x", "{}")],
                signal=signal,
                recorder=Broken(),
            )
    stats = registry.statistics()
    assert (stats.started, stats.committed, stats.abandoned, stats.in_flight) == (1, 1, 0, 0)


def test_a_snapshot_is_frozen_hashable_and_round_trips() -> None:
    """Frozen Struct, read-only mappings, lossless msgspec JSON."""
    stats = ToolStatistics(
        started=3,
        committed=2,
        in_flight=1,
        results_by_code={"ok": 2},
        phase_seconds={"prepare": 0.5, "wait": 0.0, "dispatch": 1.25, "finalize": 0.0},
    )
    with pytest.raises(AttributeError):
        stats.started = 4  # type: ignore[misc]
    with pytest.raises(TypeError):
        stats.results_by_code["ok"] = 3  # type: ignore[index]
    assert hash(stats) == hash(msgspec.structs.replace(stats))
    wire = msgspec.json.encode(stats)
    assert msgspec.json.decode(wire, type=ToolStatistics) == stats
    assert json.loads(wire)["results_by_code"] == {"ok": 2}


class WorkerExplodedError(Exception):
    pass


async def test_a_worker_failure_noticed_after_finalize_keeps_the_counts_balanced(
    autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """c1 passes post-execute, then the driver sees c2's failure: c1 counts as committed."""
    registry = registry_with(parallel())
    real_dispatch = pipeline_module.dispatch

    async def failing_dispatch(call: CallRecord, *, carried: bool = False) -> None:
        if call.execution.call_id == "c2":
            await trio.sleep(1)
            raise WorkerExplodedError("worker exploded")
        await real_dispatch(call, carried=carried)

    async def slow_post(
        execution: ToolExecution,
        result: ToolExecutionResult,
        next_: Callable[[], Awaitable[PostToolDecision]],
    ) -> PostToolDecision:
        await trio.sleep(2)
        return await next_()

    replace_batch_dispatch(monkeypatch, failing_dispatch)
    registry.on_post_execute(slow_post)
    calls = [ToolCall(f"c{i}", "p", '{"d": 0}') for i in (1, 2, 3)]
    with pytest.raises(WorkerExplodedError):
        await run_tool_calls(registry, calls)
    stats = registry.statistics()
    assert (stats.started, stats.committed, stats.abandoned, stats.in_flight) == (3, 1, 2, 0)


async def test_phase_timings_are_opt_in_and_the_counters_always_on() -> None:
    """Off (the default): every phase reads 0.0 and no clock is read; counters count."""
    reads: list[int] = []

    registry = ToolRegistry()
    assert registry.phase_timings is False
    registry.register(parallel())
    registry.on_pre_execute(lambda execution, next_: next_())  # type: ignore[arg-type,return-value]
    with pytest.MonkeyPatch.context() as patch:

        def now() -> int:
            reads.append(1)
            return 0

        patch.setattr(pipeline_module, "_now", now)
        patch.setattr(batch_module, "_now", now)
        patch.setattr(pool_module, "_now", now)
        patch.setattr(commit_module, "_now", now)
        await registry.execute(execute_input("a"))
        await run_tool_calls(registry, [ToolCall("b", "p", "{}")])
        assert reads == []
        registry.phase_timings = True
        await registry.execute(execute_input("c"))
        assert reads  # on: the phases are timed
    stats = registry.statistics()
    assert stats.started == stats.committed == 3
    assert tuple(stats.phase_seconds) == PHASES
    assert ToolRegistry(phase_timings=True).phase_timings is True
    with pytest.raises(TypeError, match="phase_timings must be a bool"):
        registry.phase_timings = 1  # type: ignore[assignment]


# -- the counters balance after any batch ------------------------------------------------


class _Fault(Exception):
    pass


@st.composite
def batch_scripts(draw: st.DrawFn) -> dict[str, Any]:
    """A batch: its calls (tool, duration, failing), a recorder that fails at its k-th
    event, an abort, an enclosing scope's deadline, a slow pre-execute listener."""
    n = draw(st.integers(1, 6))
    calls = [
        (
            draw(st.sampled_from(["p", "x"])),
            draw(st.integers(0, 3)),
            draw(st.booleans()),
            draw(st.booleans()),  # reports progress (a progress event)
        )
        for _ in range(n)
    ]
    return {
        "calls": calls,
        "duplicate": draw(st.booleans()),
        "fault_at": draw(st.none() | st.integers(0, 3 * n + 2)),
        "abort_at": draw(st.none() | st.floats(0, 5)),
        "deadline": draw(st.none() | st.floats(0, 6)),
        "slow_pre": draw(st.sampled_from(["no", "slow", "stubborn"])),
        "grace": draw(st.sampled_from([0, 0.5, 1])),
        "max_parallel": draw(st.integers(1, 8)),
    }


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(script=batch_scripts())
async def test_after_any_batch_nothing_is_in_flight_and_the_counters_balance(
    autojump_clock: trio.testing.MockClock, script: dict[str, Any]
) -> None:
    """Recorder faults at any event, aborts, enclosing cancellation, failing bodies,
    hooks that ignore the abort: the batch returns, and afterwards ``in_flight`` is 0,
    no counter is negative, ``started`` is ``committed + abandoned`` — for the registry
    and for the batch."""

    async def body(args: Any, ctx: ToolRunContext) -> str:
        if args.get("report"):
            ctx.report_progress(1, 2)
        await trio.sleep(args["d"])
        if args.get("fail"):
            raise RuntimeError("boom")
        return "ok"

    registry = ToolRegistry()
    registry.register(ToolDefinition("p", "p", {}, body, is_concurrency_safe=lambda a: True))
    registry.register(ToolDefinition("x", "x", {}, body))
    # A stubborn listener ignores the abort (it is cancelled after the grace); without
    # an abort it would wait for ever, so it is stubborn only when an abort comes.
    stubborn = script["slow_pre"] == "stubborn" and script["abort_at"] is not None
    if script["slow_pre"] != "no":

        async def slow(
            execution: ToolExecution, next_: Callable[[], Awaitable[PreToolDecision]]
        ) -> PreToolDecision:
            await (trio.sleep_forever() if stubborn else trio.sleep(1))
            return await next_()

        registry.on_pre_execute(slow)
    seen = [0]

    class Faulty:
        def record(self, event: RecorderEvent, /) -> None:
            seen[0] += 1
            if seen[0] - 1 == script["fault_at"]:
                raise _Fault(f"event {seen[0] - 1}")

    calls = [
        ToolCall(f"c{i}", tool, json.dumps({"d": d, "fail": fail, "report": report}))
        for i, (tool, d, fail, report) in enumerate(script["calls"])
    ]
    if script["duplicate"]:
        calls.append(msgspec.structs.replace(calls[0], arguments='{"d": 0}'))
    signal = CancelSignal()
    batches: list[ToolBatch] = []

    async def run() -> None:
        async with open_tool_batch(
            registry,
            recorder=Faulty(),
            signal=signal,
            max_parallel=script["max_parallel"],
            hook_abort_grace=script["grace"],
        ) as batch:
            batches.append(batch)
            for call in calls:
                batch.submit(call)
            batch.close()
            async for _ in batch:
                pass

    async def abort(at: float) -> None:
        await trio.sleep(at)
        signal.cancel("stop")

    begun = trio.current_time()
    with trio.move_on_after(script["deadline"] if script["deadline"] is not None else 1e9):
        async with trio.open_nursery() as nursery:
            if script["abort_at"] is not None:
                nursery.start_soon(abort, script["abort_at"])
            try:
                await run()
            except _Fault:
                assert script["fault_at"] is not None
            nursery.cancel_scope.cancel()
    assert trio.current_time() - begun < 60
    for stats in (registry.statistics(), batches[0].statistics()):
        assert min(stats.started, stats.committed, stats.abandoned, stats.in_flight) >= 0
        assert stats.in_flight == 0, stats
        assert stats.started == stats.committed + stats.abandoned, stats
        assert sum(stats.results_by_code.values()) == stats.committed
