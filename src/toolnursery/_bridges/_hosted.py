"""Calls and batches a bridge runs from asyncio, through ``toolnursery.aio``.

The frameworks bridged here are asyncio programs; these two helpers run a call
through the registry's pipeline, or a model response's calls as one batch, through
``toolnursery.aio``: natively on the running loop when the tools and hooks allow it,
else in the trio guest run that loop hosts, with cancellation carried both ways:
cancelling the awaiting asyncio task aborts the call or batch and waits until
everything it started has settled.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

from .._aio._api import execute as aio_execute
from .._aio._api import open_tool_batch as aio_open_tool_batch
from .._batch._recorder import ToolCallRecorder
from .._core._arguments import parse_arguments
from .._core._content import TextContent, ToolCall, ToolErrorInfo, ToolExecutionResult, ToolSchema
from .._core._errors import ToolArgsError, ToolError
from .._core._execution import ToolExecutionInput
from .._pipeline._registry import ToolRegistry, ToolScope

__all__ = [
    "execute_hosted",
    "hosted_batch",
    "registry_and_scope",
    "exported_schemas",
    "one_line_error",
    "result_text",
    "thaw",
]


def exported_schemas(
    registry: ToolRegistry, agent: ToolScope | None, names: Iterable[str] | None, what: str
) -> list[ToolSchema]:
    """The schemas a bridge exports: ``names`` in that order (default: every tool of
    ``agent``'s view).

    Raises:
        KeyError: a name is not a tool of that view (``what`` names the bridge call).
    """
    schemas = {schema.name: schema for schema in registry.schemas(agent)}
    if names is None:
        return list(schemas.values())
    chosen: list[ToolSchema] = []
    for name in names:
        schema = schemas.get(name)
        if schema is None:
            raise KeyError(f'{what}: no tool "{name}" in this registry view')
        chosen.append(schema)
    return chosen


def registry_and_scope(target: object, what: str) -> tuple[ToolRegistry, ToolScope | None]:
    """Split a bridge's ``registry`` argument (a registry, or a scope of one).

    Raises:
        TypeError: ``target`` is neither.
    """
    if isinstance(target, ToolScope):
        return target.registry, target
    if isinstance(target, ToolRegistry):
        return target, None
    raise TypeError(f"{what} must be a ToolRegistry or ToolScope, got {type(target).__name__}")


async def execute_hosted(
    registry: ToolRegistry,
    call_id: str,
    name: str,
    arguments: Any,
    *,
    agent: ToolScope | None,
    deps: Any,
) -> ToolExecutionResult:
    """One call through ``registry``'s pipeline, awaited from asyncio.

    ``arguments`` is the model's JSON text or a mapping (as in :class:`ToolCall`);
    text that cannot be arguments is the call's ``INVALID_ARGS`` result.
    """
    try:
        arguments = parse_arguments(arguments)
    except ToolArgsError as exc:
        return ToolExecutionResult(
            (TextContent(f"Error: {exc.message}"),), True, ToolErrorInfo(exc.name, exc.code)
        )
    # toolnursery.aio picks the driver: natively on this loop, or the trio guest run.
    input = ToolExecutionInput(call_id, name, arguments, agent=agent)
    return await aio_execute(registry, input, deps=deps)


@asynccontextmanager
async def hosted_batch(
    registry: ToolRegistry,
    calls: Sequence[ToolCall],
    on_result: Callable[[ToolCall, ToolExecutionResult], object],
    *,
    agent: ToolScope | None,
    max_parallel: int,
    recorder: ToolCallRecorder | None,
    deps: Any,
) -> AsyncIterator[None]:
    """Run ``calls`` as one batch while the block runs; ``on_result`` as each commits.

    ``on_result`` is called on the loop's thread, in model order. Leaving the block
    waits for the batch to finish; an exception leaving it (a cancellation included)
    aborts the batch — started calls drain, the rest are ``ABORTED_BEFORE_DISPATCH``
    — before it propagates.
    """
    # toolnursery.aio picks the driver: natively on this loop, or the trio guest run.
    pump: asyncio.Task[None] | None = None
    try:
        async with aio_open_tool_batch(
            registry, agent=agent, max_parallel=max_parallel, recorder=recorder, deps=deps
        ) as batch:
            for call in calls:
                batch.submit(call)
            batch.close()

            async def deliver() -> None:
                async for call, result in batch:
                    on_result(call, result)

            pump = asyncio.get_running_loop().create_task(deliver())
            yield
    finally:
        if pump is not None:
            # The batch has ended: the pump hands on what it committed, then ends.
            while not pump.done():
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.wait((pump,))
            if not pump.cancelled() and pump.exception() is not None:
                raise pump.exception()  # type: ignore[misc]


def result_text(result: ToolExecutionResult) -> str:
    """What a framework hands its model of ``result``: the text, one line for a failure."""
    text = result.text
    return " ".join(text.split()) if result.is_error else text


def thaw(value: Any) -> Any:
    """Frozen arguments (read-only mappings, tuples) as plain JSON values."""
    if isinstance(value, Mapping):
        return {key: thaw(item) for key, item in value.items()}
    if isinstance(value, tuple):
        return [thaw(item) for item in value]
    return value


def one_line_error(exc: Exception) -> ToolError:
    """A foreign tool's exception as the :class:`ToolError` the model reads on one line.

    A :class:`ToolError` keeps its class and code; anything else becomes
    ``ToolError(code="TOOL_ERROR")`` with the message's whitespace collapsed (a
    framework's multi-line validation or traceback-like text would otherwise reach
    the model as it is).
    """
    if isinstance(exc, ToolError):
        return exc
    return ToolError(" ".join(str(exc).split()) or type(exc).__name__)
