"""Reaching an MCP server: the in-process target and the watched transport's pump."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

pytest.importorskip("mcp")

import anyio
from mcp.client import Client
from mcp.shared.message import SessionMessage

import mcp_fixture_server as fixture
from toolnursery._mcp._transport import WatchedTransport, connection_target, describe


def never_ended(why: str) -> None:
    raise AssertionError(f"reported the end of the connection: {why}")


async def test_an_in_process_server_is_the_target_itself() -> None:
    server = fixture.build()
    target = connection_target(None, None, server, None, None, None, never_ended)
    assert target is server
    with trio.fail_after(10):
        async with Client(target) as client:
            tools = await client.list_tools()
    assert "echo" in [t.name for t in tools.tools]


def fake_transport() -> tuple[Any, Any, Any]:
    """A transport over memory streams; returns it and the server's two ends."""
    to_client, client_read = anyio.create_memory_object_stream[SessionMessage | Exception](1)
    client_write, from_client = anyio.create_memory_object_stream[SessionMessage](1)

    @asynccontextmanager
    async def opener() -> AsyncIterator[tuple[Any, Any]]:
        async with client_read, client_write:
            yield client_read, client_write

    return opener, to_client, from_client


async def test_the_server_closing_its_side_is_reported_once_with_the_cause() -> None:
    opener, to_client, from_client = fake_transport()
    ended: list[str] = []
    with trio.fail_after(5):
        async with WatchedTransport(opener, ended.append) as (read, _):
            await to_client.send(ValueError("not json"))
            assert isinstance(await read.receive(), ValueError)
            await to_client.aclose()
            with pytest.raises(anyio.EndOfStream):
                await read.receive()
            assert ended == ["the connection closed"]
    assert ended == ["the connection closed"]
    from_client.close()


async def test_closing_from_this_side_is_not_reported() -> None:
    opener, to_client, from_client = fake_transport()
    with trio.fail_after(5):
        async with WatchedTransport(opener, never_ended) as (_, write):
            assert write is not None
    to_client.close()
    from_client.close()


def test_describe_names_the_innermost_cause() -> None:
    assert describe(ExceptionGroup("g", [ConnectionError("reset")])) == "ConnectionError: reset"
    assert describe(TimeoutError()) == "TimeoutError"
