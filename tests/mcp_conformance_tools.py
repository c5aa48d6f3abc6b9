"""The tools the MCP conformance suite's server scenarios call, by their names.

``toolnursery serve --http 127.0.0.1:0 --tools tests/mcp_conformance_tools.py:conformance``
is what ``scripts/mcp_conformance.py`` (``nox -s mcp_conformance``) tests.
"""

from __future__ import annotations

from typing import Any

import trio

from toolnursery import (
    AudioContent,
    EmbeddedResource,
    ImageContent,
    ResourceContents,
    TextContent,
    ToolDefinition,
    ToolError,
    ToolRegistry,
    report_log,
    report_progress,
)

# A 1x1 red PNG and a 44-byte silent WAV header, base64.
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA="

NO_ARGS: dict[str, Any] = {"type": "object", "properties": {}}

SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}


async def simple_text(args: Any, ctx: Any) -> str:
    return "This is a simple text response for testing."


async def image_content(args: Any, ctx: Any) -> list[Any]:
    return [ImageContent(PNG, "image/png")]


async def audio_content(args: Any, ctx: Any) -> list[Any]:
    return [AudioContent(WAV, "audio/wav")]


async def embedded_resource(args: Any, ctx: Any) -> list[Any]:
    return [
        EmbeddedResource(
            resource=ResourceContents(
                "test://embedded-resource",
                text="This is an embedded resource content.",
                mime_type="text/plain",
            )
        )
    ]


async def multiple_content_types(args: Any, ctx: Any) -> list[Any]:
    return [
        TextContent("Multiple content types test:"),
        ImageContent(PNG, "image/png"),
        EmbeddedResource(
            resource=ResourceContents(
                "test://mixed-content-resource",
                text='{"test": "data", "value": 123}',
                mime_type="application/json",
            )
        ),
    ]


async def tool_with_logging(args: Any, ctx: Any) -> str:
    report_log("info", "Tool execution started")
    await trio.sleep(0.05)
    report_log("info", "Tool processing data")
    await trio.sleep(0.05)
    report_log("info", "Tool execution completed")
    return "Tool with logging executed successfully"


async def tool_with_progress(args: Any, ctx: Any) -> str:
    report_progress(0, 100)
    await trio.sleep(0.05)
    report_progress(50, 100)
    await trio.sleep(0.05)
    report_progress(100, 100)
    return "Tool with progress executed successfully"


async def error_handling(args: Any, ctx: Any) -> str:
    raise ToolError("This tool intentionally returns an error for testing")


async def schema_tool(args: Any, ctx: Any) -> str:
    return "ok"


def conformance() -> ToolRegistry:
    """A registry with every tool the server scenarios call."""
    registry = ToolRegistry()
    for name, description, body, schema in (
        ("test_simple_text", "Returns simple text.", simple_text, NO_ARGS),
        ("test_image_content", "Returns an image.", image_content, NO_ARGS),
        ("test_audio_content", "Returns audio.", audio_content, NO_ARGS),
        ("test_embedded_resource", "Returns an embedded resource.", embedded_resource, NO_ARGS),
        ("test_multiple_content_types", "Returns mixed content.", multiple_content_types, NO_ARGS),
        ("test_tool_with_logging", "Sends log messages.", tool_with_logging, NO_ARGS),
        ("test_tool_with_progress", "Reports progress.", tool_with_progress, NO_ARGS),
        ("test_error_handling", "Always fails.", error_handling, NO_ARGS),
        (
            "json_schema_2020_12_tool",
            "Tool with JSON Schema 2020-12 features",
            schema_tool,
            SCHEMA_2020_12,
        ),
    ):
        registry.register(ToolDefinition(name, description, schema, body))
    return registry
