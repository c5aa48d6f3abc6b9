"""The batch's worker pool (``_batch/_pool.py``): abort through the pool's scope
(wrapped or not), reused workers, batch ids and idempotency keys, what a batch refuses.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import trio
import trio.testing

import toolnursery._machine._intake as intake_module
from support import always
from toolnursery import (
    CancelSignal,
    TextContent,
    ToolArgsError,
    ToolCall,
    ToolDefinition,
    ToolDispatchExecution,
    ToolErrorInfo,
    ToolExecutionInput,
    ToolExecutionResult,
    ToolRegistry,
    ToolRunContext,
    open_tool_batch,
    run_tool_calls,
)
from toolnursery._batch._recorder import RecorderEvent, ToolCallEvent, ToolResultEvent

ABORTED = ToolErrorInfo("AbortError", "ABORTED")
BEFORE = ToolErrorInfo("AbortError", "ABORTED_BEFORE_DISPATCH")


def sleeper(name: str = "p", log: list[str] | None = None) -> ToolDefinition:
    async def body(args: Any, ctx: ToolRunContext) -> str:
        if log is not None:
            log.append(f"start:{ctx.call_id}")
        await trio.sleep(args.get("d", 0) if isinstance(args, dict) else 0)
        return f"ok:{ctx.call_id}"

    return ToolDefinition(name, name, {"type": "object"}, body, is_concurrency_safe=always)


def call(call_id: str, d: float = 0, name: str = "p") -> ToolCall:
    return ToolCall(call_id, name, json.dumps({"d": d}))


class ListRecorder:
    def __init__(self) -> None:
        self.events: list[RecorderEvent] = []

    def record(self, event: RecorderEvent) -> None:
        self.events.append(event)

    def trace(self) -> list[str]:
        out = []
        for event in self.events:
            if isinstance(event, ToolCallEvent):
                out.append(f"tool_call:{event.call.id}")
            elif isinstance(event, ToolResultEvent):
                out.append(f"tool_result:{event.call_id}")
        return out


async def cancel_at(signal: CancelSignal, when: float) -> None:
    await trio.sleep(when)
    signal.cancel("stop")


# -- abort rides the pool's scope, wrapped or not -----------------------------------


@pytest.mark.spec("B126")
@pytest.mark.parametrize("inline", [False, True], ids=["pooled", "inline-barrier"])
async def test_a_wrapper_sees_cancelled_on_a_batch_abort_and_its_finally_runs(
    autojump_clock: trio.testing.MockClock, inline: bool
) -> None:
    """B126: the abort comes out of ``await next()`` as trio.Cancelled; the call is then
    ABORTED (its body ran) or ABORTED_BEFORE_DISPATCH (the wrapper had not called next)."""
    seen: list[str] = []

    async def wrap(
        view: ToolDispatchExecution, next_: Callable[[], Awaitable[ToolExecutionResult]]
    ) -> ToolExecutionResult:
        try:
            if view.call_id == "c2":
                await trio.sleep(10)  # still deciding when the abort arrives
            return await next_()
        except trio.Cancelled:
            seen.append(f"cancelled:{view.call_id}")
            raise
        finally:
            seen.append(f"finally:{view.call_id}")

    definition = sleeper()
    if inline:
        definition = ToolDefinition("p", "p", {"type": "object"}, definition.execute)
    registry = ToolRegistry()
    registry.register(definition)
    registry.on_execute(wrap)
    signal = CancelSignal()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(cancel_at, signal, 1)
        results = await run_tool_calls(registry, [call("c1", 5), call("c2", 5)], signal=signal)
    if inline:
        # Exclusive calls run one at a time: c2 never started.
        assert [r.error for r in results] == [ABORTED, BEFORE]
        assert seen == ["cancelled:c1", "finally:c1"]
    else:
        assert [r.error for r in results] == [ABORTED, BEFORE]
        assert sorted(seen) == ["cancelled:c1", "cancelled:c2", "finally:c1", "finally:c2"]
    assert results[0].content == (TextContent("Error: tool call aborted"),)


async def test_a_replacement_signal_still_cancels_only_its_body_in_a_batch(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """B077/B078 in a batch: firing a wrapper's replacement cancels that call's body
    (through an O(1) link to a scope around it); the batch and its siblings go on."""

    async def wrap(
        view: ToolDispatchExecution, next_: Callable[[], Awaitable[ToolExecutionResult]]
    ) -> ToolExecutionResult:
        if view.call_id != "c1":
            return await next_()
        replacement = CancelSignal()
        view.signal = replacement
        async with trio.open_nursery() as nursery:
            nursery.start_soon(cancel_at, replacement, 1)
            try:
                return await next_()
            finally:
                view.signal = view.execution.signal

    registry = ToolRegistry()
    registry.register(sleeper())
    registry.on_execute(wrap)
    c1, c2 = await run_tool_calls(registry, [call("c1", 5), call("c2", 2)])
    assert c1.error == ABORTED
    assert c2.content == (TextContent("ok:c2"),)
    assert trio.current_time() == pytest.approx(2)


async def test_defect_9_a_body_that_spawns_into_its_parent_nursery_does_not_hang(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Wrapped or not, every task a call starts lives in the pool, which the batch ends."""

    async def strays(args: Any, ctx: ToolRunContext) -> str:
        parent = trio.lowlevel.current_task().parent_nursery
        assert parent is not None
        parent.start_soon(trio.sleep_forever)
        await trio.sleep(0.1)
        return "ok"

    async def wrap(
        view: ToolDispatchExecution, next_: Callable[[], Awaitable[ToolExecutionResult]]
    ) -> ToolExecutionResult:
        return await next_()

    registry = ToolRegistry()
    registry.register(
        ToolDefinition("p", "p", {"type": "object"}, strays, is_concurrency_safe=always)
    )
    registry.on_execute(wrap)
    with trio.fail_after(60):
        results = await run_tool_calls(registry, [call("c1"), call("c2"), call("c3")])
    assert [r.content for r in results] == [(TextContent("ok"),)] * 3


