"""A batch of one call from asyncio: run in the awaiting task, with no batch machine.

``toolnursery.aio.run_tool_calls`` runs a lone call (no recorder, no phase timings, no
deadline of its own) in the caller's task. These tests hold it to the contract of the
same call run by the asyncio driver's machine (a lone call with a recorder, which takes
the machine) and in the trio guest run: the same result, the same observers, the same
abort and cancellation behaviour.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import pytest

import toolnursery.aio as aio
from toolnursery import (
    CancelSignal,
    ToolCall,
    ToolDefinition,
    ToolExecution,
    ToolExecutionResult,
    ToolRegistry,
    ToolRunContext,
    install_timeout_policy,
)

T = TypeVar("T")
OBJECT: dict[str, Any] = {"type": "object", "properties": {"q": {"type": "string"}}}


class Recorder:
    """A recorder: its presence sends a lone call through the driver's machine."""

    def __init__(self) -> None:
        self.events: list[Any] = []

    def record(self, event: Any, /) -> None:
        self.events.append(event)


@pytest.fixture(params=["lone", "machine", "trio"])
def path(request: pytest.FixtureRequest) -> str:
    """How the one-call batch runs: in the caller's task, on the asyncio driver's
    machine, or in the trio guest run."""
    return str(request.param)


def _batch(path: str, registry: ToolRegistry, call: ToolCall, **kwargs: Any) -> Any:
    if path == "machine":
        kwargs["recorder"] = Recorder()
    driver: aio.Driver = "trio" if path == "trio" else "asyncio"
    return aio.run_tool_calls(registry, [call], driver=driver, **kwargs)


def _run(main: Callable[[], Coroutine[Any, Any, T]]) -> T:
    async def guarded() -> T:
        reported: list[Any] = []
        asyncio.get_running_loop().set_exception_handler(lambda _, ctx: reported.append(ctx))
        try:
            return await main()
        finally:
            assert reported == []

    return asyncio.run(guarded())


def _registry(body: Any, seen: list[str], *, classified: list[Any] | None = None) -> ToolRegistry:
    def safe(args: Any) -> bool:
        if classified is not None:
            classified.append(args)
        return True

    registry = ToolRegistry()
    registry.register(
        ToolDefinition("echo", "echoes", OBJECT, aio.asyncio_tool(body), is_concurrency_safe=safe)
    )

    def observe(execution: ToolExecution, result: ToolExecutionResult) -> None:
        seen.append(f"{execution.call_id}:{_code(result)}")

    registry.on_result(observe)
    return registry


def _code(result: ToolExecutionResult) -> str:
    error = result.error
    return result.text if error is None else str(error.code or error.name)


async def echo(args: Any, ctx: ToolRunContext[Any]) -> str:
    await asyncio.sleep(0)
    return f"echo {args['q']} in {ctx.batch_id is not None}"


@pytest.mark.timeout(30)
def test_a_lone_call_gives_the_result_and_observers_of_the_machine(path: str) -> None:
    seen: list[str] = []
    classified: list[Any] = []
    registry = _registry(echo, seen, classified=classified)

    async def main() -> list[ToolExecutionResult]:
        result: list[ToolExecutionResult] = await _batch(
            path, registry, ToolCall("c0", "echo", '{"q": "x"}')
        )
        return result

    results = _run(main)
    assert [_code(r) for r in results] == ["echo x in True"]
    assert seen == ["c0:echo x in True"]
    assert len(classified) == 1  # the classifier is asked once, as for any batch call
    stats = registry.statistics()
    assert (stats.started, stats.committed, stats.results_by_code) == (1, 1, {"ok": 1})


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("arguments", "name", "code", "observed"),
    [
        ('{"q": ', "echo", "INVALID_ARGS", []),  # cut off: never reaches the registry
        ('{"q": 3}', "echo", "INVALID_ARGS", ["c0:INVALID_ARGS"]),  # the schema refuses it
        ('{"q": "x"}', "nope", "UNKNOWN_TOOL", ["c0:UNKNOWN_TOOL"]),
    ],
)
def test_a_lone_call_that_cannot_run_fails_as_in_the_machine(
    path: str, arguments: str, name: str, code: str, observed: list[str]
) -> None:
    seen: list[str] = []
    registry = _registry(echo, seen)

    async def main() -> list[ToolExecutionResult]:
        result: list[ToolExecutionResult] = await _batch(
            path, registry, ToolCall("c0", name, arguments)
        )
        return result

    results = _run(main)
    assert [_code(r) for r in results] == [code]
    assert seen == observed


@pytest.mark.timeout(30)
def test_a_lone_call_under_a_fired_signal_never_reaches_the_registry(path: str) -> None:
    seen: list[str] = []
    registry = _registry(echo, seen)
    signal = CancelSignal()
    signal.cancel("before")

    async def main() -> list[ToolExecutionResult]:
        result: list[ToolExecutionResult] = await _batch(
            path, registry, ToolCall("c0", "echo", '{"q": "x"}'), signal=signal
        )
        return result

    assert [_code(r) for r in _run(main)] == ["ABORTED_BEFORE_DISPATCH"]
    assert seen == []
    assert registry.statistics().started == 0


