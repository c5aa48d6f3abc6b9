"""Serving a registry over MCP: every ``tools/call`` runs through the whole pipeline.

:func:`mcp_server` builds an SDK low-level server whose ``tools/list`` projects the
registry (or a scope) and whose ``tools/call`` runs :meth:`ToolRegistry.execute` —
policies, guards, timeouts, observers and per-tool limits all apply. The SDK runs
every request in a task of its own, so calls from one client overlap.

The server runs on whichever loop runs it: on trio (this module), each call's
pipeline runs in a task of the server's (out of reach of the request's cancellation),
under a :class:`CancelSignal` of its own: when MCP cancels the request (or the
transport closes), the handler fires that signal and waits for the pipeline to finish,
so the call ends as ``ABORTED`` through the same path as any other cancellation,
observers and recorder included. Progress and log messages a body reports travel
through a per-call channel that is drained before the response is sent. On asyncio
(uvicorn, hypercorn's asyncio worker) the lifespan and the calls are ``_aioserve``'s,
through ``toolnursery.aio``'s ``execute``; what both share is ``_served``'s.
Streamable HTTP lives in ``_http``.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import AsyncIterator, Callable, Container
from contextlib import asynccontextmanager
from typing import Any

import mcp.types as types
import trio
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler

from .._core._asking import asking
from .._core._content import ToolExecutionResult
from .._core._json import thaw
from .._core._progress import CallReport, reporting
from .._core._signal import CancelSignal
from .._pipeline._registry import ToolRegistry, ToolScope
from .._tools._output import output_schema
from ._aioserve import AsyncioServed, serving_on_asyncio
from ._asking import CallQuestions, ask_the_client
from ._convert import annotations_to_mcp, served_hints
from ._served import (
    ERROR_META_KEY,
    LEVEL_KEY,
    LEVELS,
    Served,
    call_input,
    connection,
    log_levels,
    reply,
    send_report,
)

__all__ = ["ERROR_META_KEY", "mcp_server", "serve_mcp_stdio"]


def mcp_server(
    registry: ToolRegistry,
    *,
    scope: ToolScope | None = None,
    deps: Any = None,
    name: str = "toolnursery",
    version: str | None = None,
    title: str | None = None,
    description: str | None = None,
    instructions: str | None = None,
) -> Server[Any]:
    """An MCP server (the SDK's low-level ``Server``) serving ``registry``'s tools.

    ``tools/list`` gives each visible tool's name, description and parameters (its
    JSON Schema, verbatim), its output schema when it declares one, and the MCP
    annotations and title it declares (its ``mcp_annotations`` option).
    ``tools/call`` runs the call through ``registry.execute`` as the scope's agent:
    a failed call (a denial, a timeout, invalid arguments, an unknown tool, a body
    that raised) is an ``isError`` result whose text is the model-facing
    ``Error: …`` message and whose ``_meta["toolnursery/error"]`` is its
    ``{name, code}``; a structured output is ``structuredContent``. Each call's
    ``ctx.idempotency_key`` is unique across sessions and reconnects. The server
    answers ``logging/setLevel`` (per session); tool bodies' progress and log
    messages become ``notifications/progress`` (when the client asked for
    progress) and ``notifications/message``. It advertises ``tools.listChanged``:
    a client is told when the registry changes while its session is open (on
    2026-07-28, through ``subscriptions/listen``).

    ``deps`` is the host's dependencies object, passed to every served call's
    ``registry.execute(..., deps=deps)``: bodies read it as ``ctx.deps``, and
    ``@tool`` parameters marked ``Depends(...)`` are resolved from it (they are not
    in the listed input schema, so a client cannot supply them).

    It runs on trio or on asyncio, whichever runs it: under an asyncio host
    (uvicorn, hypercorn's asyncio worker, the SDK's client under ``asyncio.run``)
    each call runs through ``toolnursery.aio.execute``, natively on the loop when the
    tool and the hooks allow, in the trio guest run otherwise (see ``docs/mcp.md``).

    The server holds nothing of the registry's until it runs: it listens for the
    registry's changes while it runs (the SDK enters its lifespan), and forgets
    each session when that session ends.

    Args:
        registry: the tools to serve.
        scope: serve this scope's view, and run calls as its agent.
        deps: the dependencies every served call runs with (``ctx.deps``).
        name: the server name in ``serverInfo``.
        version: the server version (default: toolnursery's).
        title: the server's human-readable title in ``serverInfo``.
        description: the server's description in ``serverInfo``.
        instructions: instructions for the client, if any.

    Returns:
        The server; run it with the SDK, :func:`serve_mcp_stdio` or
        :func:`serve_mcp_http`.
    """
    bus = InMemorySubscriptionBus()

    @asynccontextmanager
    async def lifespan(_: Server[Any]) -> AsyncIterator[Served]:
        if not trio.lowlevel.in_trio_task():  # an asyncio host: see ``_aioserve``
            async with serving_on_asyncio(registry, bus) as on_asyncio:
                yield on_asyncio
            return
        async with trio.open_nursery() as nursery:
            served = _Served(bus, nursery)
            nursery.start_soon(served.announce_changes)
            disposers = [registry.on_change(served.changed)]
            if registry.approval is None:
                disposers.append(ask_the_client(registry))
            try:
                yield served
            finally:
                for dispose in disposers:
                    dispose()
                nursery.cancel_scope.cancel()

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=_tools(registry, scope))

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> Any:  # a CallToolResult's wire form, or an InputRequiredResult
        served = ctx.lifespan_context
        if type(served) is AsyncioServed:
            return await served.call(registry, scope, deps, ctx, params)
        return await _call(registry, scope, deps, ctx, params)

    async def set_level(
        ctx: ServerRequestContext[Any], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        connection(ctx).state[LEVEL_KEY] = LEVELS.index(params.level)
        return types.EmptyResult()

    async def initialized(ctx: ServerRequestContext[Any], params: types.NotificationParams) -> None:
        ctx.lifespan_context.track(connection(ctx))

    def input_schema(tool: str) -> dict[str, Any] | None:
        # For the 2026-07-28 ``Mcp-Param-*`` header check: one tool, not a listing.
        definition = registry.get(tool, scope)
        return None if definition is None else thaw(definition.parameters)

    server: Server[Any] = _ToolServer(
        name,
        version=version or _version(),
        title=title,
        description=description,
        instructions=instructions,
        lifespan=lifespan,
        get_tool_input_schema=input_schema,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_subscriptions_listen=ListenHandler(bus),
    )
    # Registered here rather than as ``on_set_logging_level``, which warns that the
    # 2026-07-28 revision deprecates logging: this server still serves 2025-11-25.
    server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)
    server.add_notification_handler(
        "notifications/initialized", types.NotificationParams, initialized
    )
    return server


class _ToolServer(Server[Any]):
    """The SDK's server, advertising ``tools.listChanged`` whoever runs it."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True),
            experimental_capabilities,
            extensions,
        )


