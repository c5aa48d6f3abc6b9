"""Mounting an MCP server: its tools registered as raw definitions, one session each.

One task owns the connection (transport, then the SDK's ``ClientSession``, both
entered and left in that task, as anyio requires). Between the transport and the
session sits a pump: when the transport's read side ends — the server exited or the
connection broke — the pump sees it first, the mount unregisters its tools and fails
every call in flight with :class:`McpServerGoneError`.

A call runs its request in a task of its own under a shielded scope, so that when
the call is cancelled (a batch abort, a timeout) the body can send
``notifications/cancelled`` and wait, within a bound, for the server's answer
before the call unwinds.

The transports live in ``_transport``, the tool list and the definitions made from
it in ``_listing``; this module owns the session and its lifetime.
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, Final

import anyio
import mcp.types as types
import trio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client.session import ClientSession
from mcp.shared.exceptions import McpError
from mcp.shared.message import SessionMessage

from .._core._content import TextContent, ToolReturn
from .._core._errors import (
    MCP_REQUEST_FAILED,
    McpCallError,
    McpMountError,
    McpServerGoneError,
    RegistrationError,
)
from .._core._execution import ToolRunContext
from .._core._groups import bare_cancelled, innermost
from .._core._json import thaw
from .._core._progress import ProgressReport, current_sink
from .._pipeline._registry import Disposer, ToolRegistry, ToolScope
from ._convert import blocks_from_mcp
from ._listing import checked_tools, list_all_tools, mounted_definition
from ._transport import open_transport

__all__ = ["McpMount", "open_mcp_mount"]

_log: Final = logging.getLogger("toolnursery.mcp")
_PING_BOUND: Final = 5.0


class McpMount:
    """A live mount: one MCP server's tools registered in a registry or a scope.

    Made by :func:`open_mcp_mount`; valid inside its ``async with`` block.
    """

    def __init__(self, owner: ToolRegistry | ToolScope, label: str, prefix: str, settle: float):
        self._owner = owner
        self._label = label
        self._prefix = prefix
        self._settle = settle
        self._session: ClientSession | None = None
        self._registered: dict[str, tuple[types.Tool, Disposer]] = {}
        self._in_flight: set[trio.CancelScope] = set()
        self._gone: str | None = None
        self._relist = trio.Event()
        self._suspicion = trio.Event()
        self._garbage: list[str] = []
        self.server_info: types.Implementation | None = None
        """The server's ``serverInfo`` from initialisation."""

    @property
    def names(self) -> tuple[str, ...]:
        """The registered tool names (with the prefix), in the server's order."""
        return tuple(self._registered)

    @property
    def gone(self) -> bool:
        """Whether the server's connection has ended (its tools are unregistered)."""
        return self._gone is not None

    async def refresh(self) -> None:
        """List the server's tools again and update the registrations to match.

        Raises:
            McpMountError: the new list cannot be registered; the previous
                registrations are kept.
            McpServerGoneError: the connection has ended.
        """
        session = self._require_session()
        try:
            tools = await list_all_tools(session)
        except McpError as exc:
            raise McpMountError(f"{self._label}: tools/list failed: {exc.error.message}") from exc
        self._apply(tools)

    # -- registration ----------------------------------------------------------------

    def _apply(self, tools: Sequence[types.Tool]) -> None:
        wanted = checked_tools(self._label, self._prefix, tools)
        definitions = {
            name: mounted_definition(name, tool, self._call)
            for name, tool in wanted.items()
            if name not in self._registered or self._registered[name][0] != tool
        }
        keep = {n: e for n, e in self._registered.items() if n in wanted and n not in definitions}
        for name, (_, dispose) in self._registered.items():
            if name not in keep:
                dispose()
        added: dict[str, tuple[types.Tool, Disposer]] = {}
        try:
            for name, definition in definitions.items():
                added[name] = (wanted[name], self._owner.register(definition))
        except RegistrationError as exc:
            for _, dispose in added.values():
                dispose()
            self._registered = keep
            raise McpMountError(f"{self._label}: cannot register its tools: {exc}") from exc
        self._registered = {n: keep.get(n) or added[n] for n in wanted}

    def _unregister_all(self) -> None:
        registered, self._registered = self._registered, {}
        for _, dispose in registered.values():
            dispose()

    # -- calls -----------------------------------------------------------------------

    def _require_session(self) -> ClientSession:
        if self._gone is not None or self._session is None:
            raise McpServerGoneError(self._label, self._gone)
        return self._session

    async def _call(self, tool: str, args: Any, ctx: ToolRunContext) -> ToolReturn:
        session = self._require_session()
        arguments = thaw(args) if isinstance(args, Mapping) else {}
        request = types.ClientRequest(
            types.CallToolRequest(
                params=types.CallToolRequestParams(name=tool, arguments=arguments)
            )
        )
        outcome: list[types.CallToolResult | McpError] = []
        request_id: list[int] = []
        abandoned = False
        done = trio.Event()
        scope = trio.CancelScope(shield=True)
        sink = current_sink()

        async def progress(progress: float, total: float | None, message: str | None) -> None:
            # Runs in the session's receive task: the call's sink was read in the
            # call's own task, above.
            if sink is not None:
                sink(ProgressReport(progress=progress, total=total, message=message))

        async def send() -> None:
            try:
                with scope:
                    if abandoned:
                        return
                    # send_request numbers the request synchronously, before its first
                    # checkpoint: the id read here is the one it is about to use.
                    request_id.append(session._request_id)
                    try:
                        outcome.append(
                            await session.send_request(
                                request, types.CallToolResult, progress_callback=progress
                            )
                        )
                    except McpError as exc:
                        outcome.append(exc)
            finally:
                done.set()

        self._in_flight.add(scope)
        try:
            with bare_cancelled():
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(send)
                    try:
                        await done.wait()
                    except trio.Cancelled:
                        abandoned = True
                        if request_id and not done.is_set():
                            scope.deadline = trio.current_time() + self._settle
                            with trio.CancelScope(shield=True) as notify:
                                notify.deadline = scope.deadline
                                await self._notify_cancelled(session, request_id[0])
                        raise
        finally:
            self._in_flight.discard(scope)
        if not outcome:
            raise McpServerGoneError(self._label, self._gone)
        answer = outcome[0]
        if isinstance(answer, McpError):
            if answer.error.code == types.CONNECTION_CLOSED or self._gone is not None:
                raise McpServerGoneError(self._label, self._gone or answer.error.message)
            raise McpCallError(answer.error.message, code=MCP_REQUEST_FAILED)
        content = blocks_from_mcp(answer.content)
        if answer.isError:
            text = "\n".join(b.text for b in content if isinstance(b, TextContent))
            raise McpCallError(text or f'MCP tool "{tool}" failed')
        return ToolReturn(content, meta=answer.meta, structured=answer.structuredContent)

    async def _notify_cancelled(self, session: ClientSession, request_id: int) -> None:
        notification = types.ClientNotification(
            types.CancelledNotification(
                params=types.CancelledNotificationParams(requestId=request_id, reason="cancelled")
            )
        )
        try:
            await session.send_notification(notification)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass  # the connection is gone; the call settles as gone

    # -- the connection --------------------------------------------------------------

    def _ended(self, why: str) -> None:
        if self._gone is None:
            self._gone = why
            self._unregister_all()
            for scope in tuple(self._in_flight):
                scope.cancel()

    async def _handle_message(self, message: Any) -> None:
        # Runs inside the session's receive loop: it must never wait on the session.
        if isinstance(message, Exception):
            self._garbage.append(str(message))
            return
        if isinstance(message, types.ServerNotification) and isinstance(
            message.root, types.ToolListChangedNotification
        ):
            self._relist.set()

    def _suspect(self) -> None:
        self._suspicion.set()

    async def _watchdog(self) -> None:
        # A broken HTTP response stream may be one request's trouble or the server
        # gone; the SDK's client waits forever on the request either way. A ping
        # tells them apart.
        while self._gone is None:
            await self._suspicion.wait()
            self._suspicion = trio.Event()
            session = self._session
            if session is None:
                continue
            answered = False
            with trio.move_on_after(_PING_BOUND):
                try:
                    await session.send_ping()
                    answered = True
                except Exception:
                    pass
            if not answered:
                self._ended("it stopped answering")

    async def _relister(self) -> None:
        while True:
            await self._relist.wait()
            self._relist = trio.Event()
            if self._gone is not None:
                return
            try:
                await self.refresh()
            except (McpMountError, McpServerGoneError) as exc:
                _log.warning("%s: keeping the previous tools: %s", self._label, exc)

    async def _pump(
        self,
        source: MemoryObjectReceiveStream[SessionMessage | Exception],
        sink: MemoryObjectSendStream[SessionMessage | Exception],
    ) -> None:
        try:
            async with sink:
                async for message in source:
                    await sink.send(message)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        self._ended("the connection closed")


