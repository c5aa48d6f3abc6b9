"""The three ways to reach an MCP server, each as the SDK's pair of message streams.

A stdio program, a streamable-HTTP endpoint or an in-process SDK server:
:func:`open_transport` enters the SDK's client for the one given and yields its read
and write streams. The HTTP path adds two repairs around the SDK's 1.x client: a gate
that hands it one message at a time, and an httpx transport that reports a connection
breaking mid-request, which the mount answers with a ping.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, Final

import anyio
import httpx
import trio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

__all__ = ["PostGate", "WatchedTransport", "open_transport"]

_Streams = tuple[
    MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]
]


class PostGate:
    """One message at a time into the SDK's streamable-HTTP client.

    The 1.x client starts a task per request whose closure reads the loop's
    *current* message, so a second message that arrives before that task has
    started is posted twice and the first never (seen under trio, which runs the
    tasks of a batch in either order). The gate hands the client the next message
    only once the previous one's POST has begun (an httpx request hook counts
    them), or after a short bound.
    """

    def __init__(self) -> None:
        self.count = 0
        self._changed = trio.Event()

    async def seen(self, request: Any) -> None:
        """The httpx request hook: count a POST as begun."""
        if request.method == "POST":
            self.count += 1
            self._changed.set()
            self._changed = trio.Event()

    async def gate(
        self,
        source: MemoryObjectReceiveStream[SessionMessage],
        sink: MemoryObjectSendStream[SessionMessage],
    ) -> None:
        """Pass ``source`` on to ``sink`` one message per POST begun (or per bound)."""
        async with source, sink:
            async for message in source:
                before = self.count
                await sink.send(message)
                with trio.move_on_after(_POST_START_BOUND):
                    while self.count == before:
                        await self._changed.wait()


_POST_START_BOUND: Final = 5.0


class WatchedTransport(httpx.AsyncBaseTransport):
    """An httpx transport that reports a connection failing mid-request or mid-body."""

    def __init__(self, inner: httpx.AsyncBaseTransport, broken: Callable[[], None]) -> None:
        self._inner = inner
        self._broken = broken

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            response = await self._inner.handle_async_request(request)
        except httpx.TransportError:
            self._broken()
            raise
        response.stream = _WatchedBody(response.stream, self._broken)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


class _WatchedBody(httpx.AsyncByteStream):
    """A response body that reports a transport error while it is read."""

    def __init__(self, inner: Any, broken: Callable[[], None]) -> None:
        self._inner = inner
        self._broken = broken
        self._chunks: Any = None

    def __aiter__(self) -> _WatchedBody:
        self._chunks = self._inner.__aiter__()
        return self

    async def __anext__(self) -> bytes:
        try:
            chunk: bytes = await self._chunks.__anext__()
        except httpx.TransportError:
            self._broken()
            raise
        return chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


@asynccontextmanager
async def open_transport(
    command: Sequence[str] | None,
    url: str | None,
    server: Any,
    env: Mapping[str, str] | None,
    cwd: str | None,
    headers: Mapping[str, str] | None,
    broken: Callable[[], None],
) -> AsyncIterator[_Streams]:
    """Connect to the server given by exactly one of ``command``, ``url``, ``server``.

    Args:
        command: a stdio server's program and arguments.
        url: a streamable-HTTP endpoint.
        server: an in-process SDK server (low-level ``Server`` or ``FastMCP``).
        env: extra environment variables for a stdio server.
        cwd: the working directory of a stdio server.
        headers: extra HTTP headers for a streamable-HTTP server.
        broken: called when an HTTP connection fails mid-request or mid-body.

    Yields:
        The read and write streams a ``ClientSession`` runs on.
    """
    if command is not None:
        from mcp.client.stdio import StdioServerParameters, stdio_client

        params = StdioServerParameters(
            command=command[0], args=list(command[1:]), env=dict(env) if env else None, cwd=cwd
        )
        async with stdio_client(params) as streams:
            yield streams
    elif url is not None:
        from mcp.client.streamable_http import streamable_http_client

        posts = PostGate()
        async with (
            httpx.AsyncClient(
                headers=dict(headers or {}),
                timeout=httpx.Timeout(30, read=300),
                event_hooks={"request": [posts.seen]},
                transport=WatchedTransport(httpx.AsyncHTTPTransport(), broken),
            ) as client,
            streamable_http_client(url, http_client=client) as (read, write, _),
            trio.open_nursery() as nursery,
        ):
            gated, gate_source = anyio.create_memory_object_stream[SessionMessage](0)
            nursery.start_soon(posts.gate, gate_source, write)
            try:
                yield read, gated
            finally:
                nursery.cancel_scope.cancel()
    else:
        from mcp.shared.memory import create_client_server_memory_streams

        lowlevel = getattr(server, "_mcp_server", server)
        async with (
            create_client_server_memory_streams() as (client_streams, server_streams),
            trio.open_nursery() as nursery,
        ):
            nursery.start_soon(
                lambda: lowlevel.run(*server_streams, lowlevel.create_initialization_options())
            )
            try:
                yield client_streams
            finally:
                nursery.cancel_scope.cancel()
