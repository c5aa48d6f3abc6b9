"""What an abort cancels when an execute wrapper stands around the body, on both drivers.

One ``execute()`` (``registry.execute`` on trio, ``aio.execute`` on asyncio): the abort
cancels only the body that a wrapper's ``next()`` reached, never a wrapper awaiting
outside ``next()``; a ``next()`` called after the abort returns it at once. A batch's
abort cancels the whole dispatch, wrappers included, on both drivers. The asyncio-only
tests pin the driver's bookkeeping of the task's cancellations: an abort's own is
taken back, an outside one always propagates.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from drivers import ASYNCIO, Driver, neutral
from toolnursery import (
    CancelSignal,
    TextContent,
    ToolCall,
    ToolDefinition,
    ToolExecutionInput,
    ToolExecutionResult,
    ToolRegistry,
    ToolRunContext,
)
from toolnursery import aio as tn_aio

CACHED = ToolExecutionResult((TextContent("cached"),), False)


def code(result: ToolExecutionResult) -> str | None:
    return None if result.error is None else result.error.code


def registry_of(body: Any) -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(ToolDefinition("echo", "test tool", {"type": "object"}, neutral(body)))
    return registry


async def ok(args: Any, ctx: ToolRunContext) -> str:
    return "ok"


@pytest.mark.spec("B121")
def test_a_next_called_after_the_abort_never_starts_the_body(driver: Driver) -> None:
    """The wrapper, waiting outside next() when the abort comes, goes on; its next()
    then returns ABORTED_BEFORE_DISPATCH without starting the body."""

    async def main() -> None:
        started: list[str] = []

        async def body(args: Any, ctx: ToolRunContext) -> str:
            started.append("body")
            return "ok"

        registry = registry_of(body)
        gate = driver.event()
        inner: list[str | None] = []

        async def wrap(view: Any, next_: Any) -> Any:
            await gate.wait()
            result = await next_()
            inner.append(code(result))
            return result

        registry.on_execute(wrap)
        signal = CancelSignal()
        results: list[ToolExecutionResult] = []

        async def run() -> None:
            results.append(
                await driver.execute(registry, ToolExecutionInput("c1", "echo", {}, signal))
            )

        async with driver.open_nursery() as nursery:
            nursery.start_soon(run)
            await driver.wait_all_tasks_blocked()
            signal.cancel()
            gate.set()
        assert inner == ["ABORTED_BEFORE_DISPATCH"]
        assert [code(r) for r in results] == ["ABORTED_BEFORE_DISPATCH"]
        assert started == []

    driver.run(main)


@pytest.mark.spec("B122")
def test_an_abort_during_the_body_reaches_the_wrapper_as_aborted(driver: Driver) -> None:
    """The abort cancels the body; its wrapper sees ABORTED from next() and goes on
    awaiting (its own await is not cancelled)."""

    async def main() -> None:
        async def body(args: Any, ctx: ToolRunContext) -> str:
            await driver.sleep_forever()
            return "never"

        registry = registry_of(body)
        seen: list[str] = []

        async def wrap(view: Any, next_: Any) -> Any:
            result = await next_()
            seen.append(str(code(result)))
            await driver.checkpoint()  # not cancelled: the abort was the body's
            await driver.sleep(1)
            seen.append("went on")
            return result

        registry.on_execute(wrap)
        signal = CancelSignal()
        results: list[ToolExecutionResult] = []

        async def run() -> None:
            results.append(
                await driver.execute(registry, ToolExecutionInput("c1", "echo", {}, signal))
            )

        async with driver.open_nursery() as nursery:
            nursery.start_soon(run)
            await driver.wait_all_tasks_blocked()
            signal.cancel()
        assert seen == ["ABORTED", "went on"]
        assert [code(r) for r in results] == ["ABORTED"]

    driver.run(main)


def test_a_body_that_fires_its_own_signal_is_cancelled_its_wrapper_not(driver: Driver) -> None:
    """A body that fires the call's signal itself and awaits on is cancelled there (on
    asyncio at its next suspension); the wrapper gets ABORTED and awaits on."""

    async def main() -> None:
        signal = CancelSignal()

        async def body(args: Any, ctx: ToolRunContext) -> str:
            signal.cancel("the body's own")
            await driver.sleep_forever()
            return "never"

        registry = registry_of(body)
        seen: list[str] = []

        async def wrap(view: Any, next_: Any) -> Any:
            result = await next_()
            await driver.sleep(1)  # not cancelled
            seen.append(str(code(result)))
            return result

        registry.on_execute(wrap)
        result = await driver.execute(registry, ToolExecutionInput("c1", "echo", {}, signal))
        assert (seen, code(result)) == (["ABORTED"], "ABORTED")

    driver.run(main, deadlock=50)


@pytest.mark.parametrize("size", [1, 2])
@pytest.mark.parametrize("after_next", [False, True], ids=["before-next", "after-next"])
def test_a_batch_abort_cancels_a_wrapper_outside_next(
    driver: Driver, size: int, after_next: bool
) -> None:
    """A batch's abort (a lone call's too) cancels the wrapper wherever it waits: the
    call is ABORTED if its body ran, else ABORTED_BEFORE_DISPATCH, on both drivers."""

    async def main() -> None:
        registry = registry_of(ok)
        gate = driver.event()
        seen: list[str] = []

        async def wrap(view: Any, next_: Any) -> Any:
            if after_next:
                await next_()
            try:
                await gate.wait()
            except driver.Cancelled:
                seen.append("cancelled")
                raise
            return CACHED

        registry.on_execute(wrap)
        signal = CancelSignal()
        out: list[list[ToolExecutionResult]] = []
        calls = [ToolCall(f"c{i}", "echo", "{}") for i in range(size)]

        async def run() -> None:
            out.append(await driver.run_tool_calls(registry, calls, signal=signal))

        async with driver.open_nursery() as nursery:
            nursery.start_soon(run)
            await driver.wait_all_tasks_blocked()
            signal.cancel()
            gate.set()
        assert seen == ["cancelled"]
        first = "ABORTED" if after_next else "ABORTED_BEFORE_DISPATCH"
        assert [code(r) for r in out[0]] == [first] + ["ABORTED_BEFORE_DISPATCH"] * (size - 1)

    driver.run(main)


# -- asyncio: the task's cancellations ------------------------------------------------


def test_an_aborted_body_leaves_no_cancellation_on_the_task() -> None:
    """The abort's cancellation of the body is taken back: after aio.execute returns,
    the awaiting task has no cancellation pending, and it awaits on."""

    async def main() -> None:
        async def body(args: Any, ctx: ToolRunContext) -> str:
            await asyncio.sleep(3600)
            return "never"

        registry = registry_of(body)

        async def wrap(view: Any, next_: Any) -> Any:
            return await next_()

        registry.on_execute(wrap)
        signal = CancelSignal()

        async def run() -> tuple[ToolExecutionResult, int]:
            result = await tn_aio.execute(registry, ToolExecutionInput("c1", "echo", {}, signal))
            task = asyncio.current_task()
            assert task is not None
            await asyncio.sleep(0)  # not cancelled
            return result, task.cancelling()

        task = asyncio.get_running_loop().create_task(run())
        await ASYNCIO.wait_all_tasks_blocked()
        signal.cancel()
        result, cancelling = await task
        assert (code(result), cancelling) == ("ABORTED", 0)

    ASYNCIO.run(main)


@pytest.mark.parametrize("where", ["outside-next", "in-the-body"])
def test_an_outside_cancellation_always_propagates(where: str) -> None:
    """Cancelling the awaiting task propagates from aio.execute, the wrapper seeing it,
    whether the wrapper waits outside next() or the body runs (and the call's abort
    fires in the same step)."""

    async def main() -> None:
        async def body(args: Any, ctx: ToolRunContext) -> str:
            await asyncio.sleep(3600)
            return "never"

        registry = registry_of(body)
        seen: list[str] = []

        async def wrap(view: Any, next_: Any) -> Any:
            try:
                if where == "in-the-body":
                    return await next_()
                await asyncio.sleep(3600)
                return CACHED
            except asyncio.CancelledError:
                seen.append("cancelled")
                raise

        registry.on_execute(wrap)
        signal = CancelSignal()
        call = ToolExecutionInput("c1", "echo", {}, signal)
        task = asyncio.get_running_loop().create_task(tn_aio.execute(registry, call))
        await ASYNCIO.wait_all_tasks_blocked()
        signal.cancel()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert seen == ["cancelled"]
        assert task.cancelled()

    ASYNCIO.run(main)