class _Served(Served):
    """One run of a server on trio: its nursery runs the calls' pipelines and report
    forwarders (each awaited by its call), and announces the registry's changes."""

    def __init__(self, bus: InMemorySubscriptionBus, nursery: trio.Nursery) -> None:
        super().__init__(bus)
        self.nursery = nursery
        self._token = trio.lowlevel.current_trio_token()
        self._send, self._receive = trio.open_memory_channel[None](1)

    def changed(self) -> None:
        # A registry may change from a worker thread (a sync tool body registering).
        if trio.lowlevel.in_trio_run():
            self._wake()
        else:
            trio.from_thread.run_sync(self._wake, trio_token=self._token)

    def _wake(self) -> None:
        # Changes coalesce: one announcement covers every change made before it.
        with contextlib.suppress(trio.WouldBlock, trio.ClosedResourceError):
            self._send.send_nowait(None)

    async def announce_changes(self) -> None:
        async for _ in self._receive:
            await self.announce()


async def _call(
    registry: ToolRegistry,
    scope: ToolScope | None,
    deps: Any,
    ctx: ServerRequestContext[_Served],
    params: types.CallToolRequestParams,
) -> dict[str, Any] | types.InputRequiredResult:
    """Run one ``tools/call`` through the pipeline, forwarding its reports and
    putting its questions to the client."""
    signal = CancelSignal()
    execution = call_input(ctx, params, scope, signal)
    served = ctx.lifespan_context
    questions = CallQuestions(ctx, params, served.secret)
    forwarder = _Forwarder(ctx, served.nursery)
    outcome: list[ToolExecutionResult] = []
    failure: list[Exception] = []
    done = trio.Event()

    async def run() -> None:
        # In the server's nursery (a nursery per call costs more than the call's
        # pipeline), out of reach of the request's cancellation: MCP cancellation
        # reaches the call through its signal, so it ends through the pipeline like
        # any other cancellation. The handler waits for it whatever happens, so the
        # call never outlives it (nor does it see the server's nursery cancelled).
        try:
            questions.install()
            with forwarder, reporting(forwarder.sink), asking(questions):
                outcome.append(await registry.execute(execution, deps=deps))
        except Exception as exc:  # re-raised by the handler, not the server's nursery
            failure.append(exc)
        finally:
            done.set()

    served.nursery.start_soon(run)
    try:
        await done.wait()
        await forwarder.finished()
    except trio.Cancelled:
        signal.cancel("cancelled by the MCP client")
        forwarder.abandon()
        with trio.CancelScope(shield=True):
            await done.wait()
            await forwarder.finished()
        raise
    if failure:
        raise failure[0]
    return reply(questions, outcome[0])


