"""The conformance registry, served in-process and driven by the SDK's client.

The official suite (``scripts/mcp-conformance``, ``nox -s mcp_conformance``) needs
Node and npm; these tests need neither, and check what the suite's scenarios ask for
more strictly than the suite does: exact contents, the order of log messages and
progress reports, and the JSON Schema 2020-12 tool's schema verbatim.
"""

from __future__ import annotations

import base64
import io
import struct
import warnings
import wave
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

pytest.importorskip("mcp")

import mcp.types as types
from mcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning

import mcp_conformance_data as data
import mcp_conformance_tools
from toolnursery.mcp import mcp_server

pytestmark = [
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

LIMIT = 30


@asynccontextmanager
async def connected(**options: Any) -> AsyncIterator[Client]:
    """A 2025-11-25 session (the revision the pinned suite's scenarios speak)."""
    registry = mcp_conformance_tools.make()
    async with Client(mcp_server(registry), mode="legacy", **options) as client:
        yield client


def dump(blocks: list[Any]) -> list[dict[str, Any]]:
    return [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in blocks]


def resource(contents: dict[str, str]) -> dict[str, Any]:
    return {"type": "resource", "resource": dict(contents)}


IMAGE = {"type": "image", "data": data.PNG, "mimeType": "image/png"}

EXPECTED: dict[str, list[dict[str, Any]]] = {
    "test_simple_text": [{"type": "text", "text": data.SIMPLE_TEXT}],
    "test_image_content": [IMAGE],
    "test_audio_content": [{"type": "audio", "data": data.WAV, "mimeType": "audio/wav"}],
    "test_embedded_resource": [resource(data.EMBEDDED)],
    "test_multiple_content_types": [
        {"type": "text", "text": data.MIXED_TEXT},
        IMAGE,
        resource(data.MIXED_RESOURCE),
    ],
}


async def test_every_tool_is_listed_with_a_description_and_an_object_schema() -> None:
    """tools-list: every tool has a name, a description and an object inputSchema."""
    with trio.fail_after(LIMIT):
        async with connected() as session:
            listed = (await session.list_tools()).tools
    assert [(tool.name, tool.description) for tool in listed][: len(data.TOOLS)] == [
        (name, description) for name, description, _ in data.TOOLS
    ]
    assert all(tool.input_schema.get("type") == "object" for tool in listed)


async def test_the_2020_12_schema_reaches_the_listing_verbatim() -> None:
    """json-schema-2020-12 (B005): $schema, $defs and additionalProperties survive."""
    with trio.fail_after(LIMIT):
        async with connected() as session:
            listed = {tool.name: tool for tool in (await session.list_tools()).tools}
    assert listed[data.SCHEMA_TOOL].input_schema == data.SCHEMA_2020_12


@pytest.mark.parametrize("name", sorted(EXPECTED))
async def test_content_tools_return_exactly_the_scenarios_content(name: str) -> None:
    """tools-call-{simple-text,image,audio,embedded-resource,mixed-content}."""
    with trio.fail_after(LIMIT):
        async with connected() as session:
            result = await session.call_tool(name, {})
    assert result.is_error is False
    assert dump(result.content) == EXPECTED[name]


async def test_the_error_tool_is_an_error_result_with_its_message() -> None:
    """tools-call-error: isError, and the first block's text carries the message."""
    with trio.fail_after(LIMIT):
        async with connected() as session:
            result = await session.call_tool("test_error_handling", {})
    assert result.is_error is True
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    assert data.ERROR_TEXT in block.text


async def test_log_messages_arrive_in_order_and_the_level_filters_them() -> None:
    """logging-set-level, tools-call-with-logging: three info messages, in order;
    none once the client asks for warnings and above."""
    heard: list[types.LoggingMessageNotificationParams] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        heard.append(params)

    with trio.fail_after(LIMIT):
        async with connected(logging_callback=on_log) as session:
            with warnings.catch_warnings():  # logging is deprecated by 2026-07-28 only
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                assert isinstance(await session.set_logging_level("info"), types.EmptyResult)
            first = await session.call_tool("test_tool_with_logging", {})
            logged = [(params.level, params.data) for params in heard]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await session.set_logging_level("warning")
            second = await session.call_tool("test_tool_with_logging", {})
    assert logged == [("info", message) for message in data.LOG_MESSAGES]
    assert len(heard) == len(data.LOG_MESSAGES)
    assert (
        dump(first.content) == dump(second.content) == [{"type": "text", "text": data.LOGGING_DONE}]
    )


async def test_progress_reports_arrive_in_order_with_their_total() -> None:
    """tools-call-with-progress: 0, 50, 100 of 100, then the result."""
    reports: list[tuple[float, float | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reports.append((progress, total))

    with trio.fail_after(LIMIT):
        async with connected() as session:
            result = await session.call_tool(
                "test_tool_with_progress", {}, progress_callback=on_progress
            )
    assert reports == [(step, data.PROGRESS_TOTAL) for step in data.PROGRESS_STEPS]
    assert dump(result.content) == [{"type": "text", "text": data.PROGRESS_DONE}]


def test_the_image_is_a_one_pixel_png_and_the_audio_a_wav() -> None:
    """The media the scenarios ask for decode as what their MIME types say."""
    png = base64.b64decode(data.PNG)
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert png[12:16] == b"IHDR"
    assert struct.unpack(">II", png[16:24]) == (1, 1)
    with wave.open(io.BytesIO(base64.b64decode(data.WAV))) as clip:
        assert (clip.getnchannels(), clip.getframerate(), clip.getnframes()) == (1, 8000, 80)