@asynccontextmanager
async def open_mcp_mount(
    owner: ToolRegistry | ToolScope,
    *,
    command: Sequence[str] | None = None,
    url: str | None = None,
    server: Any = None,
    prefix: str = "",
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    headers: Mapping[str, str] | None = None,
    init_timeout: float = 10.0,
    settle_timeout: float = 5.0,
    on_log: Callable[[types.LoggingMessageNotificationParams], object] | None = None,
) -> AsyncIterator[McpMount]:
    """Mount an MCP server's tools into ``owner`` for the duration of the block.

    Give exactly one of ``command`` (a stdio server: the program and its
    arguments), ``url`` (a streamable-HTTP endpoint) or ``server`` (an in-process
    SDK server, ``mcp.server.lowlevel.Server`` or ``FastMCP``). Each tool is
    registered as a raw definition named ``prefix + name`` whose parameters are the
    server's ``inputSchema``, verbatim; ``readOnlyHint`` makes it parallel-safe,
    ``idempotentHint`` (or ``readOnlyHint``) idempotent, a declared ``outputSchema``
    becomes its output schema, and every hint is kept as the definition's ``mcp_annotations``.
    ``notifications/tools/list_changed`` re-lists the tools and updates the
    registrations. When the block ends the tools are unregistered and the session
    and transport are closed.

    Args:
        owner: the registry or scope to register the tools in.
        command: a stdio server's program and arguments.
        url: a streamable-HTTP endpoint (``http://host:port/mcp``).
        server: an in-process SDK server.
        prefix: prepended to every tool name.
        env: extra environment variables for a stdio server.
        cwd: the working directory of a stdio server.
        headers: extra HTTP headers for a streamable-HTTP server.
        init_timeout: seconds the server may take to start, initialise and list
            its tools.
        settle_timeout: seconds a cancelled call waits for the server's answer
            after ``notifications/cancelled`` before it gives up on it.
        on_log: called with each ``notifications/message`` the server sends.

    Yields:
        The :class:`McpMount`.

    Raises:
        McpMountError: the server did not start or initialise within
            ``init_timeout``, answered something that is not MCP, or lists tools that
            cannot be registered.
        ValueError: not exactly one of ``command``, ``url``, ``server`` is given, or
            a timeout is not a positive number.
    """
    given = [x is not None for x in (command, url, server)]
    if sum(given) != 1:
        raise ValueError("open_mcp_mount() takes exactly one of command=, url=, server=")
    for what, value in (("init_timeout", init_timeout), ("settle_timeout", settle_timeout)):
        if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
            raise ValueError(f"open_mcp_mount(): {what} must be a positive number of seconds")
    if command is not None:
        if isinstance(command, str) or not command:
            raise ValueError("open_mcp_mount(command=...) takes a non-empty list of strings")
        label = f"stdio:{command[0]}"
    elif url is not None:
        label = url
    else:
        label = f"in-process:{getattr(server, 'name', type(server).__name__)}"
    mount = McpMount(owner, label, prefix, float(settle_timeout))

    async def logged(params: types.LoggingMessageNotificationParams) -> None:
        if on_log is not None:
            on_log(params)

    closing = trio.Event()
    started = False

    async def connection(*, task_status: trio.TaskStatus[None]) -> None:
        nonlocal started
        try:
            async with open_transport(command, url, server, env, cwd, headers, mount._suspect) as (
                read,
                write,
            ):
                sink, pumped = anyio.create_memory_object_stream[SessionMessage | Exception](0)
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(mount._pump, read, sink)
                    async with ClientSession(
                        pumped,
                        write,
                        logging_callback=logged,
                        message_handler=mount._handle_message,
                    ) as session:
                        await _initialize(mount, session, label, init_timeout)
                        nursery.start_soon(mount._relister)
                        nursery.start_soon(mount._watchdog)
                        started = True
                        task_status.started()
                        try:
                            await closing.wait()
                        finally:
                            mount._ended("the mount was closed")
                    nursery.cancel_scope.cancel()
        except Exception as exc:
            if not started:
                raise
            # The transport failed under a live mount (a broken HTTP connection):
            # that is the server going away, not an error of the caller's block.
            mount._ended(f"the transport failed: {innermost(exc)}")
            _log.warning("%s: the transport failed: %s", label, innermost(exc))

    try:
        async with trio.open_nursery() as outer:
            await outer.start(connection)
            try:
                yield mount
            finally:
                closing.set()
    except BaseExceptionGroup as group:
        # The nursery wraps what it carries; a lone error (the caller's own, or why
        # the mount failed) is re-raised as itself.
        leaf = innermost(group)
        if leaf is group or not isinstance(leaf, Exception):
            raise
        if started or isinstance(leaf, McpMountError):
            raise leaf from None
        raise _mount_error(label, leaf) from leaf
    except (McpError, OSError) as exc:
        if started:
            raise
        raise _mount_error(label, exc) from exc


def _mount_error(label: str, exc: Exception) -> McpMountError:
    if isinstance(exc, McpError):
        return McpMountError(f"{label}: initialisation failed: {exc.error.message}")
    return McpMountError(f"{label}: could not connect: {exc}")


async def _initialize(mount: McpMount, session: ClientSession, label: str, limit: float) -> None:
    with trio.move_on_after(limit) as waited:
        result = await session.initialize()
        tools = await list_all_tools(session)
    if waited.cancelled_caught:
        detail = f"; it answered: {mount._garbage[0]}" if mount._garbage else ""
        raise McpMountError(
            f"{label}: no answer to initialize and tools/list within {limit:g}s{detail}"
        )
    mount.server_info = result.serverInfo
    mount._session = session
    mount._apply(tools)