# -- reused workers -----------------------------------------------------------------


@pytest.mark.parametrize("cap", [1, 3, 10])
async def test_a_capped_batch_spawns_max_parallel_workers(
    autojump_clock: trio.testing.MockClock, cap: int
) -> None:
    """100 awaiting calls under a cap: ``cap`` worker tasks, and no other task (the
    workers run in the batch's one nursery, with no host task)."""
    spawned: list[trio.lowlevel.Task] = []

    class Count(trio.abc.Instrument):
        def task_spawned(self, task: trio.lowlevel.Task) -> None:
            spawned.append(task)

    registry = ToolRegistry()
    log: list[str] = []
    registry.register(sleeper(log=log))
    instrument = Count()
    trio.lowlevel.add_instrument(instrument)
    try:
        results = await run_tool_calls(
            registry, [call(f"c{i}", 0.01 * (i % 7)) for i in range(100)], max_parallel=cap
        )
    finally:
        trio.lowlevel.remove_instrument(instrument)
    assert [r.content for r in results] == [(TextContent(f"ok:c{i}"),) for i in range(100)]
    assert log == [f"start:c{i}" for i in range(100)]  # still in model order
    workers = [t for t in spawned if t.name.endswith("_worker")]
    assert len(workers) == cap
    assert len(spawned) == cap


async def test_streamed_calls_reuse_parked_workers(autojump_clock: trio.testing.MockClock) -> None:
    """A worker parks while the model streams; the next submission wakes it."""
    spawned: list[str] = []

    class Count(trio.abc.Instrument):
        def task_spawned(self, task: trio.lowlevel.Task) -> None:
            spawned.append(task.name)

    registry = ToolRegistry()
    registry.register(sleeper())
    instrument = Count()
    trio.lowlevel.add_instrument(instrument)
    try:
        async with open_tool_batch(registry, max_parallel=4) as batch:
            for i in range(5):
                batch.submit(call(f"c{i}", 0.1))
                await trio.sleep(1)  # each call finishes before the next arrives
            batch.close()
            results = [result async for _, result in batch]
    finally:
        trio.lowlevel.remove_instrument(instrument)
    assert len(results) == 5
    assert sum(name.endswith("_worker") for name in spawned) == 1


