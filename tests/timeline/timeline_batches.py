"""Batches that exercise every mark of a timeline, on trio's clock (no real sleeps)."""

from __future__ import annotations

from typing import Any

import trio

from toolnursery import (
    ResourceKey,
    ToolCall,
    ToolDefinition,
    ToolError,
    ToolExecutionResult,
    ToolRegistry,
    ToolRunContext,
    install_retry_policy,
    install_timeout_policy,
    run_tool_calls,
)
from toolnursery.log import RecorderEvent

OBJECT: dict[str, Any] = {"type": "object"}


class ListRecorder:
    def __init__(self) -> None:
        self.events: list[RecorderEvent] = []

    def record(self, event: RecorderEvent, /) -> None:
        self.events.append(event)


async def work(args: Any, ctx: ToolRunContext) -> str:
    for step in range(args.get("steps", 0)):
        await trio.sleep(args["s"] / max(args["steps"], 1))
        ctx.report_progress(step + 1, args["steps"])
    if not args.get("steps"):
        await trio.sleep(args["s"])
    return "done"


_flaky_seen: dict[str, int] = {}


class BusyError(ToolError):
    code = "BUSY"


async def flaky(args: Any, ctx: ToolRunContext) -> str:
    seen = _flaky_seen[ctx.call_id] = _flaky_seen.get(ctx.call_id, 0) + 1
    await trio.sleep(0.01)
    if seen < 3:
        raise BusyError("busy, try again")
    return "ok at last"


def registry() -> ToolRegistry:
    reg = ToolRegistry()
    reg.register(ToolDefinition("work", "work", OBJECT, work, is_concurrency_safe=lambda a: True))
    reg.register(
        ToolDefinition(
            "write",
            "write",
            OBJECT,
            work,
            concurrency_keys=lambda a: [ResourceKey.write(a["path"])],
        )
    )
    reg.register(ToolDefinition("barrier", "barrier", OBJECT, work))
    reg.register(
        ToolDefinition(
            "slow", "slow", OBJECT, work, timeout_ms=50, is_concurrency_safe=lambda a: True
        )
    )
    reg.register(
        ToolDefinition(
            "flaky", "flaky", OBJECT, flaky, idempotent=True, is_concurrency_safe=lambda a: True
        )
    )
    install_timeout_policy(reg)
    install_retry_policy(reg, codes=["BUSY"], backoff_ms=5, jitter=0)
    return reg


def rich_calls() -> list[ToolCall]:
    """Progress, a key conflict, a timeout, a retry, a barrier, an unknown tool."""
    return [
        ToolCall("p1", "work", '{"s": 0.04, "steps": 4}'),
        ToolCall("w1", "write", '{"s": 0.02, "path": "a"}'),
        ToolCall("w2", "write", '{"s": 0.01, "path": "a"}'),
        ToolCall("t1", "slow", '{"s": 1}'),
        ToolCall("r1", "flaky", "{}"),
        ToolCall("b1", "barrier", '{"s": 0.01}'),
        ToolCall("a1", "work", '{"s": 0.01}'),
        ToolCall("u1", "nope", "{}"),
    ]


async def run_rich(recorder: Any) -> list[ToolExecutionResult]:
    _flaky_seen.clear()
    return await run_tool_calls(registry(), rich_calls(), recorder=recorder)


def many_calls(n: int) -> list[ToolCall]:
    return [
        ToolCall(
            f"m{i}",
            "write" if i % 7 == 3 else "work",
            f'{{"s": {0.001 * (i % 13 + 1)}, "path": "k{i % 5}"}}',
        )
        for i in range(n)
    ]
