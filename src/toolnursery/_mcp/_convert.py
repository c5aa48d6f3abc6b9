"""Translation between the MCP SDK's pydantic models and toolnursery's values.

Both sides speak the same wire JSON (camelCase, ``_meta``), so each direction is one
JSON-shaped hop: pydantic dumps by alias and msgspec converts, or msgspec dumps and
pydantic validates. Nothing is interpreted on the way, which is what keeps the
content lossless.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import mcp.types as types
import msgspec
from pydantic import TypeAdapter

from .._core._content import ContentBlock
from .._tools._annotations import McpAnnotations

__all__ = ["annotations_from_mcp", "annotations_to_mcp", "blocks_from_mcp", "blocks_to_mcp"]

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
