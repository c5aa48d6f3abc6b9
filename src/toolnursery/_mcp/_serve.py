"""Serving a registry over MCP: every ``tools/call`` runs through the whole pipeline.

:func:`mcp_server` builds an SDK low-level server whose ``tools/list`` projects the
registry (or a scope) and whose ``tools/call`` runs :meth:`ToolRegistry.execute` —
policies, guards, timeouts, observers and per-tool limits all apply. The SDK runs
every request in a task of its own, so calls from one client overlap.

Each call's pipeline runs in a shielded task of the handler's, under a
:class:`CancelSignal` of its own: when MCP cancels the request (or the transport
closes), the handler fires that signal and waits for the pipeline to finish, so the
call ends as ``ABORTED`` through the same path as any other cancellation, observers
and recorder included. Progress and log messages a body reports travel through a
per-call channel that is drained before the response is sent.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Callable, Sequence
from typing import Any, Final

import mcp.types as types
import trio
from mcp.server.lowlevel import NotificationOptions, Server

from .._core._content import ToolExecutionResult
from .._core._execution import ToolExecutionInput
from .._core._groups import bare_cancelled
from .._core._json import thaw
from .._core._progress import CallReport, ProgressReport, reporting
from .._core._signal import CancelSignal
from .._pipeline._registry import ToolRegistry, ToolScope
from .._tools._output import output_schema
from ._convert import annotations_to_mcp, blocks_to_mcp

__all__ = ["ERROR_META_KEY", "mcp_asgi_app", "mcp_server", "serve_mcp_http", "serve_mcp_stdio"]

ERROR_META_KEY: Final = "toolnursery/error"
"""The ``_meta`` key of a failed call's ``{name, code}``."""

_LEVELS: Final = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)


def mcp_server(
    registry: ToolRegistry,
    *,
    scope: ToolScope | None = None,
    name: str = "toolnursery",
    version: str | None = None,
    instructions: str | None = None,
) -> Server[Any, Any]:
    """An MCP server (the SDK's low-level ``Server``) serving ``registry``'s tools.

    ``tools/list`` gives each visible tool's name, description and parameters (its
    JSON Schema, verbatim), its output schema when it declares one, and the MCP
    annotations and title it declares (its ``mcp_annotations`` option).
    ``tools/call`` runs the call through ``registry.execute`` as the scope's agent:
    a failed call (a denial, a timeout, invalid arguments, an unknown tool, a body
    that raised) is an ``isError`` result whose text is the model-facing
    ``Error: …`` message and whose ``_meta["toolnursery/error"]`` is its
    ``{name, code}``; a structured output is ``structuredContent``. The server
    answers ``logging/setLevel``; tool bodies' progress and log messages become
    ``notifications/progress`` (when the client asked for progress) and
    ``notifications/message``. It advertises ``tools.listChanged`` (the client
    is told when the registry changes while the session is open).

    Args:
        registry: the tools to serve.
        scope: serve this scope's view, and run calls as its agent.
        name: the server name in ``serverInfo``.
        version: the server version (default: toolnursery's).
        instructions: instructions for the client, if any.

    Returns:
        The server; run it with the SDK, :func:`serve_mcp_stdio` or
        :func:`serve_mcp_http`.
    """
    server: Server[Any, Any] = Server(
        name, version=version or _version(), instructions=instructions
    )
    level = {"min": 0}
    sessions: set[Any] = set()

    async def list_tools(request: types.ListToolsRequest) -> types.ServerResult:
        sessions.add(server.request_context.session)
        return types.ServerResult(types.ListToolsResult(tools=_tools(registry, scope)))

    async def call_tool(request: types.CallToolRequest) -> types.ServerResult:
        context = server.request_context
        session = context.session
        sessions.add(session)
        params = request.params
        token = context.meta.progressToken if context.meta is not None else None
        request_id = context.request_id
        signal = CancelSignal()
        execution = ToolExecutionInput(
            call_id=str(request_id),
            name=params.name,
            arguments=params.arguments if params.arguments is not None else {},
            signal=signal,
            agent=scope,
        )
        outcome: list[ToolExecutionResult] = []
        send_report, reports = trio.open_memory_channel[CallReport](math.inf)

        async def forward() -> None:
            async for report in reports:
                if isinstance(report, ProgressReport):
                    if token is not None:
                        await session.send_progress_notification(
                            token,
                            report.progress,
                            total=report.total,
                            message=report.message,
                            related_request_id=str(request_id),
                        )
                elif _LEVELS.index(report.level) >= level["min"]:
                    await session.send_log_message(
                        report.level,
                        report.data,
                        logger=report.logger,
                        related_request_id=str(request_id),
                    )

        async def run() -> None:
            # Shielded: MCP cancellation reaches the call through its signal, so it
            # ends through the pipeline like any other cancellation.
            with trio.CancelScope(shield=True), send_report, reporting(send_report.send_nowait):
                outcome.append(await registry.execute(execution))

        with bare_cancelled():
            async with trio.open_nursery() as nursery:
                nursery.start_soon(forward)
                try:
                    await _wait_for(nursery, run)
                except trio.Cancelled:
                    signal.cancel("cancelled by the MCP client")
                    raise
        return types.ServerResult(_call_result(outcome[0]))

    async def set_level(request: types.SetLevelRequest) -> types.ServerResult:
        level["min"] = _LEVELS.index(request.params.level)
        return types.ServerResult(types.EmptyResult())

    server.request_handlers[types.ListToolsRequest] = list_tools
    server.request_handlers[types.CallToolRequest] = call_tool
    server.request_handlers[types.SetLevelRequest] = set_level

    def changed() -> None:
        for session in tuple(sessions):
            _notify_soon(session)

    registry.on_change(changed)
    server.create_initialization_options = _with_list_changed(server)  # type: ignore[method-assign]
    return server


