"""Reaching an MCP server: the in-process streams, the POST gate, the watched transport."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio
import trio.testing

pytest.importorskip("mcp")

import anyio
import httpx
from mcp.client.session import ClientSession

import mcp_fixture_server as fixture
from toolnursery._mcp._transport import PostGate, WatchedTransport, open_transport


def never_broken() -> None:
    raise AssertionError("reported a broken connection")


async def test_an_in_process_server_answers_a_session() -> None:
    with trio.fail_after(10):
        async with (
            open_transport(None, None, fixture.build(), None, None, None, never_broken) as (
                read,
                write,
            ),
            ClientSession(read, write) as session,
        ):
            result = await session.initialize()
            tools = await session.list_tools()
    assert result.serverInfo.name == "fixture"
    assert "echo" in [t.name for t in tools.tools]


class FakeRequest:
    def __init__(self, method: str) -> None:
        self.method = method


async def test_the_gate_passes_the_next_message_once_a_post_begins(
    autojump_clock: trio.testing.MockClock,
) -> None:
    posts = PostGate()
    into, gate_source = anyio.create_memory_object_stream[Any](0)
    gate_sink, out = anyio.create_memory_object_stream[Any](0)
    async with into, out, trio.open_nursery() as nursery:
        nursery.start_soon(posts.gate, gate_source, gate_sink)
        nursery.start_soon(into.send, "first")
        assert await out.receive() == "first"
        nursery.start_soon(into.send, "second")
        await trio.testing.wait_all_tasks_blocked()
        with trio.move_on_after(1):
            await out.receive()
            pytest.fail("the second message passed before the first one's POST began")
        await posts.seen(FakeRequest("GET"))  # only a POST counts
        await posts.seen(FakeRequest("POST"))
        with trio.fail_after(0.1):
            assert await out.receive() == "second"
        await into.aclose()
    assert posts.count == 1


async def test_the_gate_gives_up_waiting_for_a_post_after_a_bound(
    autojump_clock: trio.testing.MockClock,
) -> None:
    posts = PostGate()
    into, gate_source = anyio.create_memory_object_stream[Any](0)
    gate_sink, out = anyio.create_memory_object_stream[Any](0)
    async with into, out, trio.open_nursery() as nursery:
        nursery.start_soon(posts.gate, gate_source, gate_sink)
        await into.send("first")
        assert await out.receive() == "first"
        start = trio.current_time()
        nursery.start_soon(into.send, "second")
        assert await out.receive() == "second"
        assert 4.9 <= trio.current_time() - start <= 5.1
        await into.aclose()


class FailingBody(httpx.AsyncByteStream):
    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield b"partial"
        raise httpx.ReadError("connection reset")


def watched(handler: Any, broken: list[str]) -> httpx.AsyncClient:
    inner = httpx.MockTransport(handler)
    return httpx.AsyncClient(transport=WatchedTransport(inner, lambda: broken.append("broken")))


async def test_a_healthy_exchange_reports_nothing() -> None:
    broken: list[str] = []
    async with watched(lambda request: httpx.Response(200, content=b"fine"), broken) as client:
        response = await client.get("http://server/mcp")
    assert response.content == b"fine"
    assert broken == []


async def test_a_request_that_fails_is_reported_and_raised() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    broken: list[str] = []
    async with watched(refuse, broken) as client:
        with pytest.raises(httpx.ConnectError):
            await client.get("http://server/mcp")
    assert broken == ["broken"]


async def test_a_body_that_breaks_while_read_is_reported_and_raised() -> None:
    broken: list[str] = []

    def failing(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, stream=FailingBody())

    async with (
        watched(failing, broken) as client,
        client.stream("GET", "http://server/mcp") as response,
    ):
        with pytest.raises(httpx.ReadError):
            async for _ in response.aiter_bytes():
                pass
    assert broken == ["broken"]
