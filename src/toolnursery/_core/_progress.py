"""Per-call progress and log messages from tool bodies.

A body reports with ``ctx.report_progress(...)`` / ``ctx.log(...)`` (or the
module-level :func:`report_progress` and :func:`report_log`); each report goes,
synchronously and in the order it was made, to every sink installed around the call
with :func:`reporting` — by whoever runs it: an MCP server, a batch's recorder, the
command's live display, a program driving ``open_tool_batch``; a batch with a
recorder records its calls' reports as ``progress`` events. Sinks live in a
context variable, so a batch's worker tasks (which inherit the context of the task
that opened the batch) report to the sinks installed around the batch. A report made
through ``ctx`` carries the call's id. With no sink installed, reporting costs one
context-variable read and does nothing. A sink installed in a trio task is always
called in the trio thread: a report made in a worker thread (a sync body under
``trio.to_thread``) reaches it through ``trio.from_thread``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from typing import Any, Final, Literal, TypeAlias

import msgspec
import trio

__all__ = [
    "CallReport",
    "LogLevel",
    "LogReport",
    "ProgressReport",
    "ReportSink",
    "current_sink",
    "install_sink",
    "remove_sink",
    "report_log",
    "report_progress",
    "reporting",
]

LogLevel: TypeAlias = Literal[
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"
]
"""The syslog severities MCP logging uses, least severe first."""

_LEVELS: Final = frozenset(LogLevel.__args__)  # type: ignore[attr-defined]


class ProgressReport(
    msgspec.Struct, frozen=True, kw_only=True, tag="progress", omit_defaults=True, rename="camel"
):
    """How far a call has got: ``progress`` (increasing), of ``total`` if known.

    ``call_id`` is the reporting call's id (``None`` from the module-level function).
    """

    progress: float
    total: float | None = None
    message: str | None = None
    call_id: str | None = None


class LogReport(
    msgspec.Struct, frozen=True, kw_only=True, tag="log", omit_defaults=True, rename="camel"
):
    """A log message from a call's body (``data`` is any JSON value)."""

    level: LogLevel
    data: Any
    logger: str | None = None
    call_id: str | None = None


CallReport: TypeAlias = ProgressReport | LogReport
"""One report from a body, tagged ``type: "progress" | "log"``."""

ReportSink: TypeAlias = Callable[[CallReport], None]
"""Receives a call's reports, synchronously, in order."""

_sink: ContextVar[ReportSink | None] = ContextVar("toolnursery_report_sink", default=None)


@contextmanager
def reporting(sink: ReportSink) -> Iterator[None]:
    """Also send the reports of calls run inside the block to ``sink``.

    Sinks nest: a report reaches the innermost sink first, then the ones installed
    around it. Calls run by tasks started inside the block (a batch's workers)
    report here too. A sink that raises fails the report, and so the body that
    made it.
    """
    token = install_sink(sink)
    try:
        yield
    finally:
        remove_sink(token)


def install_sink(sink: ReportSink) -> Token[ReportSink | None]:
    """Install ``sink`` around the sinks already installed (what :func:`reporting` does);
    undo with :func:`remove_sink` in the same task."""
    outer = _sink.get()
    chained: ReportSink = sink
    if outer is not None:

        def chained(report: CallReport) -> None:
            sink(report)
            outer(report)

    if trio.lowlevel.in_trio_run():
        # Sinks wake trio tasks (a channel's send_nowait): from a worker thread, that
        # must hop to the trio thread first, or it corrupts the run.
        token = trio.lowlevel.current_trio_token()
        in_trio = chained

        def chained(report: CallReport) -> None:
            if trio.lowlevel.in_trio_run():
                in_trio(report)
            else:
                trio.from_thread.run_sync(in_trio, report, trio_token=token)

    return _sink.set(chained)


def remove_sink(token: Token[ReportSink | None]) -> None:
    """Undo an :func:`install_sink`."""
    _sink.reset(token)


def current_sink() -> ReportSink | None:
    """The sink reports made here would reach (``None``: nobody listens)."""
    return _sink.get()


class Reported:
    """What a report returns: done already, and awaitable as a no-op.

    A report is made when the call is made (in order, synchronously), so ``await
    ctx.report_progress(...)``, as fastmcp's ``Context`` is used, and the plain call
    both work; awaiting it never suspends.
    """

    __slots__ = ()

    def __await__(self) -> Generator[Any, None, None]:
        return
        yield  # a generator: awaiting it returns at once

    def __repr__(self) -> str:
        return "Reported()"


REPORTED: Final = Reported()


def report_progress(
    progress: float,
    total: float | None = None,
    message: str | None = None,
    *,
    call_id: str | None = None,
) -> Reported:
    """Report the current call's progress (``await`` it or not: it is done at once).

    Args:
        progress: how far it has got; should increase with every report.
        total: the value ``progress`` reaches at the end, if known.
        message: a human-readable note.
        call_id: the reporting call's id (``ctx.report_progress`` passes it).

    Returns:
        :class:`Reported`, which awaiting does nothing more with.

    Raises:
        ValueError: ``progress`` or ``total`` is not a finite number (``progress`` is
            required; ``total`` may be ``None``), or ``message`` is not a str.
    """
    sink = _sink.get()
    if sink is None:
        return REPORTED
    if not _finite(progress):
        raise ValueError(f"report_progress(): progress must be a finite number, got {progress!r}")
    if total is not None and not _finite(total):
        raise ValueError(f"report_progress(): total must be a finite number, got {total!r}")
    if message is not None and not isinstance(message, str):
        raise ValueError(f"report_progress(): message must be a str, got {message!r}")
    sink(ProgressReport(progress=progress, total=total, message=message, call_id=call_id))
    return REPORTED


def _finite(value: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int too large for a float
        return False


def report_log(
    level: LogLevel, data: Any, *, logger: str | None = None, call_id: str | None = None
) -> Reported:
    """Report a log message from the current call (``data``: a str or any JSON value);
    like :func:`report_progress`, done at once and awaitable.

    Raises:
        ValueError: ``level`` is not one of :data:`LogLevel`.
    """
    if level not in _LEVELS:
        raise ValueError(f"report_log(): level must be one of {sorted(_LEVELS)}, got {level!r}")
    sink = _sink.get()
    if sink is not None:
        sink(LogReport(level=level, data=data, logger=logger, call_id=call_id))
    return REPORTED
