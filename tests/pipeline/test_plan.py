"""The compiled plan per tool and view: one lookup, rebuilt on change, read by dispatch."""

from __future__ import annotations

import threading
from typing import Any

import pytest
import trio

from toolnursery import (
    RegistrationError,
    TextContent,
    ToolCall,
    ToolDefinition,
    ToolExecutionInput,
    ToolRegistry,
    ToolRunContext,
    define_tool,
    install_timeout_policy,
    run_tool_calls,
    tool,
)
from toolnursery._pipeline._dispatch import Route


async def ok(args: Any, ctx: ToolRunContext) -> str:
    return "ok"


async def other(args: Any, ctx: ToolRunContext) -> str:
    await trio.lowlevel.checkpoint()
    return "other"


def definition(body: Any = ok, name: str = "t", **kw: Any) -> ToolDefinition:
    return ToolDefinition(name, name, {"type": "object"}, body, **kw)


def test_a_plan_is_compiled_once_and_rebuilt_after_any_change() -> None:
    registry = ToolRegistry()
    registry.register(definition())
    first = registry._plan("t", None)
    assert registry._plan("t", None) is first  # one lookup, cached
    assert first.current() is first
    dispose = registry.on_pre_execute(lambda execution, next_: next_())  # type: ignore[arg-type,return-value]
    rebuilt = first.current()
    assert rebuilt is not first
    assert len(rebuilt.hooks.pre) == 1
    dispose()
    assert rebuilt.current().hooks.pre == ()


def test_a_scope_has_its_own_plans_and_restrictions_rebuild_them() -> None:
    registry = ToolRegistry()
    registry.register(definition())
    scope = registry.scope()
    assert scope._compiled.plans == {}
    assert registry._plan("t", scope).definition is not None
    scope.restrict(deny=["t"])
    assert registry._plan("t", scope).definition is None
    assert registry._plan("t", None).definition is not None


def test_unknown_names_are_not_cached() -> None:
    registry = ToolRegistry()
    for i in range(100):
        assert registry._plan(f"ghost{i}", None).definition is None
    assert registry._compiler.view(None).plans == {}


def test_the_plan_says_how_the_body_runs() -> None:
    def blocking(args: Any, ctx: ToolRunContext) -> str:
        return "ok"

    registry = ToolRegistry()
    registry.register(definition(ok, "no_await"))
    registry.register(definition(other, "awaits"))
    registry.register(definition(blocking, "thread"))
    registry.register(definition(blocking, "inline", nonblocking=True))
    registry.register(definition(other, "limited", max_concurrency=2))
    plans = {name: registry._plan(name, None) for name in registry._tools}
    routes = {name: (plan.route, plan.bare) for name, plan in plans.items()}
    assert routes == {
        "no_await": (Route.STEP, True),
        "awaits": (Route.AWAIT, True),
        "thread": (Route.THREAD, True),
        "inline": (Route.INLINE, True),
        "limited": (Route.AWAIT, False),
    }
    assert plans["limited"].limiter is not None
    assert registry._plan("ghost", None).route is Route.MISSING


def test_a_lone_timeout_policy_compiles_to_a_budget_not_a_wrapper() -> None:
    registry = ToolRegistry()
    registry.register(definition(other, timeout_ms=50))
    registry.register(definition(other, "free"))
    install_timeout_policy(registry)
    plan = registry._plan("t", None)
    assert plan.hooks.execute == ()
    assert plan.budget == 50
    assert registry._plan("free", None).budget is None
    registry.on_execute(lambda view, next_: next_())  # type: ignore[arg-type,return-value]
    plan = plan.current()
    assert plan.budget is None
    assert len(plan.hooks.execute) == 2  # the policy runs as a wrapper at its place


@pytest.mark.spec("B086")
async def test_dispatch_resolves_the_definition_current_when_it_starts() -> None:
    """B086/B149: a re-registration between prepare and dispatch is what runs."""
    registry = ToolRegistry()
    dispose = registry.register(definition(ok))

    async def swap(execution: Any, next_: Any) -> Any:
        dispose()
        registry.register(definition(other))
        return await next_()

    registry.on_pre_execute(swap)
    result = await registry.execute(ToolExecutionInput("c1", "t", {}))
    assert result.content == (TextContent("other"),)


async def test_a_nonblocking_sync_body_runs_inline_on_the_trio_thread() -> None:
    threads: dict[str, threading.Thread] = {}

    def body(args: Any, ctx: ToolRunContext) -> str:
        threads[ctx.call_id] = threading.current_thread()
        return "ok"

    registry = ToolRegistry()
    registry.register(definition(body, "inline", nonblocking=True, is_concurrency_safe=bool))
    registry.register(definition(body, "thread", is_concurrency_safe=bool))
    results = await run_tool_calls(
        registry, [ToolCall("a", "inline", "{}"), ToolCall("b", "thread", "{}")]
    )
    assert [r.content for r in results] == [(TextContent("ok"),)] * 2
    assert threads["a"] is threading.main_thread()
    assert threads["b"] is not threading.main_thread()
    await registry.execute(ToolExecutionInput("c", "inline", {}))
    assert threads["c"] is threading.main_thread()


def test_nonblocking_is_an_option_of_define_tool_and_tool() -> None:
    def add(x: int) -> str:
        return str(x + 1)

    defined = define_tool(
        name="add",
        description="add",
        parameters={"x": {"type": "number"}},
        execute=lambda args, ctx: str(args["x"] + 1),
        nonblocking=True,
    )
    decorated = tool(nonblocking=True)(add)
    assert defined.nonblocking
    assert decorated.nonblocking
    with pytest.raises(RegistrationError, match="nonblocking must be a bool"):
        ToolRegistry().register(definition(ok, nonblocking=1))  # type: ignore[arg-type]
