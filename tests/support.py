"""Helpers shared by the test modules (imported as ``support``)."""

from __future__ import annotations

import functools
import json
import textwrap
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import msgspec
import trio
import trio.testing

from toolnursery import (
    CancelSignal,
    HookContext,
    TextContent,
    ToolDefinition,
    ToolDispatchExecution,
    ToolExecution,
    ToolExecutionInput,
    ToolExecutionResult,
    ToolExecutionToken,
    ToolRegistry,
    ToolRunContext,
    ToolScope,
)


def no_deadlock(test: Callable[..., Awaitable[None]]) -> Callable[..., Awaitable[None]]:
    """Fail (rather than hang) when a test deadlocks: the mock clock jumps to the deadline."""

    @functools.wraps(test)
    async def guarded(*args: Any, **kwargs: Any) -> None:
        with trio.fail_after(100_000):
            await test(*args, **kwargs)

    return guarded


def replace_batch_dispatch(monkeypatch: Any, replacement: Callable[..., Awaitable[None]]) -> None:
    """Make every pooled call of a batch go through ``replacement`` (called as
    ``replacement(call, carried=True)``) instead of the pipeline's ``dispatch``: it
    patches the pool's one seam, so no call bypasses it."""
    from toolnursery._batch import _pool
    from toolnursery._pipeline._dispatch import DONE

    def start(call: Any) -> tuple[Awaitable[None], Any]:
        return replacement(call, carried=True), DONE

    monkeypatch.setattr(_pool, "start_dispatch", start)


def text(result: ToolExecutionResult) -> str:
    """The result's text blocks, joined with newlines (other blocks are skipped)."""
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


def code(result: ToolExecutionResult) -> str | None:
    """The result's error code, or None for a result without an error."""
    return None if result.error is None else result.error.code


def registry_with(*tools: ToolDefinition) -> ToolRegistry:
    """A fresh registry holding the given definitions."""
    registry = ToolRegistry()
    for definition in tools:
        registry.register(definition)
    return registry


def always(args: Any) -> bool:
    """An ``is_concurrency_safe`` predicate that says yes to every call."""
    return True


async def noop(args: Any, ctx: ToolRunContext) -> str:
    """A tool body that answers "ok"."""
    return "ok"


def live_tasks() -> int:
    """Every task in the run (the scheduler's included), counted from the root."""
    root = trio.lowlevel.current_root_task()
    assert root is not None
    count = 0
    stack = [root]
    while stack:
        task = stack.pop()
        count += 1
        for nursery in task.child_nurseries:
            stack.extend(nursery.child_tasks)
    return count


class RecorderBrokeError(Exception):
    """What a deliberately broken recorder raises."""


# -- the command line -------------------------------------------------------------------


def write_calls(tmp_path: Path, *items: Any, name: str = "calls.jsonl") -> Path:
    """A JSON-lines CALLS file holding ``items``."""
    path = tmp_path / name
    path.write_text("".join(json.dumps(item) + "\n" for item in items), encoding="utf-8")
    return path


def tools_module(tmp_path: Path, source: str, name: str = "clitools.py") -> Path:
    """A Python file holding ``source`` (dedented), for ``--tools PATH:ATTR``."""
    path = tmp_path / name
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


# -- one execute(): the pipeline's tests and those of the modules it drives ------------


async def _ok_body(args: Any, ctx: ToolRunContext) -> list[TextContent]:
    return [TextContent("ok")]


def tool(name: str = "echo", body: Any = None, **kwargs: Any) -> ToolDefinition:
    """A definition with an empty object schema whose body answers "ok" unless given one."""
    return ToolDefinition(
        name, f"the {name} tool", {"type": "object", "properties": {}}, body or _ok_body, **kwargs
    )


def call(
    name: str = "echo",
    arguments: Any = None,
    *,
    call_id: str = "c1",
    signal: CancelSignal | None = None,
    agent: ToolScope | None = None,
    parent: ToolExecutionToken | None = None,
) -> ToolExecutionInput:
    """The input of one execute(), with a fresh signal unless given one."""
    return ToolExecutionInput(
        call_id,
        name,
        {} if arguments is None else arguments,
        signal if signal is not None else CancelSignal(),
        agent,
        parent,
    )


def wire(result: ToolExecutionResult) -> Any:
    """The result's JSON form, decoded to plain Python values."""
    return msgspec.json.decode(msgspec.json.encode(result))


def context(label: str, meta: Any = None) -> HookContext:
    """A one-block hook context from source "test"."""
    return HookContext((TextContent(label),), "test", meta)


OK = ToolExecutionResult((TextContent("ok"),), False)


class Trace:
    """Records every phase's sight of a call and passes through."""

    def __init__(self, owner: ToolRegistry | ToolScope) -> None:
        self.events: list[str] = []
        self.executions: list[Any] = []
        self.results: list[ToolExecutionResult] = []
        owner.on_pre_execute(self.pre)
        owner.on_execute(self.wrap)
        owner.on_post_execute(self.post)
        owner.on_result(self.observe)

    async def pre(self, execution: ToolExecution, next_: Any) -> Any:
        self.events.append("pre")
        self.executions.append(execution)
        return await next_()

    async def wrap(self, view: ToolDispatchExecution, next_: Any) -> Any:
        self.events.append("execute")
        self.executions.append(view.execution)
        return await next_()

    async def post(self, execution: ToolExecution, result: Any, next_: Any) -> Any:
        self.events.append("post")
        self.executions.append(execution)
        return await next_()

    def observe(self, execution: ToolExecution, result: ToolExecutionResult) -> None:
        self.events.append("result")
        self.executions.append(execution)
        self.results.append(result)
