"""toolnursery.aio: batches awaited from asyncio, asyncio tools, cancellation both ways.

The asyncio tests are plain sync tests that call :func:`_run` (``asyncio.run`` plus
checks that the loop reported no error, that the trio guest run ended with the loop,
and that the async-generator hooks were restored).
"""

from __future__ import annotations

import asyncio
import contextvars
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import msgspec
import pytest
import sniffio
import trio

import toolnursery.aio as aio
from toolnursery import (
    TOOL_ABORTED,
    TOOL_ABORTED_BEFORE_DISPATCH,
    CancelSignal,
    Deny,
    ImageContent,
    RegistrationError,
    TextContent,
    ToolCall,
    ToolDefinition,
    ToolError,
    ToolErrorInfo,
    ToolExecution,
    ToolExecutionInput,
    ToolExecutionResult,
    ToolRegistry,
    ToolReturn,
    ToolRunContext,
    define_tool,
    install_timeout_policy,
    run_tool_calls,
    tool,
)
from toolnursery._aio._host import _hosts
from toolnursery.log import ToolCallEvent, ToolResultEvent

T = TypeVar("T")

ROOT = Path(__file__).resolve().parents[2]

ABORTED = ToolExecutionResult(
    (TextContent("Error: tool call aborted"),), True, ToolErrorInfo("AbortError", TOOL_ABORTED)
)
ABORTED_BEFORE_DISPATCH = ToolExecutionResult(
    (TextContent("Error: tool call aborted before dispatch"),),
    True,
    ToolErrorInfo("AbortError", TOOL_ABORTED_BEFORE_DISPATCH),
)
TIMEOUT = ToolExecutionResult(
    (TextContent("Error: tool call timed out after 20ms"),),
    True,
    ToolErrorInfo("ToolTimeoutError", "TOOL_TIMEOUT"),
)
PARALLEL: Callable[[Any], bool] = lambda args: True  # noqa: E731


