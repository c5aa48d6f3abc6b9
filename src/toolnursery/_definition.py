"""ToolDefinition: a registered tool — its model-facing schema plus host-only parts."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, TypeAlias

import msgspec

from ._content import ContentBlock, ToolResult, ToolReturn
from ._decisions import ResourceKey
from ._execution import ToolRunContext
from ._presentation import ToolCallView, ToolResultView

__all__ = ["ToolBody", "ToolBodyReturn", "ToolDefinition"]

ToolBodyReturn: TypeAlias = str | ToolReturn | Sequence[ContentBlock] | ContentBlock
"""What a body may return: text, content blocks, or content plus ``meta``."""

ToolBody: TypeAlias = Callable[[Any, ToolRunContext], Awaitable[Any] | Any]
"""A tool body: ``async def`` (runs in the caller's task) or plain ``def`` (runs in a
worker thread via ``trio.to_thread.run_sync``)."""


class ToolDefinition(msgspec.Struct, frozen=True):
    """A raw tool definition.

    ``parameters`` is JSON Schema projected verbatim to the model; a raw definition's
    arguments are not validated (MCP style) — use :func:`define_tool` for validation.

    Attributes:
        name: the tool name the model calls.
        description: the model-facing description.
        parameters: the JSON Schema of the arguments.
        execute: the body, ``(args, ctx) -> str | ToolReturn | list[ContentBlock]``.
        timeout_ms: cooperative time budget, enforced by the timeout policy; never sent
            to the model.
        is_concurrency_safe: pure classifier ``args -> bool``; only an exact ``True``
            lets the call overlap its siblings.
        present_call: optional ``args -> ToolCallView | None`` for UIs.
        present_result: optional ``(args, ToolResult) -> ToolResultView | None``.
        idempotent: the tool may safely run again for the same arguments (a retry
            policy refuses tools that do not declare it).
        concurrency_keys: pure classifier ``args -> Iterable[ResourceKey]``,
            consulted when ``is_concurrency_safe`` is absent or returns anything but
            ``True`` (one that raises makes the call exclusive): the call may overlap
            its siblings except the earlier calls whose keys conflict with its own
            (``keyed``, see :class:`ToolExecutionMode`). One that raises or returns
            anything but an iterable of ``ResourceKey`` makes the call exclusive.
        max_concurrency: the most bodies of this tool name that run at once through
            the registry it is registered in, across batches and ``execute()``
            calls (a positive ``int``; ``None``: unlimited).
    """

    name: str
    description: str
    parameters: dict[str, Any]
    execute: ToolBody
    timeout_ms: float | None = None
    is_concurrency_safe: Callable[[Any], bool] | None = None
    present_call: Callable[[Any], ToolCallView | None] | None = None
    present_result: Callable[[Any, ToolResult], ToolResultView | None] | None = None
    idempotent: bool = False
    concurrency_keys: Callable[[Any], Iterable[ResourceKey]] | None = None
    max_concurrency: int | None = None
