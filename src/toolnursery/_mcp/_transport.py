"""The three ways to reach an MCP server, as what the SDK's ``Client`` connects to.

A stdio program or a streamable-HTTP endpoint becomes a :class:`WatchedTransport`:
the SDK's transport with a pump on its read side, so that the end of the connection
(the server exited, the HTTP client gave up on it) is seen when it happens — with
or without a call in flight — and reported with its cause. An in-process SDK server
is handed to ``Client`` as it is (the SDK connects to it directly).
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from types import TracebackType
from typing import Any, Final

import anyio
import httpx2
import trio
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.message import SessionMessage

__all__ = ["WatchedTransport", "connection_target", "describe"]

_Streams = tuple[Any, Any]

_HTTP_TIMEOUT: Final = 30.0
_HTTP_READ_TIMEOUT: Final = 300.0


class WatchedTransport:
    """An SDK transport whose read side is pumped, so its end is reported once.

    ``ended(why)`` is called when the server's side of the connection ends (the
    read stream closes, or the transport fails under a live connection), before the
    SDK's session sees the end; it is not called when the transport is closed
    from this side. ``cause()`` may name why it ended (the last connection failure).
    """

    def __init__(
        self,
        opener: Callable[[], AbstractAsyncContextManager[_Streams]],
        ended: Callable[[str], None],
        cause: Callable[[], str | None] = lambda: None,
    ) -> None:
        self._opener = opener
        self._ended = ended
        self._cause = cause
        self._stack: AbstractAsyncContextManager[_Streams] | None = None

    def cause(self) -> str | None:
        """The last connection failure seen, if any."""
        return self._cause()

    async def __aenter__(self) -> _Streams:
        self._stack = self._run()
        return await self._stack.__aenter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._stack is not None
        return await self._stack.__aexit__(exc_type, exc, tb)

    @asynccontextmanager
    async def _run(self) -> AsyncIterator[_Streams]:
        closing = False
        async with self._opener() as (read, write), trio.open_nursery() as nursery:
            sink, pumped = anyio.create_memory_object_stream[SessionMessage | Exception](0)

            async def pump() -> None:
                why = "the connection closed"
                try:
                    async with sink:
                        async for message in read:
                            await sink.send(message)
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    pass
                except Exception as exc:
                    why = f"the transport failed: {describe(exc)}"
                    raise
                finally:
                    if not closing:
                        cause = self._cause()
                        self._ended(why if cause is None else f"{why} after: {cause}")

            nursery.start_soon(pump)
            try:
                yield pumped, write
            finally:
                closing = True
                nursery.cancel_scope.cancel()
                pumped.close()


class _RecordingTransport(httpx2.AsyncBaseTransport):
    """Keeps the last connection failure: the SDK's client ends the connection on
    one without saying why, and the mount reports the cause."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, failures: list[str]) -> None:
        self._inner = inner
        self._failures = failures

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        try:
            return await self._inner.handle_async_request(request)
        except httpx2.TransportError as exc:
            self._failures.append(describe(exc))
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()


def describe(exc: BaseException) -> str:
    """One line naming an exception: its message, or its type when it has none."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def connection_target(
    command: Sequence[str] | None,
    url: str | None,
    server: Any,
    env: Mapping[str, str] | None,
    cwd: str | None,
    headers: Mapping[str, str] | None,
    ended: Callable[[str], None],
) -> Any:
    """What ``mcp.Client`` connects to for exactly one of ``command``, ``url``, ``server``.

    Args:
        command: a stdio server's program and arguments.
        url: a streamable-HTTP endpoint.
        server: an in-process SDK server (low-level ``Server`` or ``MCPServer``).
        env: extra environment variables for a stdio server.
        cwd: the working directory of a stdio server.
        headers: extra HTTP headers for a streamable-HTTP server.
        ended: called with the cause when the server's side of a stdio or HTTP
            connection ends.
    """
    if command is not None:
        params = StdioServerParameters(
            command=command[0], args=list(command[1:]), env=dict(env) if env else None, cwd=cwd
        )
        return WatchedTransport(lambda: stdio_client(params), ended)
    if url is not None:
        endpoint = url
        failures: list[str] = []

        @asynccontextmanager
        async def http() -> AsyncIterator[_Streams]:
            async with (
                httpx2.AsyncClient(
                    headers=dict(headers or {}),
                    timeout=httpx2.Timeout(_HTTP_TIMEOUT, read=_HTTP_READ_TIMEOUT),
                    transport=_RecordingTransport(httpx2.AsyncHTTPTransport(), failures),
                ) as client,
                streamable_http_client(endpoint, http_client=client) as streams,
            ):
                yield streams

        return WatchedTransport(http, ended, lambda: failures[-1] if failures else None)
    return _low_level(server)


def _low_level(server: Any) -> Any:
    """The SDK ``Server`` under a fastmcp ``FastMCP`` (itself otherwise).

    The SDK's ``Client`` runs a low-level ``Server`` (or its own ``MCPServer``) in
    process; a ``FastMCP`` keeps one as ``_mcp_server``, whose lifespan enters the
    ``FastMCP``'s own (its ``lifespan=``, providers, extensions) — the object fastmcp's
    in-memory transport runs too. fastmcp is looked at only if it was imported.
    """
    fastmcp: Any = sys.modules.get("fastmcp")
    if fastmcp is not None and isinstance(server, getattr(fastmcp, "FastMCP", ())):
        inner: Any = server
        return inner._mcp_server
    return server