def _run(main: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """``asyncio.run(main())``, then check that nothing leaked or was reported."""
    reported: list[dict[str, Any]] = []
    hooks = sys.get_asyncgen_hooks()

    async def guarded() -> T:
        asyncio.get_running_loop().set_exception_handler(lambda _, ctx: reported.append(ctx))
        return await main()

    result = asyncio.run(guarded())
    assert reported == []
    assert not trio.lowlevel.in_trio_run(), "the trio guest run outlived its loop"
    assert sys.get_asyncgen_hooks() == hooks
    return result


def _assert_quiet() -> None:
    """No task of ours on either loop: only the caller on asyncio, none in the service."""
    loop = asyncio.get_running_loop()
    assert asyncio.all_tasks() == {asyncio.current_task()}
    host = _hosts.get(loop)
    if host is None:
        return  # the batches ran on the asyncio driver: no trio guest run was started
    assert host.active == set()
    assert host.nursery is not None
    assert host.nursery.child_tasks == frozenset()


def _definition(
    name: str, body: Any, *, parallel: bool = True, timeout_ms: float | None = None
) -> ToolDefinition:
    return ToolDefinition(
        name,
        f"the {name} tool",
        {"type": "object"},
        body,
        timeout_ms=timeout_ms,
        is_concurrency_safe=PARALLEL if parallel else None,
    )


class ListRecorder:
    def __init__(self) -> None:
        self.events: list[Any] = []

    def record(self, event: Any, /) -> None:
        self.events.append(event)

    def normalized(self) -> list[Any]:
        # Batch ids and times differ from run to run; the events are otherwise equal.
        times = ("wall", "t", "admitted", "began", "ended")
        return [
            msgspec.structs.replace(
                e, batch="B", **{f: None for f in times if getattr(e, f, None) is not None}
            )
            for e in self.events
        ]

    def results(self) -> dict[str, ToolExecutionResult]:
        return {e.call_id: e.result for e in self.events if isinstance(e, ToolResultEvent)}


class RaisingRecorder:
    def __init__(self, failure: Exception) -> None:
        self.failure = failure

    def record(self, event: Any, /) -> None:
        if isinstance(event, ToolResultEvent):
            raise self.failure


# -- the same batch under trio.run and under asyncio.run ---------------------------------


def _mixed_registry() -> ToolRegistry:
    async def echo(args: Any, ctx: ToolRunContext) -> str:
        await trio.lowlevel.checkpoint()
        return f"echo {args.get('text')}"

    async def write(args: Any, ctx: ToolRunContext) -> ToolReturn:
        await trio.sleep(0)
        return ToolReturn([TextContent("written")], meta={"bytes": 7})

    def count(args: Any, ctx: ToolRunContext) -> list[TextContent]:
        return [TextContent(str(len(args.get("text", ""))))]

    async def fail(args: Any, ctx: ToolRunContext) -> str:
        raise ToolError("disk on fire", code="DISK")

    async def crash(args: Any, ctx: ToolRunContext) -> str:
        raise ValueError("bad value")

    async def secret(args: Any, ctx: ToolRunContext) -> str:  # pragma: no cover - denied
        raise AssertionError("a denied tool ran")

    async def deny_secret(execution: ToolExecution, next_: Any) -> Any:
        if execution.name == "secret":
            return Deny("secret is off limits")
        return await next_()

    async def read(args: Any, ctx: ToolRunContext) -> str:
        return f"read {args['path']}"

    registry = ToolRegistry()
    registry.register(_definition("echo", echo))
    registry.register(_definition("write", write, parallel=False))
    registry.register(_definition("count", count))
    registry.register(_definition("fail", fail))
    registry.register(_definition("crash", crash, parallel=False))
    registry.register(_definition("secret", secret))
    registry.register(
        define_tool(
            name="read",
            description="read a file",
            parameters={"path": {"type": "string", "required": True}},
            execute=read,
            is_concurrency_safe=lambda args: True,
        )
    )
    registry.on_pre_execute(deny_secret)
    return registry


MIXED_CALLS = [
    ToolCall("c1", "echo", '{"text": "a"}'),
    ToolCall("c2", "count", '{"text": "abc"}'),
    ToolCall("c3", "read", '{"path": "x.txt"}'),
    ToolCall("c4", "write", "{}"),
    ToolCall("c5", "echo", '{"text": "b"}'),
    ToolCall("c6", "secret", "{}"),
    ToolCall("c7", "read", '{"path": 3}'),
    ToolCall("c8", "fail", ""),
    ToolCall("c9", "crash", "{}"),
    ToolCall("c10", "nope", "{}"),
    ToolCall("c11", "echo", "not json"),
    ToolCall("c1", "echo", "{}"),
]


def _under_trio() -> tuple[list[ToolExecutionResult], list[Any]]:
    recorder = ListRecorder()

    async def main() -> list[ToolExecutionResult]:
        return await run_tool_calls(
            _mixed_registry(), MIXED_CALLS, max_parallel=2, recorder=recorder
        )

    return trio.run(main), recorder.normalized()


def test_the_same_batch_gives_identical_results_under_asyncio_and_trio() -> None:
    expected, expected_events = _under_trio()
    recorder = ListRecorder()

    async def main() -> list[ToolExecutionResult]:
        results = await aio.run_tool_calls(
            _mixed_registry(), iter(MIXED_CALLS), max_parallel=2, recorder=recorder
        )
        _assert_quiet()
        return results

    results = _run(main)
    assert results == expected
    assert recorder.normalized() == expected_events
    # The batch really is mixed: successes, a denial, failures, invalid arguments.
    texts = [r.content[0].text for r in results]  # type: ignore[union-attr]
    assert texts[:5] == ["echo a", "3", "read x.txt", "written", "echo b"]
    assert texts[5] == "Error: secret is off limits"
    assert results[6].error == ToolErrorInfo("ToolArgsError", "INVALID_ARGS")
    assert results[7].error == ToolErrorInfo("ToolError", "DISK")
    assert texts[8] == "Error: bad value"
    assert results[9].error == ToolErrorInfo("ToolNotFoundError", "UNKNOWN_TOOL")
    assert results[11].error == ToolErrorInfo("DuplicateCallIdError", "DUPLICATE_CALL_ID")


def test_execute_gives_identical_results_under_asyncio_and_trio() -> None:
    inputs = [
        ToolExecutionInput("e1", "echo", {"text": "x"}),
        ToolExecutionInput("e2", "secret", {}),
        ToolExecutionInput("e3", "read", {"path": 1}),
        ToolExecutionInput("e4", "fail", {}),
        ToolExecutionInput("e5", "nope", {}),
    ]

    async def under_trio() -> list[ToolExecutionResult]:
        registry = _mixed_registry()
        return [await registry.execute(i) for i in inputs]

    async def under_asyncio() -> list[ToolExecutionResult]:
        registry = _mixed_registry()
        return [await aio.execute(registry, i) for i in inputs]

    expected = trio.run(under_trio)
    assert _run(under_asyncio) == expected
    assert expected[0].content == (TextContent("echo x"),)


def test_open_tool_batch_streams_results_in_model_order() -> None:
    expected, expected_events = _under_trio()
    recorder = ListRecorder()

    async def main() -> tuple[list[Any], list[ToolExecutionResult]]:
        seen: list[Any] = []
        async with aio.open_tool_batch(
            _mixed_registry(), max_parallel=2, recorder=recorder
        ) as batch:
            for call in MIXED_CALLS[:4]:
                batch.submit(call)
            seen.append(await anext(batch))  # the first result arrives before close()
            for call in MIXED_CALLS[4:]:
                batch.submit(call)
            batch.close()
            with pytest.raises(RuntimeError, match="closed"):
                batch.submit(MIXED_CALLS[0])
            seen.extend([pair async for pair in batch])
            assert batch.id == recorder.events[0].batch
            assert isinstance(batch.signal, CancelSignal)
        _assert_quiet()
        return seen, batch.results

    pairs, results = _run(main)
    assert [call for call, _ in pairs] == MIXED_CALLS
    assert [result for _, result in pairs] == expected
    assert results == expected
    assert recorder.normalized() == expected_events


def test_arguments_are_checked_as_the_trio_api_checks_them() -> None:
    async def main() -> None:
        registry = ToolRegistry()
        with pytest.raises(ValueError, match="max_parallel"):
            await aio.run_tool_calls(registry, [], max_parallel=0)
        with pytest.raises(TypeError, match="CancelSignal"):
            await aio.run_tool_calls(registry, [], signal="stop")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="max_parallel"):
            async with aio.open_tool_batch(registry, max_parallel=-1):
                pass  # pragma: no cover - never entered
        with pytest.raises(TypeError, match="CancelSignal"):
            async with aio.open_tool_batch(registry, signal=1):  # type: ignore[arg-type]
                pass  # pragma: no cover - never entered
        with pytest.raises(TypeError, match="signal must be a CancelSignal"):
            await aio.execute(registry, ToolExecutionInput("x", "y", {}, "stop"))  # type: ignore[arg-type]
        assert await aio.run_tool_calls(registry, []) == []
        _assert_quiet()

    _run(main)