# -- batch ids and idempotency keys -------------------------------------------------


async def test_defect_3_batch_ids_are_random_128_bit_and_keys_combine_batch_and_call() -> None:
    seen: list[tuple[str | None, str]] = []

    async def body(args: Any, ctx: ToolRunContext) -> str:
        seen.append((ctx.batch_id, ctx.idempotency_key))
        return "ok"

    registry = ToolRegistry()
    registry.register(ToolDefinition("p", "p", {}, body, is_concurrency_safe=always))
    recorder = ListRecorder()
    await run_tool_calls(registry, [call("c1")], recorder=recorder)
    await run_tool_calls(registry, [call("c1")], recorder=recorder)
    ids = {event.batch for event in recorder.events}
    assert len(ids) == 2
    assert all(re.fullmatch(r"[0-9a-f]{32}", batch) for batch in ids)
    (first_id, first_key), (second_id, second_key) = seen
    assert first_key == f"{first_id}:c1"
    assert second_key == f"{second_id}:c1"
    assert first_key != second_key
    await registry.execute(ToolExecutionInput("c9", "p", {}))
    assert seen[-1] == (None, "c9")


async def test_a_resumed_batch_keeps_its_id() -> None:
    seen: list[str] = []

    async def body(args: Any, ctx: ToolRunContext) -> str:
        seen.append(ctx.idempotency_key)
        return "ok"

    registry = ToolRegistry()
    registry.register(ToolDefinition("p", "p", {}, body, is_concurrency_safe=always))
    recorder = ListRecorder()
    await run_tool_calls(registry, [call("c1")], batch_id="run-7", recorder=recorder)
    async with open_tool_batch(registry, batch_id="run-7") as batch:
        batch.submit(call("c2"))
    assert batch.id == "run-7"
    assert seen == ["run-7:c1", "run-7:c2"]
    assert {event.batch for event in recorder.events} == {"run-7"}


@pytest.mark.parametrize("bad", ["", 7, b"x"])
async def test_a_batch_id_must_be_a_non_empty_string(bad: Any) -> None:
    registry = ToolRegistry()
    with pytest.raises(ValueError, match="batch_id must be a non-empty string"):
        await run_tool_calls(registry, [], batch_id=bad)
    with pytest.raises(ValueError, match="batch_id must be a non-empty string"):
        async with open_tool_batch(registry, batch_id=bad):
            pass


# -- what a batch refuses -----------------------------------------------------------


async def test_defect_8_a_scope_of_another_registry_is_refused() -> None:
    """A's scope passed to B would run A's tools past A's guards: refused everywhere."""
    a, b = ToolRegistry(), ToolRegistry()
    a.register(sleeper())
    b.register(sleeper())
    scope = a.scope()
    scope.guard(lambda execution: "A's guard")
    with pytest.raises(ValueError, match="agent must be a ToolScope of this registry"):
        await b.execute(ToolExecutionInput("c1", "p", {}, agent=scope))
    with pytest.raises(ValueError, match="agent must be a ToolScope of this registry"):
        await run_tool_calls(b, [call("c1")], agent=scope)
    with pytest.raises(ValueError, match="agent must be a ToolScope of this registry"):
        async with open_tool_batch(b, agent=scope):
            pass
    (result,) = await run_tool_calls(a, [call("c1")], agent=scope)
    assert result.content == (TextContent("Error: A's guard"),)


