"""The record of one call: one object, the run context itself, lazy where it can be."""

from __future__ import annotations

from typing import Any

import pytest
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


async def test_the_body_gets_a_context_of_its_own_and_nothing_made_it_does_not_ask_for() -> None:
    seen: list[tuple[Any, ...]] = []

    async def body(args: Any, ctx: ToolRunContext) -> str:
        assert isinstance(ctx, ToolRunContext)
        assert not isinstance(ctx, CallRecord)
        for bookkeeping in ("plan", "gate", "state", "slot", "result", "settled", "invoked"):
            assert not hasattr(ctx, bookkeeping), bookkeeping
        with pytest.raises(AttributeError):
            ctx.plan = None  # type: ignore[attr-defined]
        record = ctx._record  # type: ignore[attr-defined]
        seen.append((record._execution, record.deferrals))  # not made yet
        token = ctx.token  # asking makes the execution (and its token)
        assert isinstance(ctx.execution, ToolExecution)
        assert ctx.execution.token is token
        seen.append((ctx.execution.call_id, ctx.name, dict(ctx.arguments), ctx.batch_id))
        return "ok"

    registry = ToolRegistry()
    registry.register(ToolDefinition("t", "t", {}, body, is_concurrency_safe=always))
    batch = await run_tool_calls(registry, [ToolCall("c1", "t", '{"a": 1}')])
    assert batch[0].is_error is False
    assert seen[0] == (None, None)
    assert seen[1][:3] == ("c1", "t", {"a": 1})
    assert seen[1][3] is not None  # the batch id


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
    deferred: list[HookContext] = []
    ctx = ToolRunContext(execution, signal, deferred)
    assert isinstance(ctx, ToolRunContext)
    assert type(ctx) is not ToolRunContext  # the interface makes a standalone context
    assert ctx.batch_id is None
    assert ctx.idempotency_key == "c7"
    assert (ctx.call_id, ctx.name, ctx.signal, ctx.token) == ("c7", "t", signal, execution.token)
    ctx.defer_context(HookContext((TextContent("x"),), "body"))
    assert len(deferred) == 1
    with pytest.raises(TypeError, match="HookContext"):
        ctx.defer_context("x")  # type: ignore[arg-type]


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