# -- failures -----------------------------------------------------------------------------


def test_an_internal_failure_surfaces_as_the_same_exception() -> None:
    failure = OSError("disk full")

    async def main() -> None:
        registry = _mixed_registry()
        with pytest.raises(OSError, match="disk full") as info:
            await aio.run_tool_calls(registry, MIXED_CALLS[:3], recorder=RaisingRecorder(failure))
        assert info.value is failure
        pairs: list[Any] = []

        async def stream() -> None:
            async with aio.open_tool_batch(registry, recorder=RaisingRecorder(failure)) as batch:
                batch.submit(MIXED_CALLS[0])
                batch.close()
                pairs.extend([pair async for pair in batch])

        with pytest.raises(OSError, match="disk full") as info:
            await stream()
        assert info.value is failure
        assert pairs == []  # iteration ends; the failure is raised when the block exits
        _assert_quiet()

    _run(main)


def test_a_raising_block_aborts_the_batch_and_propagates() -> None:
    recorder = ListRecorder()
    finished: list[str] = []

    async def main() -> None:
        running = asyncio.Event()

        async def slow(args: Any, ctx: ToolRunContext) -> str:
            running.set()
            try:
                await trio.sleep_forever()
            finally:
                finished.append(ctx.call_id)
            raise AssertionError("unreachable")  # pragma: no cover

        registry = ToolRegistry()
        registry.register(_definition("slow", slow, parallel=False))

        async def stream() -> None:
            async with aio.open_tool_batch(registry, recorder=recorder) as batch:
                batch.submit(ToolCall("s1", "slow", "{}"))
                batch.submit(ToolCall("s2", "slow", "{}"))
                await running.wait()
                raise KeyError("model went away")

        with pytest.raises(KeyError, match="model went away"):
            await stream()
        _assert_quiet()

    _run(main)
    assert finished == ["s1"]
    assert recorder.results() == {"s1": ABORTED, "s2": ABORTED_BEFORE_DISPATCH}


# -- cancelling the asyncio task ----------------------------------------------------------


def test_cancelling_the_asyncio_task_drains_the_batch() -> None:
    recorder = ListRecorder()
    cleaned: list[str] = []
    calls = [
        ToolCall("t1", "trio_wait", "{}"),
        ToolCall("a1", "asyncio_wait", "{}"),
        ToolCall("t2", "trio_wait", "{}"),
        ToolCall("x1", "barrier", "{}"),
        ToolCall("t3", "trio_wait", "{}"),
    ]

    async def main() -> None:
        running = asyncio.Event()
        started: set[str] = set()

        async def trio_wait(args: Any, ctx: ToolRunContext) -> str:
            started.add(ctx.call_id)
            if len(started) == 3:
                running.set()
            try:
                await trio.sleep_forever()
            finally:
                with trio.CancelScope(shield=True):
                    await trio.lowlevel.checkpoint()
                cleaned.append(ctx.call_id)

        async def asyncio_wait(args: Any, ctx: ToolRunContext) -> str:
            started.add(ctx.call_id)
            if len(started) == 3:
                running.set()
            try:
                await asyncio.Event().wait()
            finally:
                await asyncio.sleep(0)
                cleaned.append(ctx.call_id)
            raise AssertionError("unreachable")  # pragma: no cover

        async def barrier(args: Any, ctx: ToolRunContext) -> str:  # pragma: no cover
            raise AssertionError("an unstarted call ran")

        registry = ToolRegistry()
        registry.register(_definition("trio_wait", trio_wait))
        registry.register(aio.asyncio_tool(_definition("asyncio_wait", asyncio_wait)))
        registry.register(_definition("barrier", barrier, parallel=False))
        task = asyncio.create_task(aio.run_tool_calls(registry, calls, recorder=recorder))
        await running.wait()
        assert cleaned == []
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert sorted(cleaned) == ["a1", "t1", "t2"]
        _assert_quiet()

    _run(main)
    assert recorder.results() == {
        "t1": ABORTED,
        "a1": ABORTED,
        "t2": ABORTED,
        "x1": ABORTED_BEFORE_DISPATCH,
        "t3": ABORTED_BEFORE_DISPATCH,
    }
    started_events = [e.call.id for e in recorder.events if isinstance(e, ToolCallEvent)]
    assert started_events == ["t1", "a1", "t2", "x1", "t3"]


