"""Pass-through hooks on both drivers: the stages' fast paths keep the contract.

A pre-execute or post-execute listener that only calls ``next()``, a guard that returns
``None`` and an observer that returns ``None`` change nothing; the stages run a single
listener without a queue and take the waterfall's own ``Accept`` without applying it.
These tests hold those paths to the rules the general path keeps: the cancellation rule
after a pass-through post-execute, a denial passing through it unchanged, and a hook
registered during one phase joining the next phases of the same call.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from drivers import Driver
from toolnursery import (
    HookContext,
    TextContent,
    ToolCall,
    ToolDefinition,
    ToolExecution,
    ToolExecutionInput,
    ToolExecutionResult,
    ToolRegistry,
    ToolReturn,
    ToolRunContext,
)

ABORTED_WIRE = {
    "content": [{"type": "text", "text": "Error: tool call aborted"}],
    "isError": True,
    "error": {"name": "AbortError", "code": "ABORTED"},
}


async def passthrough_pre(execution: ToolExecution, next_: Any) -> Any:
    return await next_()


async def passthrough_post(execution: ToolExecution, result: Any, next_: Any) -> Any:
    return await next_()


def wire(result: ToolExecutionResult) -> Any:
    data = msgspec.json.decode(msgspec.json.encode(result))
    data.pop("additionalContexts", None)
    return data


def labels(result: ToolExecutionResult) -> list[str]:
    return [c.content[0].text for c in result.additional_contexts]  # type: ignore[union-attr]


@pytest.mark.spec("B126")
@pytest.mark.parametrize("listeners", [1, 2])
def test_a_success_aborted_in_a_passthrough_post_execute_is_aborted(
    driver: Driver, listeners: int
) -> None:
    """B126: a success whose caller is aborted during post-execute, by a listener that
    then only calls ``next()`` (alone: no queue; with a pass-through after it: the
    queue), becomes ABORTED with its deferred contexts and no meta; the observer sees
    that result."""

    async def main() -> None:
        registry = ToolRegistry()

        async def body(args: Any, ctx: ToolRunContext) -> Any:
            ctx.defer_context(HookContext((TextContent("deferred"),), "test"))
            return ToolReturn([TextContent("ok")], meta={"k": 1})

        async def abort_then_next(execution: ToolExecution, result: Any, next_: Any) -> Any:
            execution.signal.cancel("the caller aborts during post-execute")
            return await next_()

        seen: list[ToolExecutionResult] = []
        registry.register(
            ToolDefinition("echo", "test tool", {"type": "object"}, driver.tool(body))
        )
        registry.on_post_execute(abort_then_next)
        if listeners == 2:
            registry.on_post_execute(passthrough_post)
        registry.on_result(lambda execution, result: seen.append(result))
        result = await driver.execute(registry, ToolExecutionInput("c1", "echo", {}))
        assert wire(result) == ABORTED_WIRE
        assert result.meta is None
        assert labels(result) == ["deferred"]
        assert seen == [result]

    driver.run(main)


@pytest.mark.spec("B056")
def test_a_guard_denial_passes_a_passthrough_post_execute_unchanged(driver: Driver) -> None:
    """B056: the denial reaches post-execute, which accepts it as it is (still an error),
    then the observer; the body never runs."""

    async def main() -> None:
        registry = ToolRegistry()
        ran: list[str] = []

        async def body(args: Any, ctx: ToolRunContext) -> str:
            ran.append("body")
            return "ok"

        posted: list[bool] = []

        async def post(execution: ToolExecution, result: Any, next_: Any) -> Any:
            posted.append(result.is_error)
            return await next_()

        seen: list[ToolExecutionResult] = []
        registry.register(
            ToolDefinition("echo", "test tool", {"type": "object"}, driver.tool(body))
        )
        registry.on_pre_execute(passthrough_pre)
        registry.guard(lambda execution: "not today")
        registry.on_post_execute(post)
        registry.on_result(lambda execution, result: seen.append(result))
        result = await driver.execute(registry, ToolExecutionInput("c1", "echo", {}))
        assert wire(result) == {
            "content": [{"type": "text", "text": "Error: not today"}],
            "isError": True,
        }
        assert ran == []
        assert posted == [True]
        assert seen == [result]

    driver.run(main)


@pytest.mark.spec("B058")
def test_hooks_registered_in_a_phase_join_the_later_phases_of_the_same_call(
    driver: Driver,
) -> None:
    """B058: a guard registered by the (single) pre-execute listener runs for the same
    call; an observer registered by the (single) post-execute listener sees it."""

    async def main() -> None:
        registry = ToolRegistry()
        order: list[str] = []

        async def body(args: Any, ctx: ToolRunContext) -> str:
            order.append("body")
            return "ok"

        def guard(execution: ToolExecution) -> None:
            order.append("guard")

        def observe(execution: ToolExecution, result: ToolExecutionResult) -> None:
            order.append("observer")

        async def pre(execution: ToolExecution, next_: Any) -> Any:
            if not order:
                registry.guard(guard)
            order.append("pre")
            return await next_()

        async def post(execution: ToolExecution, result: Any, next_: Any) -> Any:
            if "post" not in order:
                registry.on_result(observe)
            order.append("post")
            return await next_()

        registry.register(
            ToolDefinition("echo", "test tool", {"type": "object"}, driver.tool(body))
        )
        registry.on_pre_execute(pre)
        registry.on_post_execute(post)
        result = await driver.execute(registry, ToolExecutionInput("c1", "echo", {}))
        assert not result.is_error
        assert order == ["pre", "guard", "body", "post", "observer"]

    driver.run(main)


class Seen:
    """An observer that notes each call id it sees."""

    def __init__(self, into: list[str]) -> None:
        self.into = into

    def __call__(self, execution: ToolExecution, result: ToolExecutionResult) -> None:
        self.into.append(execution.call_id)


@pytest.mark.spec("B058")
def test_a_batch_with_five_passthrough_hooks_gives_the_results_of_none(driver: Driver) -> None:
    """B058: a pass-through listener in every phase (the benchmarks' five) leaves each
    result of a concurrent batch as it is without hooks, in model order."""

    async def main() -> list[list[Any]]:
        async def body(args: Any, ctx: ToolRunContext) -> Any:
            await driver.checkpoint()
            return ToolReturn([TextContent(args["q"])], meta={"q": args["q"]})

        out = []
        for hooks in (False, True):
            registry = ToolRegistry()
            registry.register(
                ToolDefinition(
                    "echo",
                    "test tool",
                    {"type": "object"},
                    driver.tool(body),
                    is_concurrency_safe=lambda args: True,
                )
            )
            observed: list[str] = []
            if hooks:
                registry.on_pre_execute(passthrough_pre)
                registry.guard(lambda execution: None)
                registry.on_execute(lambda view, next_: next_())
                registry.on_post_execute(passthrough_post)
                registry.on_result(Seen(observed))
            calls = [ToolCall(f"c{i}", "echo", json.dumps({"q": str(i)})) for i in range(6)]
            results = await driver.run_tool_calls(registry, calls, max_parallel=6)
            out.append([msgspec.json.encode(r) for r in results])
            if hooks:
                assert sorted(observed) == [f"c{i}" for i in range(6)]
        return out

    plain, hooked = driver.run(main)
    assert hooked == plain
    assert len(plain) == 6
