"""The views of one call: the frozen execution, the dispatch and body views, the input.

Reference behaviours B053 and B054, plus the views' programmer-error checks.
"""

from __future__ import annotations

from typing import Any

import pytest

from support import OK, Trace, call, tool
from toolnursery import (
    CancelSignal,
    ToolDispatchExecution,
    ToolExecution,
    ToolExecutionInput,
    ToolExecutionToken,
    ToolRegistry,
    ToolRunContext,
)


@pytest.mark.spec("B053")
async def test_observers_see_a_frozen_execution_with_the_callers_signal() -> None:
    """B053: the execution is frozen, its arguments deep-frozen, its signal the caller's."""
    registry = ToolRegistry()
    registry.register(tool())
    trace = Trace(registry)
    signal = CancelSignal()
    await registry.execute(call(arguments={"a": [1, {"b": 2}]}, signal=signal))
    execution = trace.executions[-1]
    assert execution.signal is signal
    with pytest.raises(AttributeError):
        execution.name = "other"
    with pytest.raises(TypeError):
        execution.arguments["a"] = 1
    with pytest.raises(TypeError):
        execution.arguments["a"][1]["b"] = 3


@pytest.mark.spec("B054")
async def test_signal_is_read_only_except_on_the_dispatch_view() -> None:
    """B054: execution and body views cannot rebind signal; the wrapper view cannot remove it."""
    registry = ToolRegistry()
    replacement = CancelSignal()
    failures: list[str] = []

    async def pre(execution: ToolExecution, next_: Any) -> Any:
        with pytest.raises(AttributeError):
            execution.signal = CancelSignal()  # type: ignore[misc]
        failures.append("pre")
        return await next_()

    async def wrap(view: ToolDispatchExecution, next_: Any) -> Any:
        with pytest.raises(TypeError):
            view.signal = None  # type: ignore[assignment]
        with pytest.raises(AttributeError):
            del view.signal
        view.signal = replacement
        assert view.signal is replacement
        failures.append("wrap")
        return await next_()

    async def body(args: Any, ctx: ToolRunContext) -> str:
        with pytest.raises(AttributeError):
            ctx.signal = CancelSignal()  # type: ignore[misc]
        failures.append("body")
        return "ok"

    registry.register(tool(body=body))
    registry.on_pre_execute(pre)
    registry.on_execute(wrap)
    result = await registry.execute(call())
    assert result == OK
    assert failures == ["pre", "wrap", "body"]


def test_defer_context_takes_only_hook_contexts() -> None:
    """defer_context rejects anything but a HookContext at the call site."""
    ctx = ToolRunContext(
        ToolExecution("c", "n", {}, CancelSignal(), None, None, ToolExecutionToken()),
        CancelSignal(),
        [],
    )
    with pytest.raises(TypeError):
        ctx.defer_context({"content": []})  # type: ignore[arg-type]


async def test_views_expose_the_execution_fields() -> None:
    """ToolRunContext and ToolDispatchExecution mirror the execution read-only."""
    registry = ToolRegistry()
    scope = registry.scope()
    parent = ToolExecutionToken()
    seen: dict[str, Any] = {}

    async def body(args: Any, ctx: ToolRunContext) -> str:
        seen["ctx"] = (ctx.call_id, ctx.name, ctx.arguments, ctx.agent, ctx.parent, ctx.token)
        return "ok"

    async def wrap(view: ToolDispatchExecution, next_: Any) -> Any:
        seen["view"] = (
            view.call_id,
            view.name,
            view.arguments,
            view.agent,
            view.parent,
            view.token,
        )
        return await next_()

    registry.register(tool(body=body))
    registry.on_execute(wrap)
    trace = Trace(registry)
    await registry.execute(call(arguments={"a": 1}, agent=scope, parent=parent))
    execution = trace.executions[0]
    expected = ("c1", "echo", {"a": 1}, scope, parent, execution.token)
    assert seen["ctx"] == expected
    assert seen["view"] == expected
    assert repr(execution.token).startswith("<ToolExecutionToken 0x")


async def test_input_signal_must_be_a_cancel_signal() -> None:
    """A ToolExecutionInput whose signal is not a CancelSignal is a programmer error."""
    registry = ToolRegistry()
    registry.register(tool())
    with pytest.raises(TypeError, match="must be a CancelSignal"):
        await registry.execute(ToolExecutionInput("c1", "echo", {}, None))  # type: ignore[arg-type]


async def test_the_context_is_generic_in_its_deps_and_carries_them() -> None:
    """``ToolRunContext[D]`` subscripts at run time; bodies see the run's deps or None."""
    assert ToolRunContext[dict[str, int]].__origin__ is ToolRunContext  # type: ignore[attr-defined]
    execution = ToolExecution("c", "n", {}, CancelSignal(), None, None, ToolExecutionToken())
    assert ToolRunContext(execution, CancelSignal(), []).deps is None
    assert ToolRunContext(execution, CancelSignal(), [], {"db": 1}).deps == {"db": 1}
    seen: list[Any] = []

    async def body(args: Any, ctx: ToolRunContext[dict[str, int]]) -> str:
        seen.append(ctx.deps)
        return "ok"

    registry = ToolRegistry()
    registry.register(tool(body=body))
    await registry.execute(call(), deps={"db": 2})
    await registry.execute(call())
    assert seen == [{"db": 2}, None]