def test_a_repeated_cancellation_does_not_cut_the_drain_short() -> None:
    cleaned: list[str] = []

    async def main() -> None:
        running = asyncio.Event()
        cleanup_started = asyncio.Event()
        release = trio.Event()

        async def stubborn(args: Any, ctx: ToolRunContext) -> str:
            running.set()
            try:
                await trio.sleep_forever()
            finally:
                with trio.CancelScope(shield=True):
                    cleanup_started.set()
                    await release.wait()
                cleaned.append(ctx.call_id)

        registry = ToolRegistry()
        registry.register(_definition("stubborn", stubborn))
        signal = CancelSignal()
        task = asyncio.create_task(
            aio.run_tool_calls(registry, [ToolCall("s", "stubborn", "{}")], signal=signal)
        )
        await running.wait()
        task.cancel()
        await cleanup_started.wait()
        task.cancel()
        for _ in range(5):
            await asyncio.sleep(0)
        assert not task.done()
        assert cleaned == []
        release.set()  # trio's sync API works from the host thread in guest mode
        with pytest.raises(asyncio.CancelledError):
            await task
        assert cleaned == ["s"]
        assert not signal.cancelled  # the caller's signal was fused, never fired
        _assert_quiet()

    _run(main)


def test_cancelling_execute_aborts_the_call_through_the_pipeline() -> None:
    observed: list[ToolExecutionResult] = []
    cleaned: list[str] = []

    async def main() -> None:
        running = asyncio.Event()

        async def slow(args: Any, ctx: ToolRunContext) -> str:
            running.set()
            try:
                await trio.sleep_forever()
            finally:
                cleaned.append(ctx.call_id)

        registry = ToolRegistry()
        registry.register(_definition("slow", slow))
        registry.on_result(lambda execution, result: observed.append(result))
        signal = CancelSignal()
        task = asyncio.create_task(
            aio.execute(registry, ToolExecutionInput("e", "slow", {}, signal))
        )
        await running.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert cleaned == ["e"]
        assert not signal.cancelled
        _assert_quiet()

    _run(main)
    assert observed == [ABORTED]


def test_cancelling_while_the_batch_opens_aborts_it() -> None:
    recorder = ListRecorder()

    async def main() -> None:
        registry = _mixed_registry()
        await aio.run_tool_calls(registry, [])  # the host is up; opening is one trio tick
        entered: list[bool] = []

        async def use() -> None:
            async with aio.open_tool_batch(registry, recorder=recorder) as batch:
                entered.append(True)
                batch.submit(MIXED_CALLS[0])
                await asyncio.Event().wait()

        task = asyncio.create_task(use())
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert entered == []
        _assert_quiet()

    _run(main)
    assert recorder.events == []


def test_a_failure_during_the_drain_wins_over_the_cancellation() -> None:
    failure = OSError("log lost")

    async def main() -> None:
        running = asyncio.Event()

        async def slow(args: Any, ctx: ToolRunContext) -> str:
            running.set()
            await trio.sleep_forever()
            raise AssertionError("unreachable")  # pragma: no cover

        registry = ToolRegistry()
        registry.register(_definition("slow", slow))
        task = asyncio.create_task(
            aio.run_tool_calls(
                registry, [ToolCall("s", "slow", "{}")], recorder=RaisingRecorder(failure)
            )
        )
        await running.wait()
        task.cancel()
        with pytest.raises(OSError, match="log lost") as info:
            await task
        assert info.value is failure
        assert isinstance(info.value.__context__, asyncio.CancelledError)
        _assert_quiet()

    _run(main)


# -- asyncio tools ------------------------------------------------------------------------


async def _ret_str(args: Any, ctx: ToolRunContext) -> str:
    return "plain"


async def _ret_list(args: Any, ctx: ToolRunContext) -> list[Any]:
    return [TextContent("a"), ImageContent("aGk=", "image/png")]


async def _ret_tool_return(args: Any, ctx: ToolRunContext) -> ToolReturn:
    return ToolReturn((TextContent("r"),), meta={"k": [1, 2]})


async def _raise_value(args: Any, ctx: ToolRunContext) -> str:
    raise ValueError("nope")


async def _raise_tool_error(args: Any, ctx: ToolRunContext) -> str:
    raise ToolError("quota", code="QUOTA")


async def _ret_int(args: Any, ctx: ToolRunContext) -> int:
    return 42


_BODIES: list[Callable[[Any, ToolRunContext], Awaitable[Any]]] = [
    _ret_str,
    _ret_list,
    _ret_tool_return,
    _raise_value,
    _raise_tool_error,
    _ret_int,
]