async def _wait_for(nursery: trio.Nursery, run: Callable[[], Any]) -> None:
    """Run ``run`` in ``nursery`` and wait for it; a cancellation of the waiter is
    re-raised after ``run`` (shielded) has finished, when the nursery closes."""
    done = trio.Event()

    async def task() -> None:
        try:
            await run()
        finally:
            done.set()

    nursery.start_soon(task)
    await done.wait()


def _notify_soon(session: Any) -> None:
    # on_change listeners are synchronous; the notification is sent by the SDK's
    # session task group, which outlives any one request.
    group = getattr(session, "_task_group", None)
    if group is None:
        return

    async def send() -> None:
        try:
            await session.send_tool_list_changed()
        except Exception:  # the session closed meanwhile: nobody to tell
            return

    group.start_soon(send)


def _with_list_changed(server: Server[Any, Any]) -> Callable[..., Any]:
    original = server.create_initialization_options

    def create_initialization_options(
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
    ) -> Any:
        return original(
            notification_options or NotificationOptions(tools_changed=True),
            experimental_capabilities,
        )

    return create_initialization_options


def _tools(registry: ToolRegistry, scope: ToolScope | None) -> list[types.Tool]:
    tools: list[types.Tool] = []
    for schema in registry.schemas(scope):
        definition = registry.get(schema.name, scope)
        hints = None if definition is None else definition.mcp_annotations
        output = None if definition is None else output_schema(definition)
        tools.append(
            types.Tool(
                name=schema.name,
                title=hints.title if hints is not None else None,
                description=schema.description,
                inputSchema=schema.parameters,
                outputSchema=thaw(output) if output is not None else None,
                annotations=annotations_to_mcp(hints) if hints is not None else None,
            )
        )
    return tools


def _call_result(result: ToolExecutionResult) -> types.CallToolResult:
    meta: dict[str, Any] | None = None
    if result.error is not None:
        meta = {ERROR_META_KEY: {"name": result.error.name, "code": result.error.code}}
    structured = result.structured_content
    return types.CallToolResult(
        content=blocks_to_mcp(result.content),
        isError=result.is_error,
        structuredContent=thaw(structured) if isinstance(structured, dict) else None,
        _meta=meta,
    )


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("toolnursery")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0"


