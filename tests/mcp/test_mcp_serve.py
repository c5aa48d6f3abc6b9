"""Serving a registry over MCP, driven by the official SDK's client: in-process,
``toolnursery serve`` over stdio in a subprocess, and ``serve --http`` on 127.0.0.1.

Every wait is bounded by ``trio.fail_after``; nothing sleeps to synchronise.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

pytest.importorskip("mcp")

import mcp.types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import McpError
from mcp.shared.memory import create_connected_server_and_client_session

import mcp_serve_tools
from mcp_fixture_server import process_printing_url
from toolnursery import ToolRegistry, define_tool
from toolnursery.mcp import ERROR_META_KEY, mcp_server, serve_mcp_http

pytestmark = [
    pytest.mark.filterwarnings("ignore:Async generator 'httpx:ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

TOOLS = str(Path(__file__).parents[1] / "mcp_serve_tools.py") + ":make"
LIMIT = 30


def first_text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def error_code(result: types.CallToolResult) -> str | None:
    assert result.meta is not None
    return str(result.meta[ERROR_META_KEY]["code"])


@asynccontextmanager
async def in_process(registry: ToolRegistry, **options: Any) -> AsyncIterator[ClientSession]:
    async with create_connected_server_and_client_session(
        mcp_server(registry), **options
    ) as session:
        yield session


@asynccontextmanager
async def over_stdio(**options: Any) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "toolnursery", "serve", "--tools", TOOLS]
    )
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, **options) as session,
    ):
        await session.initialize()
        yield session


@asynccontextmanager
async def serve_process_http() -> AsyncIterator[str]:
    """``toolnursery serve --http 127.0.0.1:0`` in a subprocess; yields its URL."""
    argv = [sys.executable, "-m", "toolnursery", "serve", "--tools", TOOLS, "--http", "127.0.0.1:0"]
    async with process_printing_url(argv) as (url, _):
        yield url


@asynccontextmanager
async def over_http(url: str, **options: Any) -> AsyncIterator[ClientSession]:
    async with (
        streamable_http_client(url) as (read, write, _),
        ClientSession(read, write, **options) as session,
    ):
        await session.initialize()
        yield session


async def check_listing_and_calls(session: ClientSession) -> None:
    tools = {t.name: t for t in (await session.list_tools()).tools}
    assert list(tools)[:3] == ["echo", "slow", "sleepy"]
    echo = tools["echo"]
    assert echo.title == "Echo"
    assert echo.annotations == types.ToolAnnotations(
        title="Echo", readOnlyHint=True, openWorldHint=False
    )
    assert echo.inputSchema["properties"] == {"text": {"type": "string"}}
    assert tools["count"].outputSchema == {
        "type": "object",
        "properties": {"n": {"type": "number"}},
        "required": ["n"],
    }
    result = await session.call_tool("echo", {"text": "hi"})
    assert (first_text(result), result.isError) == ("hi", False)
    counted = await session.call_tool("count", {"n": 4})
    assert counted.structuredContent == {"n": 4}
    denied = await session.call_tool("forbidden", {})
    assert denied.isError
    assert first_text(
        denied
    ) == 'Error: tool "forbidden" denied: not allowed' or "not allowed" in first_text(denied)
    timed_out = await session.call_tool("sleepy", {})
    assert timed_out.isError
    assert error_code(timed_out) == "TOOL_TIMEOUT"
    invalid = await session.call_tool("echo", {"text": 3})
    assert invalid.isError
    assert error_code(invalid) == "INVALID_ARGS"
    unknown = await session.call_tool("nope", {})
    assert unknown.isError
    assert (first_text(unknown), error_code(unknown)) == (
        'Error: unknown tool "nope"',
        "UNKNOWN_TOOL",
    )
    kinds = await session.call_tool("kinds", {})
    assert [b.type for b in kinds.content] == [
        "text",
        "image",
        "audio",
        "resource_link",
        "resource",
    ]
    audio = kinds.content[2]
    assert isinstance(audio, types.AudioContent)
    assert audio.mimeType == "audio/wav"


async def check_progress_and_logs(session: ClientSession) -> None:
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    await session.set_logging_level("info")
    result = await session.call_tool("progress", {}, progress_callback=on_progress)
    assert first_text(result) == "done"
    assert progress == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


async def test_in_process_listing_calls_and_errors() -> None:
    with trio.fail_after(LIMIT):
        async with in_process(mcp_serve_tools.make()) as session:
            await check_listing_and_calls(session)


async def test_serve_over_stdio_in_a_subprocess() -> None:
    logs: list[Any] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append((params.level, params.data, params.logger))

    with trio.fail_after(LIMIT):
        async with over_stdio(logging_callback=on_log) as session:
            await check_listing_and_calls(session)
            await check_progress_and_logs(session)
            await session.send_ping()
    # the debug line is below the level the client set
    assert logs == [("warning", "careful", "tests")]


async def test_serve_over_streamable_http_in_a_subprocess() -> None:
    logs: list[Any] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append((params.level, params.data))

    with trio.fail_after(LIMIT):
        async with serve_process_http() as url, over_http(url, logging_callback=on_log) as session:
            assert url.endswith("/mcp")
            await check_listing_and_calls(session)
            await check_progress_and_logs(session)
    assert logs == [("warning", "careful")]


async def test_serve_mcp_http_in_process_and_a_wrong_path_is_404() -> None:
    import httpx

    registry = mcp_serve_tools.make()
    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            url = await nursery.start(serve_mcp_http, registry, "127.0.0.1", 0)
            async with over_http(url) as session:
                result = await session.call_tool("echo", {"text": "here"})
                assert first_text(result) == "here"
            async with httpx.AsyncClient() as client:
                response = await client.get(url.removesuffix("/mcp") + "/other")
            assert response.status_code == 404
            nursery.cancel_scope.cancel()


async def test_mcp_cancellation_reaches_the_body_through_the_calls_signal() -> None:
    registry = mcp_serve_tools.make()
    state = registry.state  # type: ignore[attr-defined]
    outcomes: list[Any] = []
    registry.on_result(lambda execution, result: outcomes.append(result))
    with trio.fail_after(LIMIT):
        async with in_process(registry) as session:
            failure: list[BaseException] = []

            async def call() -> None:
                try:
                    await session.call_tool("slow", {})
                except McpError as exc:
                    failure.append(exc)

            request_id = session._request_id
            async with trio.open_nursery() as nursery:
                nursery.start_soon(call)
                await state.slow_started.wait()
                await session.send_notification(
                    types.ClientNotification(
                        types.CancelledNotification(
                            params=types.CancelledNotificationParams(requestId=request_id)
                        )
                    )
                )
                await state.slow_cancelled.wait()
            again = await session.call_tool("echo", {"text": "after"})
    assert first_text(again) == "after"
    assert failure  # the SDK answers a cancelled request with an error
    assert outcomes[0].error.code == "ABORTED"


async def hundred_limited_calls(session: ClientSession) -> list[types.CallToolResult]:
    """100 concurrent calls of the tool limited to 3 bodies at once."""
    results: list[types.CallToolResult] = []

    async def call() -> None:
        results.append(await session.call_tool("limited", {}))

    async with trio.open_nursery() as nursery:
        for _ in range(100):
            nursery.start_soon(call)
    assert len(results) == 100
    return results


async def test_a_hundred_concurrent_calls_honour_the_per_tool_limit() -> None:
    registry = mcp_serve_tools.make()
    state = registry.state  # type: ignore[attr-defined]
    with trio.fail_after(LIMIT):
        async with in_process(registry) as session:
            results = await hundred_limited_calls(session)
    assert not any(r.isError for r in results)
    assert state.most == 3  # they did overlap, and never past the limit


async def test_a_hundred_concurrent_calls_over_stdio() -> None:
    with trio.fail_after(LIMIT * 2):
        async with over_stdio() as session:
            results = await hundred_limited_calls(session)
    assert max(int(first_text(r)) for r in results) == 3


async def test_the_client_hears_when_the_registry_changes() -> None:
    registry = ToolRegistry()
    changed = trio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ServerNotification) and isinstance(
            message.root, types.ToolListChangedNotification
        ):
            changed.set()

    async def body(args: Any, ctx: Any) -> str:
        return "new"

    with trio.fail_after(LIMIT):
        async with in_process(registry, message_handler=on_message) as session:
            assert (await session.list_tools()).tools == []
            registry.register(define_tool(name="new", description="d", parameters={}, execute=body))
            await changed.wait()
            assert [t.name for t in (await session.list_tools()).tools] == ["new"]