@pytest.mark.timeout(30)
def test_a_lone_body_aborting_its_own_batch_is_aborted_without_a_stray_cancellation(
    path: str,
) -> None:
    seen: list[str] = []
    signal = CancelSignal()

    async def aborts(args: Any, ctx: ToolRunContext[Any]) -> str:
        signal.cancel("enough")
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        return "not reached"

    registry = _registry(aborts, seen)

    async def main() -> tuple[list[ToolExecutionResult], int]:
        results: list[ToolExecutionResult] = await _batch(
            path, registry, ToolCall("c0", "echo", '{"q": "x"}'), signal=signal
        )
        task = asyncio.current_task()
        assert task is not None
        await asyncio.sleep(0)  # a stray cancellation would land here
        return results, task.cancelling()

    results, cancelling = _run(main)
    assert [_code(r) for r in results] == ["ABORTED"]
    assert seen == ["c0:ABORTED"]
    assert cancelling == 0


@pytest.mark.timeout(30)
def test_a_lone_call_under_an_outer_timeout_commits_then_raises_timeout(path: str) -> None:
    seen: list[str] = []
    started = asyncio.Event()

    async def slow(args: Any, ctx: ToolRunContext[Any]) -> str:
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            seen.append("cleanup")
        return "never"

    registry = _registry(slow, seen)

    async def main() -> int:
        task = asyncio.current_task()
        assert task is not None
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.05):
                await _batch(path, registry, ToolCall("c0", "echo", '{"q": "x"}'))
        return task.cancelling()

    assert _run(main) == 0  # the timeout's cancellation taken back: nothing swallowed
    assert seen == ["cleanup", "c0:ABORTED"]  # the body unwound, then the observer ran
    stats = registry.statistics()
    assert (stats.started, stats.committed, stats.abandoned) == (1, 1, 0)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("native", ["lone", "machine"])  # the post-execute awaits asyncio
def test_a_lone_call_cancelled_twice_still_finishes_its_commit(native: str) -> None:
    path = native
    seen: list[str] = []
    entered = asyncio.Event()

    async def slow(args: Any, ctx: ToolRunContext[Any]) -> str:
        entered.set()
        await asyncio.Event().wait()
        return "never"

    registry = _registry(slow, seen)
    registry.hook_abort_grace = 30.0  # the post-execute may finish after the abort
    release = asyncio.Event

    async def main() -> None:
        gate = release()

        async def post(execution: Any, result: Any, next_: Any) -> Any:
            await gate.wait()  # the commit suspends: a second cancel must not cut it
            return await next_()

        registry.on_post_execute(post)
        task = asyncio.ensure_future(_batch(path, registry, ToolCall("c0", "echo", "{}")))
        await entered.wait()
        task.cancel()
        for _ in range(5):
            await asyncio.sleep(0)
        task.cancel()
        for _ in range(5):
            await asyncio.sleep(0)
        assert not task.done()
        gate.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert asyncio.all_tasks() == {asyncio.current_task()}

    _run(main)
    assert seen == ["c0:ABORTED"]


@pytest.mark.timeout(30)
def test_a_lone_call_with_a_deadline_of_its_own_times_out(path: str) -> None:
    seen: list[str] = []

    async def slow(args: Any, ctx: ToolRunContext[Any]) -> str:
        await asyncio.Event().wait()
        return "never"

    registry = ToolRegistry()
    registry.register(
        ToolDefinition(
            "echo",
            "echoes",
            OBJECT,
            aio.asyncio_tool(slow),
            timeout_ms=20,
            is_concurrency_safe=None,
        )
    )
    install_timeout_policy(registry)
    registry.on_result(lambda execution, result: seen.append(_code(result)))

    async def main() -> list[ToolExecutionResult]:
        result: list[ToolExecutionResult] = await _batch(
            path, registry, ToolCall("c0", "echo", "{}")
        )
        return result

    assert [_code(r) for r in _run(main)] == ["TOOL_TIMEOUT"]
    assert seen == ["TOOL_TIMEOUT"]


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("native", "expected"),
    [
        # The body runs in the awaiting task: asyncio delivers each cancel() of that task
        # to whatever it awaits, the body's cleanup included (the documented difference).
        ("lone", ["cleanup cut", "ABORTED", "raised"]),
        # On the trio guest run the body is a task of its own: the cleanup finishes.
        ("trio", ["cleaned up", "ABORTED", "raised"]),
    ],
)
def test_a_second_cancellation_reaches_a_lone_bodys_cleanup_only_in_the_awaiting_task(
    native: str, expected: list[str]
) -> None:
    events: list[str] = []

    async def main() -> None:
        entered, cleaning, release = asyncio.Event(), asyncio.Event(), asyncio.Event()

        async def slow(args: Any, ctx: ToolRunContext[Any]) -> str:
            entered.set()
            try:
                await asyncio.Event().wait()
            finally:
                cleaning.set()
                try:
                    await release.wait()
                    events.append("cleaned up")
                except asyncio.CancelledError:
                    events.append("cleanup cut")
                    raise
            return "never"  # pragma: no cover

        seen: list[str] = []
        registry = _registry(slow, seen)
        task = asyncio.ensure_future(_batch(native, registry, ToolCall("c0", "echo", "{}")))
        await entered.wait()
        task.cancel()
        await cleaning.wait()
        task.cancel()
        await asyncio.sleep(0)
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        events.extend(s.split(":")[1] for s in seen)
        events.append("raised")
        assert asyncio.all_tasks() == {asyncio.current_task()}

    _run(main)
    assert events == expected