def test_asyncio_tool_results_and_errors_map_as_a_trio_body() -> None:
    calls = [ToolCall(f"c{i}", f"t{i}", "{}") for i in range(len(_BODIES))]

    def registry(wrap: bool) -> ToolRegistry:
        registry = ToolRegistry()
        for i, body in enumerate(_BODIES):
            definition = _definition(f"t{i}", body)
            registry.register(aio.asyncio_tool(definition) if wrap else definition)
        return registry

    async def under_trio() -> list[ToolExecutionResult]:
        return await run_tool_calls(registry(False), calls)

    async def under_asyncio() -> list[ToolExecutionResult]:
        results = await aio.run_tool_calls(registry(True), calls)
        _assert_quiet()
        return results

    expected = trio.run(under_trio)
    assert _run(under_asyncio) == expected
    assert expected[0].content == (TextContent("plain"),)
    assert expected[2].meta == {"k": (1, 2)}
    assert expected[4].error == ToolErrorInfo("ToolError", "QUOTA")
    assert expected[5].content == (TextContent("42"),)  # a JSON value is encoded


def test_asyncio_tool_runs_on_the_asyncio_loop_with_the_callers_context() -> None:
    request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id")

    async def where(args: Any, ctx: ToolRunContext) -> str:
        task = asyncio.current_task()
        name = task.get_name() if task is not None else "no task"
        return f"{sniffio.current_async_library()} {request_id.get()} {name}"

    async def main() -> list[str]:
        registry = ToolRegistry()
        registry.register(aio.asyncio_tool(_definition("on_asyncio", where)))
        registry.register(_definition("on_trio", where))
        request_id.set("req-7")
        results = await aio.run_tool_calls(
            registry, [ToolCall("1", "on_asyncio", "{}"), ToolCall("2", "on_trio", "{}")]
        )
        return [r.content[0].text for r in results]  # type: ignore[union-attr]

    assert _run(main) == ["asyncio req-7 toolnursery:on_asyncio", "trio req-7 no task"]


def test_asyncio_tool_sees_a_trio_timeout_as_cancellation() -> None:
    cleanup: list[str] = []

    async def hang(args: Any, ctx: ToolRunContext) -> str:
        try:
            await asyncio.sleep(60)  # the thing the timeout cancels
        except asyncio.CancelledError:
            cleanup.append("cancelled")
            await asyncio.sleep(0)  # cleanup may await; the call waits for it
            cleanup.append("cleaned")
            raise
        raise AssertionError("unreachable")  # pragma: no cover

    async def main() -> ToolExecutionResult:
        registry = ToolRegistry()
        registry.register(aio.asyncio_tool(_definition("hang", hang, timeout_ms=20)))
        install_timeout_policy(registry)
        result = await aio.execute(registry, ToolExecutionInput("h", "hang", {}))
        assert cleanup == ["cancelled", "cleaned"]
        _assert_quiet()
        return result

    assert _run(main) == TIMEOUT


def test_an_enclosing_trio_cancellation_does_not_interrupt_the_asyncio_cleanup() -> None:
    cleanup: list[str] = []

    async def main() -> ToolExecutionResult:
        cleaning = asyncio.Event()
        release = asyncio.Event()
        scopes: list[trio.CancelScope] = []

        async def hang(args: Any, ctx: ToolRunContext) -> str:
            try:
                await asyncio.sleep(60)  # the thing the timeout cancels
            except asyncio.CancelledError:
                cleanup.append("cancelled")
                cleaning.set()
                await release.wait()  # a second task.cancel() would interrupt this
                cleanup.append("done")
                raise
            raise AssertionError("unreachable")  # pragma: no cover

        async def outer(view: Any, next_: Callable[[], Awaitable[ToolExecutionResult]]) -> Any:
            with trio.CancelScope() as scope:
                scopes.append(scope)
                return await next_()
            return ToolExecutionResult((TextContent("outer scope cancelled"),), True)

        registry = ToolRegistry()
        registry.register(aio.asyncio_tool(_definition("hang", hang, timeout_ms=20)))
        registry.on_execute(outer)
        install_timeout_policy(registry)
        call = asyncio.create_task(aio.execute(registry, ToolExecutionInput("h", "hang", {})))
        await cleaning.wait()
        scopes[0].cancel()  # a second, enclosing trio cancellation during the cleanup
        for _ in range(5):
            await asyncio.sleep(0)
        assert not call.done()
        release.set()
        result = await call
        _assert_quiet()
        return result

    result = _run(main)
    assert cleanup == ["cancelled", "done"]
    assert result.content == (TextContent("outer scope cancelled"),)


