"""The record of one call: one object, the run context itself, lazy where it can be."""

from __future__ import annotations

from typing import Any

import trio

from support import always
from toolnursery import (
    CancelSignal,
    HookContext,
    TextContent,
    ToolCall,
    ToolDefinition,
    ToolExecution,
    ToolExecutionInput,
    ToolExecutionToken,
    ToolRegistry,
    ToolRunContext,
    run_tool_calls,
)
from toolnursery._pipeline._call import CallRecord


async def test_the_body_gets_the_record_with_nothing_made_it_does_not_ask_for() -> None:
    seen: list[tuple[Any, ...]] = []

    async def body(args: Any, ctx: ToolRunContext) -> str:
        assert isinstance(ctx, CallRecord)
        seen.append((ctx._execution, ctx._deferred))  # not made yet
        token = ctx.token  # asking makes the execution (and its token)
        assert isinstance(ctx.execution, ToolExecution)
        assert ctx.execution.token is token
        seen.append((ctx.execution.call_id, ctx.name, dict(ctx.arguments)))
        return "ok"

    registry = ToolRegistry()
    registry.register(ToolDefinition("t", "t", {}, body, is_concurrency_safe=always))
    await run_tool_calls(registry, [ToolCall("c1", "t", '{"a": 1}')])
    assert seen == [(None, None), ("c1", "t", {"a": 1})]


async def test_hooks_and_the_body_see_one_execution() -> None:
    executions: list[ToolExecution] = []

    async def body(args: Any, ctx: ToolRunContext) -> str:
        executions.append(ctx.execution)
        ctx.defer_context(HookContext((TextContent("later"),), "body"))
        return "ok"

    registry = ToolRegistry()
    registry.register(ToolDefinition("t", "t", {}, body))
    registry.on_result(lambda execution, result: executions.append(execution))
    result = await registry.execute(ToolExecutionInput("c1", "t", {}))
    first, second = executions
    assert first is second
    assert result.additional_contexts == (HookContext((TextContent("later"),), "body"),)


def test_a_hand_made_run_context_has_no_batch_and_keys_by_call_id() -> None:
    signal = CancelSignal()
    execution = ToolExecution("c7", "t", {}, signal, None, None, ToolExecutionToken())
    ctx = ToolRunContext(execution, signal, [])
    assert ctx.batch_id is None
    assert ctx.idempotency_key == "c7"


async def test_a_retry_attempt_gets_a_fresh_context_over_the_same_record() -> None:
    from toolnursery import ToolError, install_retry_policy

    contexts: list[ToolRunContext] = []

    async def body(args: Any, ctx: ToolRunContext) -> str:
        contexts.append(ctx)
        await trio.lowlevel.checkpoint()
        if len(contexts) < 2:
            raise ToolError("flaky", code="FLAKY")
        return "ok"

    registry = ToolRegistry()
    registry.register(ToolDefinition("t", "t", {}, body, idempotent=True))
    install_retry_policy(registry, codes=["FLAKY"], backoff_ms=0)
    await registry.execute(ToolExecutionInput("c1", "t", {}))
    first, second = contexts
    assert first is not second
    assert first.token is second.token
    assert second.idempotency_key == "c1"
