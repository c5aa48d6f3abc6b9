"""Serving a registry over MCP: every ``tools/call`` runs through the whole pipeline.

:func:`mcp_server` builds an SDK low-level server whose ``tools/list`` projects the
registry (or a scope) and whose ``tools/call`` runs :meth:`ToolRegistry.execute` —
policies, guards, timeouts, observers and per-tool limits all apply. The SDK runs
every request in a task of its own, so calls from one client overlap.

Each call's pipeline runs in a task of the server's (out of reach of the request's
cancellation), under a :class:`CancelSignal` of its own: when MCP cancels the request
(or the transport closes), the handler fires that signal and waits for the pipeline
to finish, so the call ends as ``ABORTED`` through the same path as any other
cancellation, observers and recorder included. Progress and log messages a body
reports travel through a per-call channel that is drained before the response is
sent. Streamable HTTP lives in ``_http``.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import secrets
from collections.abc import AsyncIterator, Callable, Container
from contextlib import asynccontextmanager
from typing import Any, Final

import mcp.types as types
import msgspec
import trio
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from .._core._asking import asking
from .._core._content import ToolExecutionResult
from .._core._execution import ToolExecutionInput
from .._core._json import thaw
from .._core._progress import CallReport, ProgressReport, reporting
from .._core._signal import CancelSignal
from .._pipeline._registry import ToolRegistry, ToolScope
from .._tools._output import output_schema
from ._asking import CallQuestions, ask_the_client, new_secret
from ._convert import WRAPPED_META, annotations_to_mcp, served_hints, wrapped_value

__all__ = ["ERROR_META_KEY", "mcp_server", "serve_mcp_stdio"]

ERROR_META_KEY: Final = "toolnursery/error"
"""The ``_meta`` key of a failed call's ``{name, code}``."""

_UNCODED: Final = {"name": "ToolError", "code": "TOOL_ERROR"}
"""The ``{name, code}`` of a failed call whose result carries none."""

_LEVEL_KEY: Final = "toolnursery/log-level"
"""A session's ``logging/setLevel``, in its connection's state (an index in ``_LEVELS``)."""

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
    async def lifespan(_: Server[Any]) -> AsyncIterator[_Served]:
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
        ctx: ServerRequestContext[_Served], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=_tools(registry, scope))

    async def call_tool(
        ctx: ServerRequestContext[_Served], params: types.CallToolRequestParams
    ) -> Any:  # a CallToolResult's wire form, or an InputRequiredResult
        return await _call(registry, scope, deps, ctx, params)

    async def set_level(
        ctx: ServerRequestContext[_Served], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        _connection(ctx).state[_LEVEL_KEY] = _LEVELS.index(params.level)
        return types.EmptyResult()

    async def initialized(
        ctx: ServerRequestContext[_Served], params: types.NotificationParams
    ) -> None:
        ctx.lifespan_context.track(_connection(ctx))

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


class _Served:
    """One run of a server: its open sessions, and the registry's changes to announce.

    A session (a 2025 connection) is tracked from its ``notifications/initialized``
    until the SDK closes it; 2026-07-28 clients hear of changes on their
    ``subscriptions/listen`` streams, through the bus.
    """

    def __init__(self, bus: InMemorySubscriptionBus, nursery: trio.Nursery) -> None:
        self.bus = bus
        self.nursery = nursery
        """Runs the calls' pipelines and report forwarders (each awaited by its call)."""
        self.connections: set[Connection] = set()
        self._token = trio.lowlevel.current_trio_token()
        # Call keys: random per run (a restarted server never repeats one), counted
        # within it (cheaper than a uuid per call).
        self._key_prefix = secrets.token_hex(8)
        self.secret = new_secret()
        self._key_count = itertools.count()
        self._send, self._receive = trio.open_memory_channel[None](1)

    def next_call_key(self) -> str:
        return f"{self._key_prefix}-{next(self._key_count)}"

    def track(self, connection: Connection) -> None:
        if connection not in self.connections:
            self.connections.add(connection)
            connection.exit_stack.callback(self.connections.discard, connection)

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
            for connection in tuple(self.connections):
                await connection.send_tool_list_changed()
            await self.bus.publish(ToolsListChanged())


def _connection(ctx: ServerRequestContext[Any]) -> Connection:
    # The SDK hands low-level handlers a per-request session whose connection is not
    # public; the connection is what outlives the request (state, teardown).
    connection: Connection = ctx.session._connection
    return connection


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
    execution = ToolExecutionInput(
        # Unique per call: the request id repeats across sessions and reconnects, and
        # the call id is the idempotency key under ``registry.execute()``.
        call_id=f"{ctx.request_id}@{ctx.lifespan_context.next_call_key()}",
        name=params.name,
        arguments=params.arguments if params.arguments is not None else {},
        signal=signal,
        agent=scope,
    )
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
    if questions.input_required is not None:
        return questions.input_required
    result = outcome[0]
    if questions.missing is not None and _code(result) == "ELICITATION_UNAVAILABLE":
        raise questions.missing_capability_error()
    return _call_result(result)


def _code(result: ToolExecutionResult) -> str | None:
    return None if result.error is None else result.error.code


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
            self._nursery.start_soon(self._forward, receive, _log_levels(self._ctx))
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
            try:
                if isinstance(report, ProgressReport):
                    await ctx.session.report_progress(report.progress, report.total, report.message)
                elif report.level in allowed():
                    await ctx.session.send_notification(
                        types.LoggingMessageNotification(
                            params=types.LoggingMessageNotificationParams(
                                level=report.level, data=report.data, logger=report.logger
                            )
                        ),
                        related_request_id=ctx.request_id,
                    )
            except Exception:  # a notification is advisory, never the call's fate
                continue


def _log_levels(ctx: ServerRequestContext[Any]) -> Callable[[], Container[str]]:
    """The levels a call's log messages may be sent at, read when each is sent.

    2025: the session's ``logging/setLevel`` (all levels until one is set); 2026-07-28:
    the request's own opt-in (``_meta``), none without one.
    """
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        requested = (ctx.meta or {}).get(types.LOG_LEVEL_META_KEY)
        fixed = _LEVELS[_LEVELS.index(requested) :] if requested in _LEVELS else ()
        return lambda: fixed
    state = _connection(ctx).state
    return lambda: _LEVELS[state.get(_LEVEL_KEY, 0) :]


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


def _call_result(result: ToolExecutionResult) -> dict[str, Any]:
    """The wire form of a ``CallToolResult``: toolnursery's content and structured
    values are wire JSON already, and the SDK validates the result before sending it
    (a model built here would be built, dumped and validated again)."""
    wire: dict[str, Any] = {
        "content": list(msgspec.to_builtins(result.content)),
        "isError": result.is_error,
        "resultType": "complete",  # required from 2026-07-28; older peers ignore it
    }
    if result.error is not None:
        wire["_meta"] = {ERROR_META_KEY: {"name": result.error.name, "code": result.error.code}}
    elif result.is_error:
        # A failure without a code of its own (a denial, a body raising something
        # other than a ToolError) still tells the client it failed, and how.
        wire["_meta"] = {ERROR_META_KEY: dict(_UNCODED)}
    structured = result.structured_content
    if isinstance(structured, dict):
        wire["structuredContent"] = msgspec.to_builtins(structured)
    else:
        wrapped = wrapped_value(result)  # fastmcp's client reads it as ``data``
        if wrapped is not None:
            wire["structuredContent"] = wrapped
            wire["_meta"] = {WRAPPED_META: {"wrap_result": True}}
    return wire


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
    """Serve ``registry`` over stdio until the client closes stdin.

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
