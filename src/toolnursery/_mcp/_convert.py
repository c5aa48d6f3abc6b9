"""Translation between the MCP SDK's pydantic models and toolnursery's values.

Both sides speak the same wire JSON (camelCase, ``_meta``), so each direction is one
JSON-shaped hop: pydantic dumps by alias and msgspec converts, or msgspec dumps and
pydantic validates. Nothing is interpreted on the way, which is what keeps the
content lossless.
"""

from __future__ import annotations

import dis
import inspect
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

import mcp.types as types
import msgspec
from pydantic import TypeAdapter

from .._core._content import ContentBlock, TextContent, ToolExecutionResult
from .._core._jsonform import returned_value
from .._core._outcomes import returned_text
from .._tools._annotations import McpAnnotations
from .._tools._definition import ToolDefinition

__all__ = [
    "WRAPPED_META",
    "annotations_from_mcp",
    "annotations_to_mcp",
    "blocks_from_mcp",
    "blocks_to_mcp",
    "served_hints",
    "unwrapped",
    "wrapped_value",
]

WRAPPED_META: Final = "fastmcp"
"""The ``_meta`` key under which fastmcp says a result's value is ``{"result": value}``."""

_mcp_blocks: TypeAdapter[list[types.ContentBlock]] = TypeAdapter(list[types.ContentBlock])


def blocks_from_mcp(content: Iterable[types.ContentBlock]) -> tuple[ContentBlock, ...]:
    """MCP content blocks as toolnursery blocks.

    Raises:
        msgspec.ValidationError: a block is of a kind toolnursery does not carry.
    """
    dumped = [block.model_dump(by_alias=True, mode="json", exclude_none=True) for block in content]
    return msgspec.convert(dumped, tuple[ContentBlock, ...])


def blocks_to_mcp(content: Sequence[ContentBlock]) -> list[types.ContentBlock]:
    """toolnursery blocks as MCP content blocks."""
    return _mcp_blocks.validate_python(msgspec.to_builtins(content))


def annotations_from_mcp(annotations: types.ToolAnnotations | None) -> McpAnnotations | None:
    """A tool's MCP annotations as :class:`McpAnnotations` (``None`` stays ``None``)."""
    if annotations is None:
        return None
    dumped: Any = annotations.model_dump(by_alias=True, mode="json", exclude_none=True)
    return msgspec.convert(dumped, McpAnnotations)


def annotations_to_mcp(annotations: McpAnnotations) -> types.ToolAnnotations:
    """:class:`McpAnnotations` as the SDK's model."""
    return types.ToolAnnotations.model_validate(msgspec.to_builtins(annotations))


def served_hints(definition: ToolDefinition) -> McpAnnotations | None:
    """The hints a served tool lists: its declared ones, plus ``readOnlyHint`` when it
    is always safe to run in parallel (``is_concurrency_safe=lambda args: True``) and
    does not say otherwise — the hint a mount reads back as parallel-safe."""
    hints = definition.mcp_annotations
    if hints is not None and hints.read_only is not None:
        return hints
    if not _always_true(definition.is_concurrency_safe):
        return hints
    if hints is None:
        return McpAnnotations(read_only=True)
    return msgspec.structs.replace(hints, read_only=True)


def _always_true(fn: Callable[..., Any] | None) -> bool:
    """Whether ``fn`` (under its wrappers) is a function whose whole body is ``return True``."""
    if fn is None:
        return False
    try:
        code = inspect.unwrap(fn).__code__
    except (AttributeError, ValueError):
        return False
    ops = [i for i in dis.get_instructions(code) if i.opname not in ("RESUME", "NOP", "CACHE")]
    if len(ops) == 1:
        return ops[0].opname == "RETURN_CONST" and ops[0].argval is True
    return (
        len(ops) == 2
        and ops[0].opname == "LOAD_CONST"
        and ops[0].argval is True
        and ops[1].opname == "RETURN_VALUE"
    )


def wrapped_value(result: ToolExecutionResult) -> Any:
    """``{"result": value}`` for a successful one-text result with no structured value
    (as fastmcp wraps a tool's return, so its client reads the value as ``data``), else
    ``None``. The value is what the text is JSON of, a number, boolean, null, object
    or array as toolnursery renders it, or else the text."""
    content = result.content
    if result.is_error or result.structured_content is not None or len(content) != 1:
        return None
    block = content[0]
    if type(block) is not TextContent:
        return None
    if returned_text(result):
        return {"result": block.text}
    return {"result": returned_value(block.text)}


def unwrapped(structured: Any, meta: dict[str, Any] | None) -> tuple[Any, dict[str, Any] | None]:
    """A mounted result's structured value and ``_meta`` without fastmcp's wrapping of a
    plain return (the text block already carries it)."""
    if meta is None or not isinstance(meta.get(WRAPPED_META), dict):
        return structured, meta
    if meta[WRAPPED_META].get("wrap_result") is not True:
        return structured, meta
    rest = {k: v for k, v in meta.items() if k != WRAPPED_META}
    return None, rest or None
