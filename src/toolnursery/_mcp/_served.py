"""What a served ``tools/call`` is made of on either driver: the run's state, the
call's input, its reports on the wire, and its result's wire form.

:mod:`._serve` runs calls on trio (a trio server: hypercorn-trio, stdio under trio,
the SDK's in-process client under trio), :mod:`._aioserve` on asyncio (uvicorn,
hypercorn's asyncio worker, anything else on asyncio); both build on this module,
so the two behave alike: the same call ids, the same reports, the same results.
"""

from __future__ import annotations

import itertools
import secrets
from collections.abc import Callable, Container
from typing import Any, Final

import mcp.types as types
import msgspec
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import InMemorySubscriptionBus, ToolsListChanged
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from .._core._content import ToolExecutionResult
from .._core._execution import ToolExecutionInput
from .._core._progress import CallReport, ProgressReport
from .._core._signal import CancelSignal
from .._pipeline._registry import ToolScope
from ._asking import CallQuestions, new_secret
from ._convert import WRAPPED_META, wrapped_value

__all__ = [
    "ERROR_META_KEY",
    "LEVELS",
    "LEVEL_KEY",
    "Served",
    "call_input",
    "call_result",
    "connection",
    "error_code",
    "log_levels",
    "reply",
    "send_report",
]

ERROR_META_KEY: Final = "toolnursery/error"
"""The ``_meta`` key of a failed call's ``{name, code}``."""

_UNCODED: Final = {"name": "ToolError", "code": "TOOL_ERROR"}
"""The ``{name, code}`` of a failed call whose result carries none."""

LEVEL_KEY: Final = "toolnursery/log-level"
"""A session's ``logging/setLevel``, in its connection's state (an index in ``LEVELS``)."""

LEVELS: Final = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)


class Served:
    """One run of a server (the SDK's lifespan): its open sessions, its call keys,
    its ``requestState`` secret; a driver's subclass runs the calls.

    A session (a 2025 connection) is tracked from its ``notifications/initialized``
    until the SDK closes it; 2026-07-28 clients hear of changes on their
    ``subscriptions/listen`` streams, through the bus.
    """

    def __init__(self, bus: InMemorySubscriptionBus) -> None:
        self.bus = bus
        self.connections: set[Connection] = set()
        # Call keys: random per run (a restarted server never repeats one), counted
        # within it (cheaper than a uuid per call).
        self._key_prefix = secrets.token_hex(8)
        self.secret = new_secret()
        self._key_count = itertools.count()

    def next_call_key(self) -> str:
        return f"{self._key_prefix}-{next(self._key_count)}"

    def track(self, connection: Connection) -> None:
        if connection not in self.connections:
            self.connections.add(connection)
            connection.exit_stack.callback(self.connections.discard, connection)

    async def announce(self) -> None:
        """Tell every open session, and every listening stream, that the tools changed."""
        for connection in tuple(self.connections):
            await connection.send_tool_list_changed()
        await self.bus.publish(ToolsListChanged())


def connection(ctx: ServerRequestContext[Any]) -> Connection:
    """The connection a request came on (what outlives the request: state, teardown)."""
    # The SDK hands low-level handlers a per-request session whose connection is not
    # public.
    found: Connection = ctx.session._connection
    return found


def call_input(
    ctx: ServerRequestContext[Any],
    params: types.CallToolRequestParams,
    scope: ToolScope | None,
    signal: CancelSignal,
) -> ToolExecutionInput:
    """The pipeline's input for one ``tools/call``."""
    return ToolExecutionInput(
        # Unique per call: the request id repeats across sessions and reconnects, and
        # the call id is the idempotency key under ``registry.execute()``.
        call_id=f"{ctx.request_id}@{_served(ctx).next_call_key()}",
        name=params.name,
        arguments=params.arguments if params.arguments is not None else {},
        signal=signal,
        agent=scope,
    )


def _served(ctx: ServerRequestContext[Any]) -> Served:
    served: Served = ctx.lifespan_context
    return served


def error_code(result: ToolExecutionResult) -> str | None:
    return None if result.error is None else result.error.code


async def send_report(
    ctx: ServerRequestContext[Any], report: CallReport, allowed: Callable[[], Container[str]]
) -> None:
    """Send one progress or log report of a call to its client (advisory: a failure
    to send is dropped, never the call's fate)."""
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
    except Exception:
        return


def log_levels(ctx: ServerRequestContext[Any]) -> Callable[[], Container[str]]:
    """The levels a call's log messages may be sent at, read when each is sent.

    2025: the session's ``logging/setLevel`` (all levels until one is set); 2026-07-28:
    the request's own opt-in (``_meta``), none without one.
    """
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        requested = (ctx.meta or {}).get(types.LOG_LEVEL_META_KEY)
        fixed = LEVELS[LEVELS.index(requested) :] if requested in LEVELS else ()
        return lambda: fixed
    state = connection(ctx).state
    return lambda: LEVELS[state.get(LEVEL_KEY, 0) :]


def reply(
    questions: CallQuestions, result: ToolExecutionResult
) -> dict[str, Any] | types.InputRequiredResult:
    """What a finished call answers: its result, or the question a 2026-07-28 call
    ends with.

    Raises:
        MCPError: a 2026-07-28 call asked a question its client cannot take, and
            failed for it.
    """
    if questions.input_required is not None:
        return questions.input_required
    if questions.missing is not None and error_code(result) == "ELICITATION_UNAVAILABLE":
        raise questions.missing_capability_error()
    return call_result(result)


def call_result(result: ToolExecutionResult) -> dict[str, Any]:
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
