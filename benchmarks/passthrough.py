"""The pass-through hooks the benchmarks register: one per phase, each doing nothing.

They measure what the pipeline's phases cost around a user's hook, not the hook: the
pre-execute listener, guard, wrapper, post-execute listener and observer all hand on at
once. ``add_five(registry)`` registers one of each.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from toolnursery import (
    ToolDispatchExecution,
    ToolExecution,
    ToolExecutionResult,
    ToolRegistry,
)
from toolnursery._core._decisions import PostToolDecision, PreToolDecision

__all__ = ["add_five", "guard", "observe", "post", "pre", "wrap"]


async def pre(
    execution: ToolExecution, next_: Callable[[], Awaitable[PreToolDecision]]
) -> PreToolDecision:
    return await next_()


def guard(execution: ToolExecution) -> str | None:
    return None


async def wrap(
    view: ToolDispatchExecution, next_: Callable[[], Awaitable[ToolExecutionResult]]
) -> ToolExecutionResult:
    return await next_()


async def post(
    execution: ToolExecution,
    result: ToolExecutionResult,
    next_: Callable[[], Awaitable[PostToolDecision]],
) -> PostToolDecision:
    return await next_()


def observe(execution: ToolExecution, result: ToolExecutionResult) -> None:
    return None


def add_five(registry: ToolRegistry) -> ToolRegistry:
    """Register one pass-through hook per phase; returns ``registry``."""
    registry.on_pre_execute(pre)
    registry.guard(guard)
    registry.on_execute(wrap)
    registry.on_post_execute(post)
    registry.on_result(observe)
    return registry