async def serve_mcp_stdio(
    registry: ToolRegistry, *, scope: ToolScope | None = None, name: str = "toolnursery"
) -> None:
    """Serve ``registry`` over stdio until the client closes stdin.

    Args:
        registry: the tools to serve.
        scope: serve this scope's view, and run calls as its agent.
        name: the server name in ``serverInfo``.
    """
    from mcp.server.stdio import stdio_server

    server = mcp_server(registry, scope=scope, name=name)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def mcp_asgi_app(
    registry: ToolRegistry,
    *,
    scope: ToolScope | None = None,
    name: str = "toolnursery",
    path: str = "/mcp",
    allowed_hosts: Sequence[str] | None = None,
) -> Any:
    """An ASGI application serving ``registry`` over streamable HTTP at ``path``.

    It handles the ASGI lifespan itself (the SDK's session manager runs from
    startup to shutdown); requests to any other path get 404.

    With ``allowed_hosts``, requests are protected against DNS rebinding: a
    request whose ``Host`` header is not one of them gets 421, and one whose
    ``Origin`` header is present but not ``http://`` or ``https://`` one of them
    gets 403. A pattern ending in ``:*`` matches the host on any port
    (``"localhost:*"``). Without it (the default) headers are not checked.
    """
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from mcp.server.transport_security import TransportSecuritySettings

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
    manager = StreamableHTTPSessionManager(
        app=mcp_server(registry, scope=scope, name=name), security_settings=security
    )

    async def app(asgi_scope: Any, receive: Any, send: Any) -> None:
        kind = asgi_scope["type"]
        if kind == "lifespan":
            await _lifespan(manager, receive, send)
        elif kind == "http" and asgi_scope["path"].rstrip("/") == path.rstrip("/"):
            await manager.handle_request(asgi_scope, receive, send)
        elif kind == "http":
            await send({"type": "http.response.start", "status": 404, "headers": []})
            await send({"type": "http.response.body", "body": b"not found"})

    return app


async def _lifespan(manager: Any, receive: Any, send: Any) -> None:
    message = await receive()
    assert message["type"] == "lifespan.startup"
    async with manager.run():
        await send({"type": "lifespan.startup.complete"})
        while (await receive())["type"] != "lifespan.shutdown":
            pass
    await send({"type": "lifespan.shutdown.complete"})


async def serve_mcp_http(
    registry: ToolRegistry,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    scope: ToolScope | None = None,
    name: str = "toolnursery",
    path: str = "/mcp",
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``registry`` over streamable HTTP (hypercorn on trio) until cancelled.

    Use ``await nursery.start(serve_mcp_http, registry, host, 0)`` to bind a free
    port: ``start`` returns the endpoint's URL (``http://127.0.0.1:PORT/mcp``).

    Bound to a loopback address (``127.0.0.1``, ``localhost``, ``::1``), the server
    answers only requests addressed to a loopback name (``Host`` and, when present,
    ``Origin``), so a web page the user visits cannot reach it through DNS
    rebinding; see :func:`mcp_asgi_app`'s ``allowed_hosts``.

    Args:
        registry: the tools to serve.
        host: the address to bind.
        port: the port to bind (0: any free port).
        scope: serve this scope's view, and run calls as its agent.
        name: the server name in ``serverInfo``.
        path: the endpoint's path.
        task_status: reports the URL once the server listens.
    """
    from hypercorn.config import Config
    from hypercorn.trio import serve

    config = Config()
    config.bind = [f"{host}:{port}"]
    config.loglevel = "WARNING"
    config.accesslog = None
    app = mcp_asgi_app(
        registry, scope=scope, name=name, path=path, allowed_hosts=_loopback_hosts(host)
    )
    async with trio.open_nursery() as nursery:
        urls = await nursery.start(serve, app, config)
        task_status.started(urls[0] + path)


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
