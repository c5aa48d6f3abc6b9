"""A server's ``tools/list``: fetched page by page, checked, each tool as a definition.

A mounted tool is a raw :class:`ToolDefinition` whose parameters are the server's
``inputSchema`` verbatim; its MCP hints decide what the scheduler may assume
(``readOnlyHint``: parallel-safe; ``idempotentHint`` or ``readOnlyHint``: idempotent),
and a declared ``outputSchema`` becomes its output schema. The definition's body is
the mount's call itself, given the remote name and a check compiled here once: the
call refuses arguments that are not an object before anything is sent
(:func:`object_arguments`), and passes a successful result's ``structuredContent``
to the check, which tests it against the ``outputSchema`` the way a local tool's
declared output is tested (a schema outside the structured-output subset is checked
as full JSON Schema).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import mcp.types as types
import msgspec
from mcp.client.session import ClientSession

from .._core._arguments import kind_of
from .._core._content import ToolReturn
from .._core._errors import McpMountError, OutputSchemaError, ToolArgsError, ToolOutputError
from .._core._execution import ToolRunContext
from .._core._json import snapshot, thaw
from .._tools._annotations import McpAnnotations
from .._tools._definition import ToolDefinition
from .._tools._output import OUTPUT_SCHEMA_ATTR
from .._tools._structured import assert_supported_output_schema, validate_structured_value
from ._convert import annotations_from_mcp

__all__ = [
    "OutputCheck",
    "RemoteCall",
    "checked_tools",
    "list_all_tools",
    "mounted_definition",
    "object_arguments",
]

OutputCheck = Callable[[Any], None]
"""``check(structured)``: raises :class:`ToolOutputError` when it does not fit."""

RemoteCall = Callable[[str, "OutputCheck | None", Any, ToolRunContext], Awaitable[ToolReturn]]
"""``call(remote_name, check, args, ctx)``: runs one ``tools/call`` on the mount's
session; it refuses ``args`` that are not an object (:func:`object_arguments`) and
passes a successful result's ``structuredContent`` to ``check``."""


async def list_all_tools(session: ClientSession) -> list[types.Tool]:
    """Every tool the server lists, following ``nextCursor`` across pages.

    Raises:
        MCPError: the server answered ``tools/list`` with an error.
    """
    tools: list[types.Tool] = []
    cursor: str | None = None
    while True:
        page = await session.list_tools(
            params=types.PaginatedRequestParams(cursor=cursor) if cursor else None
        )
        tools.extend(page.tools)
        cursor = page.next_cursor
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
        schema = tool.input_schema
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
    declared = tool.output_schema
    check = None if declared is None else _output_check(name, declared)
    # The body is the mount's call itself: one frame less on every suspension of a
    # call (a partial adds none), which is most of a mount's per-call cost.
    execute = functools.partial(call, tool.name, check)
    if declared is not None:
        setattr(execute, OUTPUT_SCHEMA_ATTR, snapshot(declared))
    read_only = hints is not None and hints.read_only is True
    return ToolDefinition(
        name=name,
        description=tool.description or "",
        parameters=dict(tool.input_schema),
        execute=execute,
        is_concurrency_safe=_parallel_safe if read_only else None,
        idempotent=hints is not None and (hints.idempotent is True or read_only),
        mcp_annotations=hints,
    )


def _parallel_safe(args: Any) -> bool:
    return True


def object_arguments(args: Any) -> Mapping[str, Any]:
    """``args`` if it is an object (a mapping).

    Raises:
        ToolArgsError: it is a string, an array, a number, ``null`` or a boolean.
    """
    if not isinstance(args, Mapping):
        raise ToolArgsError([f'"arguments" must be an object, got {kind_of(args)}'])
    return args


def _output_check(name: str, schema: dict[str, Any]) -> OutputCheck:
    """Check a result's ``structuredContent`` against the tool's ``outputSchema``.

    Compiled once per registration: a schema inside the structured-output subset is
    checked as a local tool's declared output is; any other by the validation engine
    (jsonschema-rs: nothing retrieved, patterns in linear time).
    """
    try:
        assert_supported_output_schema(schema)
    except OutputSchemaError:
        return _jsonschema_check(name, schema)
    frozen = snapshot(schema)

    def check(structured: Any) -> None:
        if structured is None:
            raise ToolOutputError(
                name, ["no structuredContent, but the tool declares an outputSchema"]
            )
        violations = validate_structured_value(frozen, structured)
        if violations:
            raise ToolOutputError(name, violations)

    return check


def _jsonschema_check(name: str, schema: dict[str, Any]) -> OutputCheck:
    from .._tools._validator import SchemaCompileError, engine_for

    try:
        validator = engine_for(thaw(schema))
    except SchemaCompileError as exc:
        message = f'tool "{name}" has an outputSchema that cannot be checked: {exc}'

        def unusable(structured: Any) -> None:
            raise ToolOutputError(name, message=message)

        return unusable

    def check(structured: Any) -> None:
        if structured is None:
            raise ToolOutputError(
                name, ["no structuredContent, but the tool declares an outputSchema"]
            )
        try:
            errors = list(validator.iter_errors(structured))
        except ValueError as exc:  # not JSON, or nested past the engine's reach
            raise ToolOutputError(name, [f"value cannot be checked: {exc}"]) from None
        violations = [
            f"value{''.join(f'[{p!r}]' for p in error.instance_path)}: {error.message}"
            for error in errors
        ]
        if violations:
            raise ToolOutputError(name, violations)

    return check