class _Forwarder:
    """A call's reports, sent to the client in order by a task started on the first.

    The sink is synchronous (bodies report without awaiting) and always runs in the
    trio thread; a call that reports nothing costs no task.
    """

    def __init__(self, ctx: ServerRequestContext[Any], nursery: trio.Nursery) -> None:
        self._ctx = ctx
        self._nursery = nursery
        self._send: trio.MemorySendChannel[CallReport] | None = None
        self._done: trio.Event | None = None
        self._scope = trio.CancelScope()

    def sink(self, report: CallReport) -> None:
        if self._scope.cancel_called:
            return  # abandoned: the request is gone, nobody to tell
        if self._send is None:
            self._send, receive = trio.open_memory_channel[CallReport](math.inf)
            self._done = trio.Event()
            self._nursery.start_soon(self._forward, receive, log_levels(self._ctx))
        self._send.send_nowait(report)

    def abandon(self) -> None:
        """Stop sending (the request was cancelled): the task ends at once."""
        self._scope.cancel()

    async def finished(self) -> None:
        """Wait until every report made has been sent (or dropped)."""
        if self._done is not None:
            await self._done.wait()

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc_info: object) -> None:
        if self._send is not None:
            self._send.close()

    async def _forward(
        self,
        reports: trio.MemoryReceiveChannel[CallReport],
        allowed: Callable[[], Container[str]],
    ) -> None:
        ctx = self._ctx
        try:
            with self._scope, reports:
                await self._send_all(ctx, reports, allowed)
        finally:
            assert self._done is not None
            self._done.set()

    async def _send_all(
        self,
        ctx: ServerRequestContext[Any],
        reports: trio.MemoryReceiveChannel[CallReport],
        allowed: Callable[[], Container[str]],
    ) -> None:
        async for report in reports:
            await send_report(ctx, report, allowed)


def _tools(registry: ToolRegistry, scope: ToolScope | None) -> list[types.Tool]:
    tools: list[types.Tool] = []
    for schema in registry.schemas(scope):
        definition = registry.get(schema.name, scope)
        hints = None if definition is None else served_hints(definition)
        output = None if definition is None else output_schema(definition)
        tools.append(
            types.Tool(
                name=schema.name,
                title=hints.title if hints is not None else None,
                description=schema.description,
                input_schema=schema.parameters,
                output_schema=thaw(output) if output is not None else None,
                annotations=annotations_to_mcp(hints) if hints is not None else None,
            )
        )
    return tools


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("toolnursery")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0"


async def serve_mcp_stdio(
    registry: ToolRegistry,
    *,
    scope: ToolScope | None = None,
    deps: Any = None,
    name: str = "toolnursery",
) -> None:
    """Serve ``registry`` over stdio until the client closes stdin (under ``trio.run``
    or ``asyncio.run``: see :func:`mcp_server`).

    Args:
        registry: the tools to serve.
        scope: serve this scope's view, and run calls as its agent.
        deps: the dependencies every served call runs with (``ctx.deps``).
        name: the server name in ``serverInfo``.
    """
    from mcp.server.stdio import stdio_server

    server = mcp_server(registry, scope=scope, deps=deps, name=name)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())
