"""MCP tool annotations as a value: the hints, their wire names, and ``may_destroy``.

Serving and mounting them is tested with MCP (``tests/mcp``); here they are only a
value a definition declares as its ``mcp_annotations`` option.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from toolnursery import McpAnnotations, RegistrationError, ToolDefinition, ToolRegistry, define_tool


async def body(args: Any, ctx: Any) -> str:
    return "ok"


def test_every_hint_is_optional_and_absent_on_the_wire() -> None:
    hints = McpAnnotations()
    assert (hints.title, hints.read_only, hints.destructive) == (None, None, None)
    assert (hints.idempotent, hints.open_world) == (None, None)
    assert msgspec.json.encode(hints) == b"{}"


def test_hints_travel_under_mcp_wire_names() -> None:
    hints = McpAnnotations(
        title="Edit a file", read_only=False, destructive=True, idempotent=False, open_world=False
    )
    wire = msgspec.json.encode(hints)
    assert json.loads(wire) == {
        "title": "Edit a file",
        "readOnlyHint": False,
        "destructiveHint": True,
        "idempotentHint": False,
        "openWorldHint": False,
    }
    assert msgspec.json.decode(wire, type=McpAnnotations) == hints


def test_hints_are_frozen_and_keyword_only() -> None:
    hints = McpAnnotations(read_only=True)
    with pytest.raises(AttributeError):
        hints.read_only = False  # type: ignore[misc]
    with pytest.raises(TypeError):
        McpAnnotations("title")  # type: ignore[misc]
    assert hints == McpAnnotations(read_only=True)
    assert hash(hints) == hash(McpAnnotations(read_only=True))


def test_decoding_checks_the_hint_types() -> None:
    with pytest.raises(msgspec.ValidationError, match="readOnlyHint"):
        msgspec.json.decode(b'{"readOnlyHint": "yes"}', type=McpAnnotations)


@pytest.mark.parametrize(
    ("read_only", "destructive", "may_destroy"),
    [
        (None, None, True),  # MCP's defaults: not read-only, destructive
        (None, False, False),
        (None, True, True),
        (False, None, True),
        (False, False, False),
        (True, None, False),
        (True, True, False),  # read-only wins: destructive means nothing then
    ],
)
def test_may_destroy_follows_mcps_reading(
    read_only: bool | None, destructive: bool | None, may_destroy: bool
) -> None:
    assert McpAnnotations(read_only=read_only, destructive=destructive).may_destroy is may_destroy


def test_a_definition_carries_its_hints() -> None:
    hints = McpAnnotations(title="Read", read_only=True)
    defined = define_tool(
        name="read", description="d", parameters={}, execute=body, mcp_annotations=hints
    )
    assert defined.mcp_annotations is hints
    plain = ToolDefinition("plain", "d", {"type": "object"}, body)
    assert plain.mcp_annotations is None


def test_hints_of_another_type_are_refused() -> None:
    registry = ToolRegistry()
    bad = ToolDefinition(
        "t",
        "d",
        {"type": "object"},
        body,
        mcp_annotations={"readOnlyHint": True},  # type: ignore[arg-type]
    )
    with pytest.raises(RegistrationError, match="mcp_annotations must be McpAnnotations, not dict"):
        registry.register(bad)
    with pytest.raises(RegistrationError, match="mcp_annotations must be McpAnnotations"):
        define_tool(
            name="t",
            description="d",
            parameters={},
            execute=body,
            mcp_annotations="read-only",  # type: ignore[arg-type]
        )
