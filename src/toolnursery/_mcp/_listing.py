"""A server's ``tools/list``: fetched page by page, checked, each tool as a definition.

A mounted tool is a raw :class:`ToolDefinition` whose parameters are the server's
``inputSchema`` verbatim; its MCP hints decide what the scheduler may assume
(``readOnlyHint``: parallel-safe; ``idempotentHint`` or ``readOnlyHint``: idempotent),
and a declared ``outputSchema`` becomes its output schema.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import mcp.types as types
import msgspec
from mcp.client.session import ClientSession

from .._core._content import ToolReturn
from .._core._errors import McpMountError
from .._core._execution import ToolRunContext
from .._core._json import snapshot
from .._tools._annotations import McpAnnotations
from .._tools._definition import ToolDefinition
from .._tools._output import OUTPUT_SCHEMA_ATTR
from ._convert import annotations_from_mcp

__all__ = ["RemoteCall", "checked_tools", "list_all_tools", "mounted_definition"]

RemoteCall = Callable[[str, Any, ToolRunContext], Awaitable[ToolReturn]]
"""``call(remote_name, args, ctx)``: runs one ``tools/call`` on the mount's session."""


async def list_all_tools(session: ClientSession) -> list[types.Tool]:
    """Every tool the server lists, following ``nextCursor`` across pages.

    Raises:
        McpError: the server answered ``tools/list`` with an error.
    """
    tools: list[types.Tool] = []
    cursor: str | None = None
    while True:
        page = await session.list_tools(
            params=types.PaginatedRequestParams(cursor=cursor) if cursor else None
        )
        tools.extend(page.tools)
        cursor = page.nextCursor
        if not cursor:
            return tools


def checked_tools(label: str, prefix: str, tools: Sequence[types.Tool]) -> dict[str, types.Tool]:
    """The listed tools by registered name (``prefix + name``), in the server's order.

    Args:
        label: the server, as error messages name it.
        prefix: prepended to every tool name.
        tools: the server's list.

    Raises:
        McpMountError: a name is listed twice, or an ``inputSchema`` is not an
            object schema.
    """
    wanted: dict[str, types.Tool] = {}
    for tool in tools:
        name = prefix + tool.name
        if name in wanted:
            raise McpMountError(f'{label}: lists the tool "{tool.name}" twice')
        schema = tool.inputSchema
        if not isinstance(schema, Mapping) or schema.get("type") != "object":
            raise McpMountError(
                f'{label}: tool "{tool.name}" has an inputSchema that is not an '
                'object schema ({"type": "object", ...})'
            )
        wanted[name] = tool
    return wanted


def mounted_definition(name: str, tool: types.Tool, call: RemoteCall) -> ToolDefinition:
    """The definition registered as ``name`` for the server's ``tool``.

    Args:
        name: the registered name (with the mount's prefix).
        tool: the tool as the server lists it.
        call: runs a call of the tool on the server, by its remote name.
    """
    hints = annotations_from_mcp(tool.annotations)
    if tool.title is not None and (hints is None or hints.title is None):
        hints = msgspec.structs.replace(hints or McpAnnotations(), title=tool.title)
    remote = tool.name

    async def execute(args: Any, ctx: ToolRunContext) -> ToolReturn:
        return await call(remote, args, ctx)

    if tool.outputSchema is not None:
        setattr(execute, OUTPUT_SCHEMA_ATTR, snapshot(tool.outputSchema))
    read_only = hints is not None and hints.read_only is True
    return ToolDefinition(
        name=name,
        description=tool.description or "",
        parameters=dict(tool.inputSchema),
        execute=execute,
        is_concurrency_safe=_parallel_safe if read_only else None,
        idempotent=hints is not None and (hints.idempotent is True or read_only),
        mcp_annotations=hints,
    )


def _parallel_safe(args: Any) -> bool:
    return True
