"""Mounting an MCP server: its tools registered as raw definitions, one ``Client`` each.

One task owns the connection: the SDK's ``Client`` (and, under it, the transport)
is entered and left in that task, as anyio requires. The client negotiates the
revision: ``server/discover`` first (2026-07-28), the ``initialize`` handshake for
a server that does not know it (2025-11-25 and before). For a stdio or HTTP server
the transport's read side is pumped (``_transport``): when the server exits or the
connection breaks the pump sees it first, the mount unregisters its tools, and
every call in flight fails with :class:`McpServerGoneError` naming the cause.

A call runs its ``tools/call`` in the calling task. Cancelling it (a batch abort, a
timeout) cancels the SDK's request, which sends ``notifications/cancelled`` (or, on
a 2026-07-28 HTTP connection, closes the request's stream) and returns at once:
a server that follows the spec never answers a cancelled request, so nothing waits
for one.

A server may ask the user something mid-call: pushed as ``elicitation/create`` on a
handshake-era connection, or returned as an input-required result on a 2026-07-28
one (the call is then retried with the answers). ``_answering`` answers it.

The tool list and the definitions made from it live in ``_listing``.
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, Final

import mcp.types as types
import trio
from mcp.client import Client, ClientRequestContext
from mcp.client.subscriptions import ListenNotSupportedError, SubscriptionLost
from mcp.shared.exceptions import MCPError
from mcp.types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import TypeAdapter

from .._core._content import TextContent, ToolReturn
from .._core._errors import (
    MCP_REQUEST_FAILED,
    McpCallError,
    McpMountError,
    McpServerGoneError,
    RegistrationError,
)
from .._core._execution import ToolRunContext
from .._core._groups import innermost
from .._core._json import thaw
from .._core._progress import ProgressReport, current_sink
from .._pipeline._registry import Disposer, ToolRegistry, ToolScope
from .._tools._definition import ToolDefinition
from ._answering import ElicitHandler, SampleHandler, ServerQuestions
from ._convert import blocks_from_mcp, unwrapped
from ._listing import (
    OutputCheck,
    checked_tools,
    list_all_tools,
    mounted_definition,
    object_arguments,
)
from ._transport import WatchedTransport, connection_target, describe

__all__ = ["McpMount", "open_mcp_mount"]

_log: Final = logging.getLogger("toolnursery.mcp")

_CALL_RESULT: Final[TypeAdapter[types.CallToolResult | types.InputRequiredResult]] = TypeAdapter(
    types.CallToolResult | types.InputRequiredResult
)


def _client_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("toolnursery")
    except metadata.PackageNotFoundError:
        return "0+unknown"


_CLIENT_INFO: Final = types.Implementation(name="toolnursery", version=_client_version())
_INPUT_ROUNDS: Final = 10
"""Input-required rounds one call may take before it fails (the SDK's own default)."""
_STATE_ONLY_BACKOFF: Final = (0.05, 0.25)
"""First and longest pause before retrying an input-required result that asks nothing."""


_SERVER_INFO_KEY: Final = "io.modelcontextprotocol/serverInfo"


def _blocks(content: Sequence[types.ContentBlock]) -> tuple[Any, ...]:
    # Plain text is most of what tools return: it skips the general conversion.
    texts = [
        block.text
        for block in content
        if type(block) is types.TextContent and block.annotations is None and block.meta is None
    ]
    if len(texts) == len(content):
        return tuple(TextContent(text) for text in texts)
    return blocks_from_mcp(content)


class McpMount:
    """A live mount: one MCP server's tools registered in a registry or a scope.

    Made by :func:`open_mcp_mount`; valid inside its ``async with`` block.
    """

    def __init__(
        self,
        owner: ToolRegistry | ToolScope,
        label: str,
        prefix: str,
        on_elicit: ElicitHandler | None,
        on_sample: SampleHandler | None,
    ):
        self._owner = owner
        self._label = label
        self._prefix = prefix
        self._questions = ServerQuestions(owner, on_elicit, on_sample)
        self._client: Client | None = None
        self._registered: dict[str, tuple[types.Tool, Disposer]] = {}
        self._skipped: dict[str, str] = {}
        self._calls: dict[int, ToolRunContext] = {}
        self._gone: str | None = None
        self._relist = trio.Event()
        self._garbage: list[str] = []
        self._cause: Callable[[], str | None] = lambda: None
        self.server_info: types.Implementation | None = None
        """The server's ``serverInfo`` (``None`` if a 2026-07-28 server did not say)."""
        self.protocol_version: str | None = None
        """The negotiated revision, e.g. ``"2026-07-28"`` or ``"2025-11-25"``."""

    @property
    def names(self) -> tuple[str, ...]:
        """The registered tool names (with the prefix), in the server's order."""
        return tuple(self._registered)

    @property
    def skipped(self) -> Mapping[str, str]:
        """The server's tools left unregistered, by name (with the prefix), with why.

        A tool whose ``inputSchema`` is not valid JSON Schema cannot be checked or
        shown to a model: it is skipped (and logged as a warning on the
        ``toolnursery.mcp`` logger), and the server's other tools are mounted.
        Updated by every listing (a refresh, a tool list change).
        """
        return dict(self._skipped)

    @property
    def gone(self) -> bool:
        """Whether the server's connection has ended (its tools are unregistered)."""
        return self._gone is not None

    async def refresh(self) -> None:
        """List the server's tools again and update the registrations to match.

        All or nothing: when the new list cannot be registered, every previous
        registration stays as it was.

        Raises:
            McpMountError: the new list cannot be registered; the previous
                registrations are kept.
            McpServerGoneError: the connection has ended.
        """
        client = self._require_client()
        try:
            tools = await list_all_tools(client.session)
        except MCPError as exc:
            if self._gone is not None:
                raise McpServerGoneError(self._label, self._gone) from exc
            raise McpMountError(f"{self._label}: tools/list failed: {exc.error.message}") from exc
        self._apply(tools)

    # -- registration ----------------------------------------------------------------

    def _apply(self, tools: Sequence[types.Tool]) -> None:
        """Make the registrations match ``tools``, all or nothing.

        Raises:
            McpServerGoneError: the mount has ended. A listing whose answer arrived
                as the mount closed (or its server went) registers nothing: the
                mount's tools are unregistered already, and stay so.
        """
        if self._gone is not None:
            raise McpServerGoneError(self._label, self._gone)
        wanted = checked_tools(self._label, self._prefix, tools)
        current = self._registered
        # A definition is made (its inputSchema compiled) before anything is
        # registered: a tool that cannot be one is skipped, not the whole list.
        definitions: dict[str, ToolDefinition] = {}
        skipped: dict[str, str] = {}
        for name, tool in wanted.items():
            if name in current and current[name][0] == tool:
                continue
            try:
                definitions[name] = self._definition(name, tool)
            except RegistrationError as exc:
                skipped[name] = str(exc)
        for name in skipped:
            del wanted[name]
        done: dict[str, tuple[types.Tool, Disposer]] = {}
        swapped: list[str] = []
        try:
            for name, definition in definitions.items():
                tool = wanted[name]
                if name in current:
                    # A name is registered once: the old definition goes before the
                    # new one comes, and comes back if the new one is refused.
                    current[name][1]()
                    swapped.append(name)
                done[name] = (tool, self._owner.register(definition))
        except RegistrationError as exc:
            for _, dispose in done.values():
                dispose()
            for name in swapped:
                old = current[name][0]
                current[name] = (old, self._owner.register(self._definition(name, old)))
            raise McpMountError(f"{self._label}: cannot register its tools: {exc}") from exc
        for name, (_, dispose) in current.items():
            if name not in wanted:
                dispose()
        self._registered = {n: done.get(n) or current[n] for n in wanted}
        for name, why in skipped.items():
            if self._skipped.get(name) != why:
                _log.warning("%s: skipped a tool: %s", self._label, why)
        self._skipped = skipped

    def _definition(self, name: str, tool: types.Tool) -> ToolDefinition:
        return mounted_definition(name, tool, self._call)

    def _unregister_all(self) -> None:
        registered, self._registered = self._registered, {}
        for _, dispose in registered.values():
            dispose()

    # -- calls -----------------------------------------------------------------------

    def _require_client(self) -> Client:
        if self._gone is not None or self._client is None:
            raise McpServerGoneError(self._label, self._gone)
        return self._client

    async def _call(
        self, tool: str, check: OutputCheck | None, args: Any, ctx: ToolRunContext
    ) -> ToolReturn:
        arguments = thaw(object_arguments(args))
        session = self._require_client().session
        sink = current_sink()
        on_progress = None
        live = True
        if sink is not None:
            call_id = ctx.call_id

            async def on_progress(
                progress: float, total: float | None, message: str | None
            ) -> None:
                # Runs in the client's receive task, possibly after the call returned.
                if live:
                    sink(
                        ProgressReport(
                            progress=progress, total=total, message=message, call_id=call_id
                        )
                    )

        key = id(ctx)
        self._calls[key] = ctx
        try:
            responses: dict[str, Any] | None = None
            state: str | None = None
            pause = _STATE_ONLY_BACKOFF[0]
            for _ in range(_INPUT_ROUNDS + 1):
                params = (
                    types.CallToolRequestParams(name=tool, arguments=arguments)
                    if responses is None and state is None
                    else types.CallToolRequestParams(
                        name=tool,
                        arguments=arguments,
                        input_responses=responses,
                        request_state=state,
                    )
                )
                request = types.CallToolRequest(params=params)
                answer = await session.send_request(
                    request, _CALL_RESULT, progress_callback=on_progress
                )
                if isinstance(answer, types.CallToolResult):
                    break
                state = answer.request_state
                if answer.input_requests:
                    pause = _STATE_ONLY_BACKOFF[0]
                    responses = await self._questions.answer_all(answer.input_requests, ctx, tool)
                else:
                    await trio.sleep(pause)
                    pause = min(pause * 2, _STATE_ONLY_BACKOFF[1])
                    responses = None
            else:
                raise McpCallError(
                    f'MCP tool "{tool}" asked for input more than {_INPUT_ROUNDS} times',
                    code=MCP_REQUEST_FAILED,
                )
        except MCPError as exc:
            if exc.code == types.CONNECTION_CLOSED or self._gone is not None:
                raise McpServerGoneError(self._label, self._gone or self._why()) from None
            raise McpCallError(exc.error.message, code=MCP_REQUEST_FAILED) from None
        finally:
            live = False
            del self._calls[key]
        content = _blocks(answer.content)
        if answer.is_error:
            text = "\n".join(b.text for b in content if isinstance(b, TextContent))
            raise McpCallError(text or f'MCP tool "{tool}" failed')
        meta = answer.meta
        if meta is not None and _SERVER_INFO_KEY in meta:
            # The 2026 server identity stamp rides on every result; it describes the
            # server (``McpMount.server_info``), not this call.
            meta = {k: v for k, v in meta.items() if k != _SERVER_INFO_KEY} or None
        structured = answer.structured_content
        if check is not None:
            check(structured)
        else:  # a plain return fastmcp wrapped (so did our serve): the text has it
            structured, meta = unwrapped(structured, meta)
        return ToolReturn(content, meta=meta, structured=structured)

    # -- questions from the server ---------------------------------------------------

    async def _pushed_elicit(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        # A handshake-era server pushes its question; it belongs to a call only when
        # exactly one is in flight.
        calls = tuple(self._calls.values())
        return await self._questions.elicit(params, calls[0] if len(calls) == 1 else None, None)

    async def _pushed_sample(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.ErrorData:
        return await self._questions.sample(params)

    # -- the connection --------------------------------------------------------------

    def _why(self) -> str:
        # The connection ended and the task that owns it has not said why yet.
        cause = self._cause()
        return "the connection closed" if cause is None else f"the connection failed: {cause}"

    def _ended(self, why: str) -> None:
        if self._gone is None:
            self._gone = why
            self._unregister_all()

    async def _handle_message(self, message: Any) -> None:
        # Runs in the client's receive task: it must never wait on the session.
        if isinstance(message, Exception):
            self._garbage.append(str(message))
        elif isinstance(message, types.ToolListChangedNotification):
            self._relist.set()

    async def _listener(self, *, task_status: trio.TaskStatus[None]) -> None:
        # A 2026-07-28 server announces tool list changes on a subscriptions/listen
        # stream, not on a standing channel; the mount is ready once it is heard.
        client = self._client
        tools = None if client is None else client.server_capabilities.tools
        if (
            client is None
            or client.protocol_version not in MODERN_PROTOCOL_VERSIONS
            or tools is None
            or not tools.list_changed
        ):
            task_status.started()
            return
        listening = False
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                listening = True
                task_status.started()
                async for _ in subscription:
                    self._relist.set()
        except (MCPError, ListenNotSupportedError, SubscriptionLost) as exc:
            if not listening:
                task_status.started()
            if self._gone is None:
                _log.warning("%s: no longer hears of tool list changes: %s", self._label, exc)

    async def _relister(self) -> None:
        while True:
            await self._relist.wait()
            self._relist = trio.Event()
            if self._gone is not None:
                return
            try:
                await self.refresh()
            except McpServerGoneError:
                return
            except McpMountError as exc:
                _log.warning("%s: keeping the previous tools: %s", self._label, exc)


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
    on_log: Callable[[types.LoggingMessageNotificationParams], object] | None = None,
    on_elicit: ElicitHandler | None = None,
    on_sample: SampleHandler | None = None,
) -> AsyncIterator[McpMount]:
    """Mount an MCP server's tools into ``owner`` for the duration of the block.

    Give exactly one of ``command`` (a stdio server: the program and its
    arguments), ``url`` (a streamable-HTTP endpoint) or ``server`` (an in-process
    SDK server, ``mcp.server.Server`` or ``MCPServer``). The mount speaks
    2026-07-28 to a server that answers ``server/discover`` and the handshake era
    (2025-11-25 and before) to one that does not. Each tool is registered as a raw
    definition named ``prefix + name`` whose parameters are the server's
    ``inputSchema``, verbatim; ``readOnlyHint`` makes it parallel-safe,
    ``idempotentHint`` (or ``readOnlyHint``) idempotent, a declared ``outputSchema``
    becomes its output schema (a result's ``structuredContent`` is checked against
    it), and every hint is kept as the definition's ``mcp_annotations``. Arguments
    that are not an object, or do not fit the ``inputSchema``, are refused before
    anything is sent. A tool whose ``inputSchema`` is not valid JSON Schema is
    skipped, logged and listed in :attr:`McpMount.skipped`; the others are mounted.
    ``notifications/tools/list_changed`` re-lists the tools and updates the
    registrations. When the block ends the tools are unregistered and the
    connection is closed.

    A server's question to the user (elicitation) goes to ``on_elicit``; without
    one, a question that asks for nothing but consent goes to the host's approval
    service (``allowed-once`` accepts, ``rejected`` declines, anything else
    cancels), and any other question is declined with the reason. A sampling
    request goes to ``on_sample``, or is declined.

    Args:
        owner: the registry or scope to register the tools in.
        command: a stdio server's program and arguments.
        url: a streamable-HTTP endpoint (``http://host:port/mcp``).
        server: an in-process SDK server.
        prefix: prepended to every tool name.
        env: extra environment variables for a stdio server.
        cwd: the working directory of a stdio server.
        headers: extra HTTP headers for a streamable-HTTP server.
        init_timeout: seconds the server may take to start, negotiate and list
            its tools.
        on_log: called with each ``notifications/message`` the server sends.
        on_elicit: answers the server's elicitation requests.
        on_sample: answers the server's sampling requests.

    Yields:
        The :class:`McpMount`.

    Raises:
        McpMountError: the server did not start or initialise within
            ``init_timeout``, answered something that is not MCP, or lists tools that
            cannot be registered.
        ValueError: not exactly one of ``command``, ``url``, ``server`` is given, or
            ``init_timeout`` is not a positive number.
    """
    given = [x is not None for x in (command, url, server)]
    if sum(given) != 1:
        raise ValueError("open_mcp_mount() takes exactly one of command=, url=, server=")
    if not (
        isinstance(init_timeout, int | float) and math.isfinite(init_timeout) and init_timeout > 0
    ):
        raise ValueError("open_mcp_mount(): init_timeout must be a positive number of seconds")
    if command is not None:
        if isinstance(command, str) or not command:
            raise ValueError("open_mcp_mount(command=...) takes a non-empty list of strings")
        label = f"stdio:{command[0]}"
    elif url is not None:
        label = url
    else:
        label = f"in-process:{getattr(server, 'name', type(server).__name__)}"
    mount = McpMount(owner, label, prefix, on_elicit, on_sample)

    async def logged(params: types.LoggingMessageNotificationParams) -> None:
        if on_log is not None:
            on_log(params)

    closing = trio.Event()
    started = False
    target = connection_target(command, url, server, env, cwd, headers, mount._ended)
    if isinstance(target, WatchedTransport):
        mount._cause = target.cause
    client = Client(
        target,
        logging_callback=logged,
        log_level="debug" if on_log is not None else None,
        message_handler=mount._handle_message,
        elicitation_callback=(
            mount._pushed_elicit if on_elicit is not None or mount._questions.approval() else None
        ),
        sampling_callback=mount._pushed_sample if on_sample is not None else None,
        client_info=_CLIENT_INFO,
        cache=None,
    )

    async def connection(*, task_status: trio.TaskStatus[None]) -> None:
        nonlocal started
        # The deadline covers connecting, negotiating and the first tools/list, and
        # is lifted once they are done.
        setup = trio.CancelScope(deadline=trio.current_time() + init_timeout)
        try:
            with setup:
                async with client, trio.open_nursery() as nursery:
                    tools = await list_all_tools(client.session)
                    mount._client = client
                    mount.server_info = client.server_info
                    mount.protocol_version = client.protocol_version
                    await nursery.start(mount._listener)
                    setup.deadline = math.inf
                    mount._apply(tools)
                    nursery.start_soon(mount._relister)
                    started = True
                    task_status.started()
                    try:
                        await closing.wait()
                    finally:
                        # Not closing: the transport failed and cancelled this task.
                        mount._ended("the mount was closed" if closing.is_set() else mount._why())
                    nursery.cancel_scope.cancel()
        except Exception as exc:
            if not started:
                raise
            # The transport failed under a live mount (a broken HTTP connection):
            # that is the server going away, not an error of the caller's block.
            mount._ended(f"the transport failed: {describe(exc)}")
            _log.warning("%s: the transport failed: %s", label, describe(exc))
            return
        if setup.cancelled_caught:
            raise _no_answer(label, init_timeout, mount._garbage)

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
    except (MCPError, OSError) as exc:
        if started:
            raise
        raise _mount_error(label, exc) from exc


def _no_answer(label: str, limit: float, garbage: Sequence[str]) -> McpMountError:
    detail = f"; it answered: {garbage[0]}" if garbage else ""
    return McpMountError(
        f"{label}: no answer to the handshake and tools/list within {limit:g}s{detail}"
    )


def _mount_error(label: str, exc: Exception) -> McpMountError:
    if isinstance(exc, MCPError):
        return McpMountError(f"{label}: initialisation failed: {exc.error.message}")
    return McpMountError(f"{label}: could not connect: {describe(exc)}")
