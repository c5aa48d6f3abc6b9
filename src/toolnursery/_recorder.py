"""Recording a batch: the ToolCallRecorder protocol, JSON-lines logs, and replay.

Events arrive in durable order: each call's ``tool_call`` when it starts (before its
pre-execute), its ``tool_result`` at commit (model order), and every ``context``
after all of the batch's results. Events carry the batch id and the call's index in
the batch, so a log holding several batches (or duplicate call ids) pairs exactly.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol, TypeAlias

import msgspec

from ._content import HookContext, ToolCall, ToolExecutionResult
from ._progress import CallReport

__all__ = [
    "ContextEvent",
    "JsonlRecorder",
    "ProgressEvent",
    "RecorderEvent",
    "ToolCallEvent",
    "ToolCallRecorder",
    "ToolResultEvent",
    "read_log",
    "replay_log",
]


class ToolCallEvent(
    msgspec.Struct, frozen=True, tag="tool_call", tag_field="event", rename="camel"
):
    """A call started: recorded before its pre-execute runs (or when it is skipped)."""

    batch: str
    index: int
    call: ToolCall


class ToolResultEvent(
    msgspec.Struct, frozen=True, tag="tool_result", tag_field="event", rename="camel"
):
    """A call's result committed, in model order.

    The result's ``additional_contexts`` are not part of this event: each context is a
    :class:`ContextEvent` of its own, recorded after all of the batch's results.
    """

    batch: str
    index: int
    call_id: str
    result: ToolExecutionResult


class ContextEvent(msgspec.Struct, frozen=True, tag="context", tag_field="event", rename="camel"):
    """A context for the next request, recorded after all of the batch's results."""

    batch: str
    index: int
    call_id: str
    context: HookContext


class ProgressEvent(msgspec.Struct, frozen=True, tag="progress", tag_field="event", rename="camel"):
    """A progress or log report a call's body made while it ran (between its
    ``tool_call`` and its ``tool_result``), in the order it was made."""

    batch: str
    index: int
    call_id: str
    report: CallReport


RecorderEvent: TypeAlias = ToolCallEvent | ToolResultEvent | ContextEvent | ProgressEvent
"""One durable event, tagged ``event: "tool_call" | "tool_result" | "context" |
"progress"``."""


class ToolCallRecorder(Protocol):
    """Receives a batch's durable events, synchronously, in durable order.

    A recorder that raises is an internal failure of the batch: the scheduler starts
    nothing new, waits for the calls in flight, and re-raises the first failure.
    """

    def record(self, event: RecorderEvent, /) -> None:
        """Persist or forward one event."""
        ...


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(RecorderEvent)


class JsonlRecorder:
    """Append events to a JSON-lines file, one whole line per ``write(2)``.

    Each event is written with a single unbuffered append, so a crash leaves at worst
    one torn last line, which :func:`read_log` skips. Opening a log whose last line is
    torn cuts that line off first, so the events appended next stay readable. Use it as
    a context manager, or call :meth:`close`.

    Args:
        path: the log file (created if missing, appended to otherwise).
        fsync: also ``fsync`` after every event (survives power loss; slower).
    """

    def __init__(self, path: str | os.PathLike[str], *, fsync: bool = False) -> None:
        self.path = Path(path)
        self._fsync = fsync
        self._fd: int | None = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        _drop_torn_tail(self._fd)

    def record(self, event: RecorderEvent, /) -> None:
        """Write one event as one line."""
        fd = self._fd
        if fd is None:
            raise ValueError(f"JsonlRecorder({str(self.path)!r}) is closed")
        line = _encoder.encode(event) + b"\n"
        written = os.write(fd, line)
        while written < len(line):  # pragma: no cover - short writes are rare on files
            written += os.write(fd, line[written:])
        if self._fsync:
            os.fsync(fd)

    def close(self) -> None:
        """Close the file; idempotent."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def __enter__(self) -> JsonlRecorder:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _drop_torn_tail(fd: int) -> None:
    """Truncate a file after its last newline (a crash's torn last line)."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return
    end = size
    while end > 0:
        start = max(0, end - 65536)
        cut = os.pread(fd, end - start, start).rfind(b"\n")
        if cut >= 0:
            os.ftruncate(fd, start + cut + 1)
            return
        end = start
    os.ftruncate(fd, 0)


def iter_log(path: str | os.PathLike[str]) -> Iterator[tuple[int, RecorderEvent | None, str]]:
    """Yield ``(line_number, event_or_None, raw_line)`` for each non-empty line."""
    with open(path, "rb") as file:
        for number, raw in enumerate(file, 1):
            stripped = raw.strip()
            if not stripped:
                continue
            try:
                event: RecorderEvent | None = _decoder.decode(stripped)
            except msgspec.DecodeError:
                event = None
            yield number, event, raw.decode("utf-8", "replace")


def read_log(path: str | os.PathLike[str]) -> list[RecorderEvent]:
    """Read every complete event of a log.

    A torn last line (a crash mid-write) is skipped.

    Raises:
        ValueError: a line other than the last is not a valid event (the message names it).
    """
    events: list[RecorderEvent] = []
    pending_error: str | None = None
    for number, event, raw in iter_log(path):
        if pending_error is not None:
            raise ValueError(pending_error)
        if event is None:
            pending_error = f"{os.fspath(path)}:{number}: not a toolnursery event: {raw[:80]!r}"
            continue
        events.append(event)
    return events


def replay_log(path: str | os.PathLike[str]) -> list[tuple[ToolCall, ToolExecutionResult | None]]:
    """Pair each recorded call with its result, in log order.

    A call whose result was never recorded (the process died mid-batch) is paired
    with ``None``.
    """
    order: list[tuple[str, int]] = []
    calls: dict[tuple[str, int], ToolCall] = {}
    results: dict[tuple[str, int], ToolExecutionResult] = {}
    for event in read_log(path):
        key = (event.batch, event.index)
        if isinstance(event, ToolCallEvent):
            if key not in calls:
                order.append(key)
            calls[key] = event.call
        elif isinstance(event, ToolResultEvent):
            results[key] = event.result
    return [(calls[key], results.get(key)) for key in order]