def test_asyncio_tool_sees_a_batch_abort_as_cancellation() -> None:
    cleanup: list[str] = []
    recorder = ListRecorder()

    async def main() -> list[ToolExecutionResult]:
        running = asyncio.Event()

        async def hang(args: Any, ctx: ToolRunContext) -> str:
            cleanup.append("started")
            if cleanup.count("started") == 2:
                running.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                assert ctx.signal.cancelled
                cleanup.append(ctx.call_id)
                raise
            raise AssertionError("unreachable")  # pragma: no cover

        async def swallow(args: Any, ctx: ToolRunContext) -> str:
            cleanup.append("started")
            if cleanup.count("started") == 2:
                running.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cleanup.append(ctx.call_id)
            return "finished anyway"

        registry = ToolRegistry()
        registry.register(aio.asyncio_tool(_definition("hang", hang)))
        registry.register(aio.asyncio_tool(_definition("swallow", swallow)))
        signal = CancelSignal()
        calls = [
            ToolCall("h", "hang", "{}"),
            ToolCall("s", "swallow", "{}"),
            ToolCall("n", "hang", "{}"),
        ]
        task = asyncio.create_task(
            aio.run_tool_calls(registry, calls, signal=signal, max_parallel=2, recorder=recorder)
        )
        await running.wait()
        signal.cancel("user pressed stop")  # fired from asyncio code
        results = await task
        _assert_quiet()
        return results

    assert _run(main) == [ABORTED, ABORTED, ABORTED_BEFORE_DISPATCH]
    assert sorted(cleanup) == ["h", "s", "started", "started"]


def test_asyncio_tool_cancelled_on_the_asyncio_side_is_aborted() -> None:
    async def main() -> ToolExecutionResult:
        running = asyncio.Event()

        async def hang(args: Any, ctx: ToolRunContext) -> str:
            running.set()
            await asyncio.Event().wait()
            raise AssertionError("unreachable")  # pragma: no cover

        registry = ToolRegistry()
        registry.register(aio.asyncio_tool(_definition("hang", hang)))
        call = asyncio.create_task(
            aio.execute(registry, ToolExecutionInput("h", "hang", {}), driver="trio")
        )
        await running.wait()
        (tool_task,) = [t for t in asyncio.all_tasks() if t.get_name() == "toolnursery:hang"]
        tool_task.cancel()
        result = await call
        _assert_quiet()
        return result

    assert _run(main) == ABORTED


def test_asyncio_tool_under_plain_trio_run_fails_with_a_clear_error() -> None:
    ran: list[bool] = []

    async def body(args: Any, ctx: ToolRunContext) -> str:  # pragma: no cover - never runs
        ran.append(True)
        return "ran"

    @aio.asyncio_tool
    @tool
    async def lookup(key: str) -> str:  # pragma: no cover - never runs
        """Look a key up."""
        ran.append(True)
        return key

    async def plain(key: str) -> str:  # pragma: no cover - never runs
        """Without a context argument, the error names the function."""
        ran.append(True)
        return key

    async def main() -> list[ToolExecutionResult]:
        registry = ToolRegistry()
        registry.register(aio.asyncio_tool(_definition("fetch", body)))
        registry.register(lookup)
        registry.register(_definition("bare", aio.asyncio_tool(body)))
        registry.register(msgspec.structs.replace(tool(aio.asyncio_tool(plain)), name="p"))
        return await run_tool_calls(
            registry,
            [
                ToolCall("1", "fetch", "{}"),
                ToolCall("2", "lookup", '{"key": "k"}'),
                ToolCall("3", "bare", "{}"),
                ToolCall("4", "p", '{"key": "k"}'),
            ],
        )

    results = trio.run(main)
    assert ran == []
    for result, name in zip(results, ["fetch", "lookup", "bare", "plain"], strict=True):
        assert result.error == ToolErrorInfo("AsyncioHostError", "NO_ASYNCIO_HOST")
        assert result.content == (
            TextContent(
                f'Error: asyncio tool "{name}" needs an asyncio host loop: it runs only in '
                "calls started from asyncio through toolnursery.aio (run_tool_calls, "
                "open_tool_batch, execute), and this trio run has none"
            ),
        )


def test_asyncio_tool_declaration_forms() -> None:
    async def fetch(url: str, ctx: ToolRunContext) -> str:
        """Fetch a URL.

        Args:
            url: where to go.
        """
        await asyncio.sleep(0)
        return f"got {url} for {ctx.call_id}"

    wrapped = aio.asyncio_tool(fetch)
    assert aio.is_asyncio_tool(wrapped)
    assert not aio.is_asyncio_tool(fetch)
    assert aio.asyncio_tool(wrapped) is wrapped
    assert wrapped.__name__ == "fetch"
    assert wrapped.__doc__ == fetch.__doc__

    under = tool(wrapped)  # @tool reads the wrapped signature and docstring
    over = aio.asyncio_tool(tool(fetch))
    assert aio.asyncio_tool(over) is over
    assert under.parameters == over.parameters
    assert under.parameters["required"] == ["url"]

    async def raw(args: Any, ctx: ToolRunContext) -> str:
        await asyncio.sleep(0)
        return f"raw {args['n']}"

    defined = define_tool(
        name="raw",
        description="d",
        parameters={"n": {"type": "number", "required": True}},
        execute=aio.asyncio_tool(raw),
    )

    async def main() -> list[ToolExecutionResult]:
        registry = ToolRegistry()
        registry.register(msgspec.structs.replace(under, name="under"))
        registry.register(msgspec.structs.replace(over, name="over"))
        registry.register(defined)
        return await aio.run_tool_calls(
            registry,
            [
                ToolCall("1", "under", '{"url": "a"}'),
                ToolCall("2", "over", '{"url": "b"}'),
                ToolCall("3", "raw", '{"n": 5}'),
                ToolCall("4", "raw", '{"n": "five"}'),
            ],
        )

    results = _run(main)
    texts = [r.content[0].text for r in results]  # type: ignore[union-attr]
    assert texts[:3] == ["got a for 1", "got b for 2", "raw 5"]
    assert results[3].error == ToolErrorInfo("ToolArgsError", "INVALID_ARGS")


