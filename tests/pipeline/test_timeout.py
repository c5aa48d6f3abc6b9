"""The timeout policy (reference B164–B172) on trio's autojump clock."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from toolnursery import (
    CancelSignal,
    HookContext,
    RegistrationError,
    TextContent,
    ToolDefinition,
    ToolError,
    ToolErrorInfo,
    ToolExecutionInput,
    ToolExecutionResult,
    ToolRegistry,
    ToolRunContext,
)
from toolnursery._pipeline._timeout import install_timeout_policy

TIMEOUT = ToolExecutionResult(
    (TextContent("Error: tool call timed out after 100ms"),),
    True,
    ToolErrorInfo("ToolTimeoutError", "TOOL_TIMEOUT"),
)


def _tool(name: str, body: Any, timeout_ms: float | None = 100) -> ToolDefinition:
    return ToolDefinition(name, "t", {"type": "object"}, body, timeout_ms=timeout_ms)


@pytest.mark.spec("B165")
async def test_unbudgeted_tool_sees_the_caller_signal() -> None:
    seen: list[CancelSignal] = []

    async def body(args: Any, ctx: ToolRunContext) -> str:
        seen.append(ctx.signal)
        return "ok"

    registry = ToolRegistry()
    registry.register(_tool("free", body, timeout_ms=None))
    install_timeout_policy(registry)
    signal = CancelSignal()
    result = await registry.execute(ToolExecutionInput("c1", "free", {}, signal))
    assert result.content == (TextContent("ok"),)
    assert seen == [signal]
    assert seen[0] is signal


@pytest.mark.spec("B166")
async def test_fast_budgeted_tool_keeps_its_result_and_sees_a_derived_signal() -> None:
    seen: list[CancelSignal] = []

    async def body(args: Any, ctx: ToolRunContext) -> str:
        seen.append(ctx.signal)
        return "ok"

    registry = ToolRegistry()
    registry.register(_tool("fast", body))
    install_timeout_policy(registry)
    signal = CancelSignal()
    result = await registry.execute(ToolExecutionInput("c1", "fast", {}, signal))
    assert result == ToolExecutionResult((TextContent("ok"),), False)
    assert seen[0] is not signal


@pytest.mark.spec("B167")
async def test_post_execute_sees_the_caller_signal_again() -> None:
    async def body(args: Any, ctx: ToolRunContext) -> str:
        return "ok"

    registry = ToolRegistry()
    registry.register(_tool("fast", body))
    install_timeout_policy(registry)
    seen: list[CancelSignal] = []

    async def post(execution: Any, result: Any, next: Any) -> Any:
        seen.append(execution.signal)
        return await next()

    registry.on_post_execute(post)
    signal = CancelSignal()
    await registry.execute(ToolExecutionInput("c1", "fast", {}, signal))
    assert seen == [signal]


@pytest.mark.spec("B168")
@pytest.mark.parametrize("outcome", ["success", "own-error"])
async def test_own_deadline_replaces_whatever_the_body_returned(
    autojump_clock: trio.testing.MockClock, outcome: str
) -> None:
    async def body(args: Any, ctx: ToolRunContext) -> str:
        try:
            await trio.sleep(10)
        except trio.Cancelled:
            if outcome == "own-error":
                raise ToolError("web aborted", code="WEB_ABORTED") from None
            raise
        return "late"

    registry = ToolRegistry()
    registry.register(_tool("slow", body))
    install_timeout_policy(registry)
    start = trio.current_time()
    result = await registry.execute(ToolExecutionInput("c1", "slow", {}))
    assert result == TIMEOUT
    assert trio.current_time() - start == pytest.approx(0.1)


@pytest.mark.spec("B168")
async def test_cooperative_body_polling_the_signal_times_out(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def body(args: Any, ctx: ToolRunContext) -> str:
        with trio.CancelScope(shield=True):
            while not ctx.signal.cancelled:
                await trio.sleep(0.01)
        return "stopped cooperatively"

    registry = ToolRegistry()
    registry.register(_tool("coop", body))
    install_timeout_policy(registry)
    assert await registry.execute(ToolExecutionInput("c1", "coop", {})) == TIMEOUT


@pytest.mark.spec("B169")
async def test_caller_abort_first_keeps_aborted(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def body(args: Any, ctx: ToolRunContext) -> str:
        await trio.sleep(10)
        return "late"

    registry = ToolRegistry()
    registry.register(_tool("slow", body))
    install_timeout_policy(registry)
    signal = CancelSignal()
    results: list[ToolExecutionResult] = []
    async with trio.open_nursery() as nursery:

        async def run() -> None:
            results.append(await registry.execute(ToolExecutionInput("c1", "slow", {}, signal)))

        nursery.start_soon(run)
        await trio.sleep(0.05)
        signal.cancel("user stop")
    assert results[0].error == ToolErrorInfo("AbortError", "ABORTED")
    assert results[0].content == (TextContent("Error: tool call aborted"),)


@pytest.mark.spec("B170")
async def test_deadline_first_then_caller_abort_keeps_timeout(
    autojump_clock: trio.testing.MockClock,
) -> None:
    signal = CancelSignal()

    async def body(args: Any, ctx: ToolRunContext) -> str:
        try:
            await trio.sleep(10)
        finally:
            with trio.CancelScope(shield=True):
                await trio.sleep(0.5)  # cleaning up while the caller aborts
        return "late"

    registry = ToolRegistry()
    registry.register(_tool("slow", body))
    install_timeout_policy(registry)
    results: list[ToolExecutionResult] = []
    async with trio.open_nursery() as nursery:

        async def run() -> None:
            results.append(await registry.execute(ToolExecutionInput("c1", "slow", {}, signal)))

        nursery.start_soon(run)
        await trio.sleep(0.3)
        signal.cancel("late caller abort")
    assert results == [TIMEOUT]


@pytest.mark.spec("B171")
async def test_uninstalling_restores_the_caller_signal() -> None:
    seen: list[CancelSignal] = []

    async def body(args: Any, ctx: ToolRunContext) -> str:
        seen.append(ctx.signal)
        return "ok"

    registry = ToolRegistry()
    registry.register(_tool("fast", body))
    dispose = install_timeout_policy(registry)
    dispose()
    signal = CancelSignal()
    await registry.execute(ToolExecutionInput("c1", "fast", {}, signal))
    assert seen[0] is signal


@pytest.mark.spec("B172")
async def test_deferred_contexts_ride_the_timeout_result(
    autojump_clock: trio.testing.MockClock,
) -> None:
    context = HookContext((TextContent("nested"),), "composite")

    async def body(args: Any, ctx: ToolRunContext) -> str:
        ctx.defer_context(context)
        await trio.sleep(10)
        return "late"

    registry = ToolRegistry()
    registry.register(_tool("slow", body))
    install_timeout_policy(registry)
    result = await registry.execute(ToolExecutionInput("c1", "slow", {}))
    assert result.error == ToolErrorInfo("ToolTimeoutError", "TOOL_TIMEOUT")
    assert result.additional_contexts == (context,)


@pytest.mark.spec("B172")
async def test_invisible_tool_gets_no_deadline_and_unknown_stays_unknown() -> None:
    registry = ToolRegistry()
    install_timeout_policy(registry, default_timeout_ms=50)
    result = await registry.execute(ToolExecutionInput("c1", "ghost", {}))
    assert result.error == ToolErrorInfo("ToolNotFoundError", "UNKNOWN_TOOL")


async def test_default_budget_applies_to_tools_without_one(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def body(args: Any, ctx: ToolRunContext) -> str:
        await trio.sleep(10)
        return "late"

    registry = ToolRegistry()
    registry.register(_tool("slow", body, timeout_ms=None))
    install_timeout_policy(registry, default_timeout_ms=250)
    result = await registry.execute(ToolExecutionInput("c1", "slow", {}))
    assert result.content == (TextContent("Error: tool call timed out after 250ms"),)


async def test_thread_body_polls_the_deadline_signal(
    autojump_clock: trio.testing.MockClock,
) -> None:
    def body(args: Any, ctx: ToolRunContext) -> str:
        # A sync body runs in a worker thread; it sees the deadline through its signal.
        import time

        deadline = time.monotonic() + 5
        while not ctx.signal.cancelled and time.monotonic() < deadline:
            time.sleep(0.001)
        return "stopped" if ctx.signal.cancelled else "ran out"

    registry = ToolRegistry()
    registry.register(_tool("sync", body, timeout_ms=1))
    install_timeout_policy(registry)
    result = await registry.execute(ToolExecutionInput("c1", "sync", {}))
    assert result.content == (TextContent("Error: tool call timed out after 1ms"),)


async def test_a_raising_inner_wrapper_keeps_its_own_error_unwrapped() -> None:
    async def body(args: Any, ctx: ToolRunContext) -> str:
        return "ok"

    registry = ToolRegistry()
    registry.register(_tool("fast", body))
    install_timeout_policy(registry)

    async def broken(execution: Any, next: Any) -> Any:
        raise ToolError("wrapper failed", code="WRAPPER_FAILURE")

    registry.on_execute(broken)
    result = await registry.execute(ToolExecutionInput("c1", "fast", {}))
    assert result.content == (TextContent("Error: wrapper failed"),)
    assert result.error == ToolErrorInfo("ToolError", "WRAPPER_FAILURE")


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), 366 * 24 * 3600 * 1000, True])
def test_bad_default_budget_is_refused(bad: float) -> None:
    with pytest.raises(RegistrationError):
        install_timeout_policy(ToolRegistry(), default_timeout_ms=bad)


@pytest.mark.spec("B006")
@pytest.mark.parametrize("bad", [0, -5, float("nan"), float("inf"), 366 * 24 * 3600 * 1000])
def test_bad_tool_budget_is_refused_at_registration(bad: float) -> None:
    async def body(args: Any, ctx: ToolRunContext) -> str:
        return "ok"

    with pytest.raises(RegistrationError, match='tool "t" timeout_ms must be'):
        ToolRegistry().register(_tool("t", body, timeout_ms=bad))