def test_issue_12_the_trio_api_under_asyncio_names_toolnursery_aio() -> None:
    registry = ToolRegistry()
    registry.register(sleeper())

    async def main() -> list[str]:
        messages = []
        for attempt in (
            lambda: run_tool_calls(registry, [call("c1")]),
            lambda: registry.execute(ToolExecutionInput("c1", "p", {})),
        ):
            with pytest.raises(RuntimeError) as info:
                await attempt()
            messages.append(str(info.value))
        with pytest.raises(RuntimeError) as info:
            async with open_tool_batch(registry):
                pass
        messages.append(str(info.value))
        return messages

    for message in asyncio.run(main()):
        assert "toolnursery.aio" in message
        assert "trio" in message


async def test_arguments_that_cannot_be_arguments_are_that_calls_error_result(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """parse_arguments raising ToolArgsError: the call's result, logged, never
    dispatched, never an exception out of the batch; its siblings run."""
    real = intake_module.parse_arguments

    def parse(value: Any) -> Any:
        if value == "BAD":
            raise ToolArgsError(["arguments must be a JSON object or text"])
        return real(value)

    monkeypatch.setattr(intake_module, "parse_arguments", parse)
    log: list[str] = []
    registry = ToolRegistry()
    registry.register(sleeper(log=log))
    observed: list[str] = []
    registry.on_result(lambda execution, result: observed.append(execution.call_id))
    recorder = ListRecorder()
    results = await run_tool_calls(
        registry, [call("c1"), ToolCall("c2", "p", "BAD"), call("c3")], recorder=recorder
    )
    assert results[1].content == (
        TextContent("Error: invalid arguments: arguments must be a JSON object or text"),
    )
    assert results[1].error == ToolErrorInfo("ToolArgsError", "INVALID_ARGS")
    assert [r.is_error for r in results] == [False, True, False]
    assert log == ["start:c1", "start:c3"]
    assert observed == ["c1", "c3"]  # never passed the registry
    assert "tool_call:c2" in recorder.trace()
    assert "tool_result:c2" in recorder.trace()


# -- one nursery per batch ------------------------------------------------------------


async def test_a_task_a_body_leaves_in_the_batch_nursery_is_cancelled_when_the_batch_ends(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The workers run in the batch's one nursery; a task a body spawns there (through
    its task's parent nursery) is cancelled once every call has committed, so it does
    not outlive ``run_tool_calls``."""
    ended: list[str] = []

    async def linger() -> None:
        try:
            await trio.sleep_forever()
        finally:
            ended.append("lingerer")

    async def body(args: Any, ctx: ToolRunContext) -> str:
        nursery = trio.lowlevel.current_task().parent_nursery
        assert nursery is not None
        nursery.start_soon(linger)
        await trio.sleep(0)
        return "ok"

    registry = ToolRegistry()
    registry.register(
        ToolDefinition("p", "p", {"type": "object"}, body, is_concurrency_safe=always)
    )
    start = trio.current_time()
    results = await run_tool_calls(registry, [call("c1"), call("c2")])
    assert [r.is_error for r in results] == [False, False]
    assert ended == ["lingerer", "lingerer"]
    assert trio.current_time() == start  # cancelled, not waited for


async def test_calls_that_settle_while_the_pool_unwinds_are_committed_and_observed(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """An abort cancels the batch nursery with the driver shielded: every pooled call is
    committed (post-execute and observers run, in model order) before
    ``run_tool_calls`` returns, and the abort's ``Cancelled`` never leaves it."""
    signal = CancelSignal()
    seen: list[tuple[str, str | None]] = []
    posts: list[str] = []

    async def post(execution: Any, result: ToolExecutionResult, next_: Any) -> Any:
        await trio.sleep(0)  # a post hook that awaits still runs after the abort
        posts.append(execution.call_id)
        return await next_()

    def observe(execution: Any, result: ToolExecutionResult) -> None:
        seen.append((execution.call_id, result.error.code if result.error else None))

    registry = ToolRegistry()
    registry.register(sleeper())
    registry.on_post_execute(post)
    registry.on_result(observe)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(cancel_at, signal, 1)
        results = await run_tool_calls(
            registry, [call("c0", 0.5), call("c1", 5), call("c2", 5)], signal=signal
        )
    assert [r.error for r in results] == [None, ABORTED, ABORTED]
    assert seen == [("c0", None), ("c1", "ABORTED"), ("c2", "ABORTED")]
    assert posts == ["c0", "c1", "c2"]


async def test_an_aborted_open_batch_leaves_its_block_running(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The pool's nursery is not the block's: the batch signal cancels the pooled calls,
    and the block goes on to read every result."""
    signal = CancelSignal()
    registry = ToolRegistry()
    registry.register(sleeper())
    async with open_tool_batch(registry, signal=signal) as batch:
        batch.submit(call("c0", 5))
        batch.submit(call("c1", 5))
        await trio.sleep(1)
        signal.cancel("stop")
        await trio.sleep(1)  # the block itself is not cancelled
        batch.submit(call("c2", 5))
        batch.close()
        results = [result async for _, result in batch]
    assert [r.error for r in results] == [ABORTED, ABORTED, BEFORE]


async def test_after_the_last_call_starts_workers_commit_and_an_abort_still_commits_all(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Once every call of a closed batch has started, the driver waits in the nursery's
    exit and the workers commit as they settle (observers and the recorder in model
    order, each as soon as the prefix before it has settled); an abort then still
    commits every call."""
    signal = CancelSignal()
    seen: list[tuple[str, float, str | None]] = []
    recorder = ListRecorder()

    def observe(execution: Any, result: ToolExecutionResult) -> None:
        code = result.error.code if result.error else None
        seen.append((execution.call_id, trio.current_time(), code))

    registry = ToolRegistry()
    registry.register(sleeper())
    registry.on_result(observe)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(cancel_at, signal, 3)
        results = await run_tool_calls(
            registry,
            [call("c0", 2), call("c1", 1), call("c2", 9)],
            signal=signal,
            recorder=recorder,
        )
    assert [r.error for r in results] == [None, None, ABORTED]
    assert seen == [("c0", 2, None), ("c1", 2, None), ("c2", 3, "ABORTED")]
    assert recorder.trace()[3:] == ["tool_result:c0", "tool_result:c1", "tool_result:c2"]


async def test_a_recorder_failing_in_a_workers_commit_propagates_after_the_rest_settle(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A recorder that raises while a worker commits is the batch's internal failure:
    the other dispatches settle, then it propagates as itself."""
    ended: list[str] = []

    class Failing(ListRecorder):
        def record(self, event: RecorderEvent) -> None:
            if isinstance(event, ToolResultEvent) and event.call_id == "c0":
                raise OSError("disk full")
            super().record(event)

    async def body(args: Any, ctx: ToolRunContext) -> str:
        await trio.sleep(args["d"])
        ended.append(ctx.call_id)
        return "ok"

    registry = ToolRegistry()
    registry.register(
        ToolDefinition("p", "p", {"type": "object"}, body, is_concurrency_safe=always)
    )
    with pytest.raises(OSError, match="disk full"):
        await run_tool_calls(registry, [call("c0", 1), call("c1", 5)], recorder=Failing())
    assert ended == ["c0", "c1"]


async def test_a_cancellation_from_outside_commits_nothing_more_after_the_last_start(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """An enclosing scope cancelled while the workers commit: the calls it cancels are
    not committed (no observer sees them) and ``Cancelled`` propagates."""
    seen: list[str] = []
    registry = ToolRegistry()
    registry.register(sleeper())
    registry.on_result(lambda execution, result: seen.append(execution.call_id))
    with trio.move_on_after(3) as scope:
        await run_tool_calls(registry, [call("c0", 1), call("c1", 9), call("c2", 9)])
    assert scope.cancelled_caught
    assert seen == ["c0"]