def test_asyncio_tool_rejects_what_is_provably_not_an_async_def() -> None:
    def sync_body(args: Any, ctx: ToolRunContext) -> str:  # pragma: no cover
        return "sync"

    with pytest.raises(RegistrationError, match=r"asyncio_tool\(\) must be an async def"):
        aio.asyncio_tool(sync_body)  # type: ignore[arg-type]
    with pytest.raises(RegistrationError, match="got int"):
        aio.asyncio_tool(3)  # type: ignore[call-overload]
    with pytest.raises(RegistrationError, match='tool "s" execute must be an async def'):
        aio.asyncio_tool(_definition("s", sync_body))


def test_the_wrapper_runs_the_body_directly_when_awaited_from_asyncio() -> None:
    async def body(x: int) -> str:
        await asyncio.sleep(0)
        return f"x={x} on {sniffio.current_async_library()}"

    async def main() -> str:
        return await aio.asyncio_tool(body)(4)

    assert _run(main) == "x=4 on asyncio"


# -- the host: one guest run per loop, shut down with the loop ----------------------------


def test_one_guest_run_per_loop_reused_and_restarted_after_aclose() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        registry = _mixed_registry()
        calls = MIXED_CALLS[:2]
        first, second = await asyncio.gather(
            aio.run_tool_calls(registry, calls), aio.run_tool_calls(registry, calls)
        )
        assert first == second
        host = _hosts[loop]
        await aio.execute(registry, ToolExecutionInput("e", "echo", {}))
        assert _hosts[loop] is host
        assert trio.lowlevel.in_trio_run()  # the guest run is alive between batches
        await aio.aclose()
        assert loop not in _hosts
        assert host.finished.done()
        assert not trio.lowlevel.in_trio_run()
        await aio.aclose()  # idempotent, and a no-op without a host
        assert await aio.run_tool_calls(registry, calls) == first
        second_host = _hosts[loop]
        assert second_host is not host
        # A call arriving while a host closes waits for it, then starts the next one.
        closing = asyncio.create_task(aio.aclose())
        await asyncio.sleep(0)
        assert second_host.closing
        assert not second_host.finished.done()
        assert await aio.run_tool_calls(registry, calls) == first
        assert second_host.finished.done()
        assert _hosts[loop] not in (host, second_host)
        await closing

    _run(main)


def test_aclose_aborts_batches_in_flight_and_waits_for_them() -> None:
    cleaned: list[str] = []

    async def main() -> list[ToolExecutionResult]:
        running = asyncio.Event()

        async def slow(args: Any, ctx: ToolRunContext) -> str:
            running.set()
            try:
                await trio.sleep_forever()
            finally:
                cleaned.append(ctx.call_id)

        registry = ToolRegistry()
        registry.register(_definition("slow", slow, parallel=False))
        task = asyncio.create_task(
            aio.run_tool_calls(registry, [ToolCall("a", "slow", "{}"), ToolCall("b", "slow", "")])
        )
        await running.wait()
        await aio.aclose()
        assert not trio.lowlevel.in_trio_run()
        return await task

    assert _run(main) == [ABORTED, ABORTED_BEFORE_DISPATCH]
    assert cleaned == ["a"]


def test_aclose_closes_an_open_streaming_batch() -> None:
    async def main() -> list[Any]:
        async with aio.open_tool_batch(_mixed_registry()) as batch:
            batch.submit(MIXED_CALLS[0])
            assert (await anext(batch))[1].content == (TextContent("echo a"),)
            await aio.aclose()  # aborts: submission closes, nothing more will start
            with pytest.raises(RuntimeError, match="closed"):
                batch.submit(MIXED_CALLS[1])
            return [pair async for pair in batch]

    assert _run(main) == []


def test_loop_shutdown_drains_a_batch_left_running() -> None:
    cleaned: list[str] = []
    recorder = ListRecorder()
    background: set[asyncio.Task[Any]] = set()

    async def main() -> None:
        running = asyncio.Event()

        async def slow(args: Any, ctx: ToolRunContext) -> str:
            if ctx.call_id == "b":
                running.set()
            try:
                await asyncio.Event().wait()
            finally:
                cleaned.append(ctx.call_id)
            raise AssertionError("unreachable")  # pragma: no cover

        registry = ToolRegistry()
        registry.register(aio.asyncio_tool(_definition("slow", slow)))
        background.add(
            asyncio.create_task(
                aio.run_tool_calls(
                    registry,
                    [ToolCall("a", "slow", "{}"), ToolCall("b", "slow", "{}")],
                    recorder=recorder,
                )
            )
        )
        await running.wait()
        # main returns; asyncio.run cancels the batch's task, then shuts the host down.

    _run(main)
    assert sorted(cleaned) == ["a", "b"]
    assert recorder.results() == {"a": ABORTED, "b": ABORTED}


