"""The tools the MCP conformance suite calls, as a toolnursery registry.

``scripts/mcp-conformance`` serves :data:`registry` with ``toolnursery serve --http``
(``--tools tests/mcp_conformance_tools.py:registry``) and runs the suite's server
scenarios against it. The names, contents and timings come from
``mcp_conformance_data.py``; the tools are written with toolnursery's own API: a
validated :func:`~toolnursery.define_tool` for each tool without arguments, a raw
:class:`~toolnursery.ToolDefinition` for the JSON Schema 2020-12 tool (its schema
must reach ``tools/list`` verbatim).
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import trio

from toolnursery import (
    AudioContent,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceContents,
    TextContent,
    ToolDefinition,
    ToolRegistry,
    define_tool,
    report_log,
    report_progress,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))

import mcp_conformance_data as data


def _resource(resource: dict[str, str]) -> EmbeddedResource:
    return EmbeddedResource(
        resource=ResourceContents(
            uri=resource["uri"], mime_type=resource["mimeType"], text=resource["text"]
        )
    )


async def simple_text(args: Any, ctx: Any) -> str:
    return data.SIMPLE_TEXT


async def image_content(args: Any, ctx: Any) -> list[ContentBlock]:
    return [ImageContent(data.PNG, "image/png")]


async def audio_content(args: Any, ctx: Any) -> list[ContentBlock]:
    return [AudioContent(data.WAV, "audio/wav")]


async def embedded_resource(args: Any, ctx: Any) -> list[ContentBlock]:
    return [_resource(data.EMBEDDED)]


async def multiple_content_types(args: Any, ctx: Any) -> list[ContentBlock]:
    return [
        TextContent(data.MIXED_TEXT),
        ImageContent(data.PNG, "image/png"),
        _resource(data.MIXED_RESOURCE),
    ]


async def with_logging(args: Any, ctx: Any) -> str:
    for index, message in enumerate(data.LOG_MESSAGES):
        if index:
            await trio.sleep(data.STEP_S)
        report_log("info", message)
    return data.LOGGING_DONE


async def with_progress(args: Any, ctx: Any) -> str:
    for index, progress in enumerate(data.PROGRESS_STEPS):
        if index:
            await trio.sleep(data.STEP_S)
        report_progress(progress, total=data.PROGRESS_TOTAL)
    return data.PROGRESS_DONE


async def error_handling(args: Any, ctx: Any) -> str:
    raise RuntimeError(data.ERROR_TEXT)


async def json_schema_2020_12(args: Any, ctx: Any) -> str:
    return f"hello {args.get('name', 'nobody')}"


_BODIES: dict[str, Callable[[Any, Any], Awaitable[Any]]] = {
    "test_simple_text": simple_text,
    "test_image_content": image_content,
    "test_audio_content": audio_content,
    "test_embedded_resource": embedded_resource,
    "test_multiple_content_types": multiple_content_types,
    "test_tool_with_logging": with_logging,
    "test_tool_with_progress": with_progress,
    "test_error_handling": error_handling,
}


def make() -> ToolRegistry:
    """A fresh registry with every tool of :data:`mcp_conformance_data.TOOLS`."""
    made = ToolRegistry()
    for name, description, schema in data.TOOLS:
        if name == data.SCHEMA_TOOL:
            made.register(ToolDefinition(name, description, schema, json_schema_2020_12))
        else:
            made.register(
                define_tool(
                    name=name, description=description, parameters={}, execute=_BODIES[name]
                )
            )
    return made


registry = make()
"""The registry ``scripts/mcp-conformance`` serves."""
