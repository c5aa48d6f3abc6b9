"""Serving a registry over streamable HTTP: the ASGI app, hypercorn, and who may call.

:func:`mcp_asgi_app` wraps the SDK's session manager (both revisions: 2025-11-25
sessions, 2026-07-28 stateless requests; resumable SSE streams) with the checks that
decide who may call: DNS-rebinding protection for a loopback server, and a bearer
token; any ASGI server runs it, on trio or asyncio. :func:`serve_mcp_http` runs it
with hypercorn on trio, and refuses to bind
beyond loopback without an explicit opt-in and a token.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
from collections.abc import Sequence
from typing import Any

import trio
from mcp.server.streamable_http import EventStore
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from .._pipeline._registry import ToolRegistry, ToolScope
from ._asking import PRIMED_KEY
from ._events import MemoryEventStore
from ._serve import mcp_server

__all__ = ["RemoteServeError", "check_bind", "mcp_asgi_app", "serve_mcp_http"]


def mcp_asgi_app(
    registry: ToolRegistry,
    *,
    scope: ToolScope | None = None,
    deps: Any = None,
    name: str = "toolnursery",
    path: str = "/mcp",
    allowed_hosts: Sequence[str] | None = None,
    token: str | None = None,
    max_events: int = 10_000,
    retry_ms: int | None = 1000,
) -> Any:
    """An ASGI application serving ``registry`` over streamable HTTP at ``path``.

    It handles the ASGI lifespan itself (the SDK's session manager runs from
    startup to shutdown); requests to any other path get 404. It serves both
    revisions: 2025-11-25 sessions (``Mcp-Session-Id``) and 2026-07-28 stateless
    requests.

    With ``allowed_hosts``, requests are protected against DNS rebinding: a
    request whose ``Host`` header is not one of them gets 421, and one whose
    ``Origin`` header is present but not ``http://`` or ``https://`` one of them
    gets 403. A pattern ending in ``:*`` matches the host on any port
    (``"localhost:*"``). Without it (the default) headers are not checked.

    With ``token``, every request must carry ``Authorization: Bearer <token>``;
    one that does not gets 401.

    Streams are resumable: the server keeps the latest ``max_events`` messages it
    sent on SSE streams (0: none, streams are not resumable), and a client whose
    stream dropped reconnects with ``Last-Event-ID`` and gets what it missed, the
    call's result included; ``retry_ms`` is the reconnection delay suggested to
    clients.

    ``scope``, ``deps`` and ``name`` are :func:`mcp_server`'s: every served call
    runs with ``deps`` (``ctx.deps``).

    Any ASGI server runs it, on trio (hypercorn's trio worker, as
    :func:`serve_mcp_http` does) or on asyncio (uvicorn, hypercorn's asyncio
    worker): on asyncio, calls run on ``toolnursery.aio``'s native driver when the
    tool and the hooks allow, in the trio guest run otherwise.
    """
    from mcp.server.transport_security import TransportSecuritySettings

    if token is not None and not token.strip():
        raise ValueError("mcp_asgi_app(): token must not be empty")
    security = None
    if allowed_hosts is not None:
        hosts = list(allowed_hosts)
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=hosts,
            allowed_origins=[
                f"{scheme}://{host}" for scheme in ("http", "https") for host in hosts
            ],
        )
    manager = _SessionManager(
        app=mcp_server(registry, scope=scope, deps=deps, name=name),
        security_settings=security,
        event_store=MemoryEventStore(max_events) if max_events else None,
        retry_interval=retry_ms if max_events else None,
    )
    expected = None if token is None else f"Bearer {token}".encode()

    async def app(asgi_scope: Any, receive: Any, send: Any) -> None:
        kind = asgi_scope["type"]
        if kind == "lifespan":
            await _lifespan(manager, receive, send)
        elif kind != "http":
            return
        elif asgi_scope["path"].rstrip("/") != path.rstrip("/"):
            await _respond(send, 404, b"not found")
        elif expected is not None and not _authorized(asgi_scope, expected):
            await _respond(
                send, 401, b"unauthorized", [(b"www-authenticate", b'Bearer realm="mcp"')]
            )
        else:
            await _handle(manager, asgi_scope, receive, send)

    return app


async def _handle(manager: _SessionManager, asgi_scope: Any, receive: Any, send: Any) -> None:
    """One request to the SDK, with an event set once its response sent its first bytes
    (a body closing its POST stream waits for it: see ``close_sse_stream``)."""
    primed: trio.Event | asyncio.Event = (
        trio.Event() if trio.lowlevel.in_trio_task() else asyncio.Event()
    )

    async def sending(message: Any) -> None:
        await send(message)
        if message["type"] == "http.response.body":
            primed.set()

    try:
        await manager.handle_request({**asgi_scope, PRIMED_KEY: primed}, receive, sending)
    finally:
        primed.set()


class _SessionManager(StreamableHTTPSessionManager):
    """The SDK's session manager, with one event store whose sessions cannot see
    each other's events.

    The SDK hands ``event_store`` to the transport of each session it admits, and a
    transport names its POST streams by JSON-RPC request id, which two sessions may
    share; so every read of ``event_store`` gives a fresh view of the one bounded
    store (:meth:`MemoryEventStore.for_session`), and a session replays only what
    its own transport stored.
    """

    @property
    def event_store(self) -> EventStore | None:
        shared = self._shared_events
        return None if shared is None else shared.for_session()

    @event_store.setter
    def event_store(self, store: EventStore | None) -> None:
        if store is not None and not isinstance(store, MemoryEventStore):
            raise TypeError("an HTTP server's event store is a MemoryEventStore")
        self._shared_events = store


def _authorized(asgi_scope: Any, expected: bytes) -> bool:
    given = next(
        (value for key, value in asgi_scope["headers"] if key.lower() == b"authorization"), b""
    )
    return hmac.compare_digest(given, expected)


async def _respond(
    send: Any, status: int, body: bytes, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers or []})
    await send({"type": "http.response.body", "body": body})


async def _lifespan(manager: Any, receive: Any, send: Any) -> None:
    message = await receive()
    assert message["type"] == "lifespan.startup"
    async with manager.run():
        await send({"type": "lifespan.startup.complete"})
        while (await receive())["type"] != "lifespan.shutdown":
            pass
    await send({"type": "lifespan.shutdown.complete"})


class RemoteServeError(ValueError):
    """Raised when :func:`serve_mcp_http` is asked to bind beyond loopback unsafely.

    A non-loopback address serves the tools to the network: it needs
    ``allow_remote=True`` and a bearer ``token``.
    """


async def serve_mcp_http(
    registry: ToolRegistry,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    scope: ToolScope | None = None,
    deps: Any = None,
    name: str = "toolnursery",
    path: str = "/mcp",
    allow_remote: bool = False,
    token: str | None = None,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``registry`` over streamable HTTP (hypercorn on trio) until cancelled.

    Use ``await nursery.start(serve_mcp_http, registry, host, 0)`` to bind a free
    port: ``start`` returns the endpoint's URL (``http://127.0.0.1:PORT/mcp``).

    Bound to a loopback address (``127.0.0.1``, ``localhost``, ``::1``), the server
    answers only requests addressed to a loopback name (``Host`` and, when present,
    ``Origin``), so a web page the user visits cannot reach it through DNS
    rebinding; see :func:`mcp_asgi_app`'s ``allowed_hosts``. Any other address
    exposes the tools to the network: it needs ``allow_remote=True`` and a
    ``token``, which every request must then present as ``Authorization: Bearer``.

    Args:
        registry: the tools to serve.
        host: the address to bind.
        port: the port to bind (0: any free port).
        scope: serve this scope's view, and run calls as its agent.
        deps: the dependencies every served call runs with (``ctx.deps``).
        name: the server name in ``serverInfo``.
        path: the endpoint's path.
        allow_remote: allow binding an address beyond loopback.
        token: the bearer token requests must carry (required beyond loopback).
        task_status: reports the URL once the server listens.

    Raises:
        RemoteServeError: ``host`` is not loopback, and ``allow_remote`` is not set
            or no ``token`` is given.
    """
    from hypercorn.config import Config
    from hypercorn.trio import serve

    check_bind(host, allow_remote=allow_remote, token=token)
    loopback = _loopback_hosts(host)
    config = Config()
    bare = host.removeprefix("[").removesuffix("]")
    config.bind = [f"[{bare}]:{port}" if ":" in bare else f"{bare}:{port}"]
    config.loglevel = "WARNING"
    config.accesslog = None
    app = mcp_asgi_app(
        registry,
        scope=scope,
        deps=deps,
        name=name,
        path=path,
        allowed_hosts=loopback,
        token=token,
    )
    async with trio.open_nursery() as nursery:
        urls = await nursery.start(serve, app, config)
        task_status.started(urls[0] + path)


def check_bind(host: str, *, allow_remote: bool, token: str | None) -> None:
    """Refuse to serve on ``host`` beyond loopback without the opt-in and a token.

    Raises:
        RemoteServeError: ``host`` is not a loopback address, and ``allow_remote``
            is false or ``token`` is missing.
    """
    if _loopback_hosts(host) is None and not (allow_remote and token):
        raise RemoteServeError(
            f"refusing to serve MCP on {host!r}: beyond loopback the tools are open to the "
            "network; pass allow_remote=True and a bearer token"
        )


def _loopback_hosts(host: str) -> list[str] | None:
    """The ``Host`` patterns a server bound to ``host`` accepts when ``host`` is a
    loopback address: every loopback name, on any port; ``None`` for any other
    address (the server is meant to be reached under names it cannot know)."""
    bare = host.removeprefix("[").removesuffix("]")
    if bare != "localhost":
        try:
            if not ipaddress.ip_address(bare).is_loopback:
                return None
        except ValueError:
            return None
    names = {"127.0.0.1", "localhost", "[::1]", f"[{bare}]" if ":" in bare else bare}
    return sorted(f"{name}{port}" for name in names for port in ("", ":*"))