def test_the_trio_host_survives_a_failing_asyncio_tool_and_keeps_serving() -> None:
    async def main() -> list[ToolExecutionResult]:
        registry = ToolRegistry()
        registry.register(aio.asyncio_tool(_definition("boom", _raise_value)))
        registry.register(aio.asyncio_tool(_definition("ok", _ret_str)))
        first = await aio.run_tool_calls(registry, [ToolCall("1", "boom", "{}")])
        second = await aio.execute(registry, ToolExecutionInput("2", "ok", {}))
        return [*first, second]

    results = _run(main)
    assert results[0].content == (TextContent("Error: nope"),)
    assert results[1].content == (TextContent("plain"),)


def test_each_loop_thread_gets_its_own_guest_run() -> None:
    results: dict[str, list[ToolExecutionResult]] = {}

    def worker(name: str) -> None:
        async def main() -> list[ToolExecutionResult]:
            return await aio.run_tool_calls(_mixed_registry(), MIXED_CALLS[:3])

        results[name] = _run(main)

    threads = [threading.Thread(target=worker, args=(f"t{i}",)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    expected, _ = _under_trio()
    assert results == {"t0": expected[:3], "t1": expected[:3]}


def test_an_undeclared_asyncio_body_fails_as_a_result_not_a_crash() -> None:
    async def body(args: Any, ctx: ToolRunContext) -> str:
        await asyncio.sleep(0)  # asyncio code in a body not declared with asyncio_tool
        return "unreachable"  # pragma: no cover

    async def main() -> ToolExecutionResult:
        registry = ToolRegistry()
        registry.register(_definition("undeclared", body))
        result = await aio.execute(registry, ToolExecutionInput("u", "undeclared", {}))
        _assert_quiet()
        return result

    result = _run(main)
    assert result.is_error
    assert "asyncio" in result.content[0].text  # type: ignore[union-attr]


def test_several_readers_of_a_streaming_batch_share_its_results() -> None:
    async def main() -> list[list[str]]:
        async with aio.open_tool_batch(_mixed_registry(), max_parallel=1) as batch:

            async def read() -> list[str]:
                return [call.id async for call, _ in batch]

            readers = [asyncio.create_task(read()) for _ in range(2)]
            await asyncio.sleep(0)
            for call in MIXED_CALLS[:6]:
                batch.submit(call)
            batch.close()
            return [await reader for reader in readers]

    first, second = _run(main)
    assert sorted(first + second) == sorted(c.id for c in MIXED_CALLS[:6])


def test_a_crash_of_the_trio_host_is_reported_and_the_next_call_starts_afresh() -> None:
    reported: list[dict[str, Any]] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(lambda _, ctx: reported.append(ctx))
        running = asyncio.Event()

        async def slow(args: Any, ctx: ToolRunContext) -> str:
            running.set()
            await trio.sleep_forever()
            raise AssertionError("unreachable")  # pragma: no cover

        registry = ToolRegistry()
        registry.register(_definition("slow", slow))
        task = asyncio.create_task(aio.run_tool_calls(registry, [ToolCall("s", "slow", "{}")]))
        await running.wait()
        host = _hosts[loop]

        async def crash() -> None:
            raise LookupError("a bug in the service")

        assert host.nursery is not None
        host.nursery.start_soon(crash)  # simulates an internal failure of the guest run
        with pytest.raises(RuntimeError, match="the trio host run ended before this call"):
            await task
        assert loop not in _hosts  # retired at once: no new call goes to the dying run
        assert await aio.run_tool_calls(registry, [], driver="trio") == []
        assert host.finished.done()
        assert _hosts[loop] is not host

    asyncio.run(main())
    assert [ctx["message"] for ctx in reported] == ["toolnursery.aio: the trio host run failed"]
    assert isinstance(reported[0]["exception"], BaseExceptionGroup)
    assert not trio.lowlevel.in_trio_run()


def test_the_host_cannot_start_inside_a_trio_run() -> None:
    async def main() -> None:
        await aio.run_tool_calls(ToolRegistry(), [], driver="trio")

    async def inside_trio() -> None:
        with pytest.raises(RuntimeError, match="a trio run is already active in this thread"):
            asyncio.run(main())

    trio.run(inside_trio)


# -- the example --------------------------------------------------------------------------


def test_the_asyncio_example_runs() -> None:
    completed = subprocess.run(
        [sys.executable, "-W", "error", str(ROOT / "examples" / "asyncio_app.py")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    lines = completed.stdout.splitlines()
    assert lines[0].startswith("fetch_page ok: <html><title>toolnursery</title>")
    assert "word_count ok: 4" in lines
    assert any(line.startswith("fetch_page error: Error: ") for line in lines)
    assert lines[-1] == "cancelled: fetch_page cleaned up, ABORTED"
