"""Recording a batch: the ToolCallRecorder protocol, JSON-lines logs, and replay.

Events arrive in durable order: each call's ``tool_call`` when it starts (before its
pre-execute), its ``tool_result`` at commit (model order), and every ``context``
after all of the batch's results. Events carry the batch id and the call's index in
the batch, so a log holding several batches (or duplicate call ids) pairs exactly.

Times: a batch run's ``tool_call`` events carry its wall-clock start (``wall``, Unix
seconds) and every event its offset from that start on trio's monotonic clock (``t``,
seconds); a ``tool_result`` also carries when its call was admitted to the pool, and
when its dispatch began and ended. Each time is optional (omitted when unknown), so a
log written before events carried times reads as it always did.

The format is versioned by its event kinds (:data:`LOG_FORMAT`): format 1 has
``tool_call``, ``tool_result``, ``context`` and ``progress``; format 2 adds ``approval``
(a call's ``Ask``, asked and answered). A reader reads every format up to its own, so a
log of format 1 reads, replays and resumes as it always did; a line of a kind it does not
know is refused with a message saying the log may be of a later format.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import msgspec

from .._core._content import ToolCall, ToolExecutionResult
from .._core._errors import LogFormatError
from .._core._outcomes import json_safe
from .._machine._events import (
    ApprovalEvent,
    CallMode,
    ContextEvent,
    ProgressEvent,
    RecorderEvent,
    ToolCallEvent,
    ToolCallRecorder,
    ToolResultEvent,
)

__all__ = [
    "LOG_FORMAT",
    "ApprovalEvent",
    "ContextEvent",
    "JsonlRecorder",
    "ProgressEvent",
    "RecorderEvent",
    "ToolCallEvent",
    "ToolCallRecorder",
    "ToolResultEvent",
    "CallMode",
    "encode_event",
    "iter_log",
    "read_log",
    "replay_log",
]


LOG_FORMAT: Final = 2
"""The log format this version writes and reads (and every earlier one): 2 adds the
``approval`` event to format 1's ``tool_call``, ``tool_result``, ``context``, ``progress``."""

_KNOWN: Final = frozenset({"tool_call", "tool_result", "context", "progress", "approval"})

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(RecorderEvent)
_json_any = msgspec.json.Decoder()
_EVENT_PREFIX: Final = b'{"event":'
_TORN: Final = re.compile(rb'\A\{\s*"event"\s*:')


class JsonlRecorder:
    """Append events to a JSON-lines file, one whole line per event, never truncating.

    Every event is one ``write(2)`` to a file opened with ``O_APPEND``, made under an
    exclusive ``flock`` that every :class:`JsonlRecorder` takes per event, so writers
    in several processes (two ``toolnursery run --log same.jsonl``) never interleave or
    cut each other's lines, however large. Nothing already in the file is ever removed:
    when the file does not end with a newline (a writer that died mid-write, or a
    complete last event written without one), the next event starts with a newline,
    so the torn bytes stay a line of their own that readers skip, and a complete
    event stays readable. Use it as a context manager, or call :meth:`close`.

    Once :meth:`record` returns, the event is in the operating system's page cache:
    it survives the process crashing or being killed; with ``fsync=True`` it is also
    on the storage device, and survives a power loss or kernel crash.

    Args:
        path: the log file (created if missing, appended to otherwise).
        fsync: also flush every event to the storage device (``fdatasync``) before
            :meth:`record` returns; survives power loss, costs a device flush per event.
    """

    def __init__(self, path: str | os.PathLike[str], *, fsync: bool = False) -> None:
        self.path: Path = Path(path)
        self._fsync = fsync
        self._fd: int | None = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        # The file size right after this recorder's last write: when the file still has
        # that size, it ends with our newline and needs no look at its last byte.
        self._end = -1

    def record(self, event: RecorderEvent, /) -> None:
        """Append one event as one line.

        Raises:
            ValueError: the recorder is closed.
            OSError: the write failed (the partial line, if any, is removed: those bytes
                are this recorder's own).
        """
        fd = self._fd
        if fd is None:
            raise ValueError(f"JsonlRecorder({str(self.path)!r}) is closed")
        line = encode_event(event) + b"\n"
        _lock(fd)
        try:
            size = os.fstat(fd).st_size
            if size != self._end and size > 0 and os.pread(fd, 1, size - 1) != b"\n":
                line = b"\n" + line
            whole = False
            try:
                written = os.write(fd, line)
                while written < len(line):  # pragma: no cover - short writes are rare on files
                    written += os.write(fd, memoryview(line)[written:])
                whole = True
            finally:
                if not whole:
                    # Only bytes this call appended are cut: every writer holds the lock.
                    os.ftruncate(fd, size)
            self._end = size + len(line)
            if self._fsync:
                _sync(fd)
        finally:
            _unlock(fd)

    def close(self) -> None:
        """Close the file; idempotent."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def __enter__(self) -> JsonlRecorder:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


if sys.platform == "win32":  # pragma: no cover - no flock; one writer per log there

    def _lock(fd: int) -> None:
        pass

    _unlock = _lock
    _sync = os.fsync
else:
    import fcntl

    def _lock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX)

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)

    _sync = getattr(os, "fdatasync", os.fsync)


def encode_event(event: RecorderEvent) -> bytes:
    """Encode one event as its JSON line (without the newline).

    A string no pipeline stage made JSON-safe (a call id or raw argument text holding
    a lone surrogate) is escaped as results are, rather than failing the batch.
    """
    try:
        return _encoder.encode(event)
    except UnicodeEncodeError:
        return _encoder.encode(json_safe(event))


def _is_torn(line: bytes) -> bool:
    """Whether an undecodable line is an event cut short by a writer that died.

    Such a line starts like an event (or is a prefix of that start) and is not JSON;
    anything else is not a toolnursery log.
    """
    if not (_TORN.match(line) or _EVENT_PREFIX.startswith(line)):
        return False
    try:
        _json_any.decode(line)
    except msgspec.DecodeError:
        return True
    return False


def _why(line: bytes) -> str:
    """What is wrong with a line that is not an event (the start of the error message)."""
    try:
        value = _json_any.decode(line)
    except msgspec.DecodeError:
        return "not a toolnursery event"
    kind = value.get("event") if isinstance(value, dict) else None
    if isinstance(kind, str) and kind not in _KNOWN and "batch" in value:
        return (
            f'an event of a kind this version does not read ("{kind}"; it reads log format '
            f"{LOG_FORMAT}): written by a later toolnursery?"
        )
    return "not a toolnursery event"


def iter_log(path: str | os.PathLike[str]) -> Iterator[tuple[int, RecorderEvent | None, str]]:
    """Yield ``(line_number, event, raw_line)`` for each non-empty line of a log.

    ``event`` is ``None`` for a torn line (an event cut short by a writer that died
    mid-write): readers skip it.

    Raises:
        LogFormatError: a line is neither an event nor a torn one (the file is not a
            toolnursery log, or was damaged); the message names the line.
        OSError: the file cannot be read.
    """
    with open(path, "rb") as file:
        for number, raw in enumerate(file, 1):
            stripped = raw.strip()
            if not stripped:
                continue
            try:
                event: RecorderEvent | None = _decoder.decode(stripped)
            except msgspec.DecodeError:
                if not _is_torn(stripped):
                    raise LogFormatError(
                        os.fspath(path),
                        number,
                        stripped.decode("utf-8", "replace"),
                        _why(stripped),
                    ) from None
                event = None
            yield number, event, raw.decode("utf-8", "replace")


def read_log(path: str | os.PathLike[str]) -> list[RecorderEvent]:
    """Read every complete event of a log, in file order.

    Torn lines (events cut short by a writer that died mid-write) are skipped.

    Raises:
        LogFormatError: a line is not an event (the message names it).
        OSError: the file cannot be read.
    """
    return [event for _, event, _ in iter_log(path) if event is not None]


def replay_log(path: str | os.PathLike[str]) -> list[tuple[ToolCall, ToolExecutionResult | None]]:
    """Pair each recorded call with its result, in log order.

    A call whose result was never recorded (the process died mid-batch) is paired
    with ``None``; a result pairs with a call only when its batch, index and call id
    are the call's (a result line of another call, in an edited or merged log, pairs
    with nothing).
    """
    order: list[tuple[str, int]] = []
    calls: dict[tuple[str, int], ToolCall] = {}
    results: dict[tuple[str, int, str], ToolExecutionResult] = {}
    for event in read_log(path):
        key = (event.batch, event.index)
        if isinstance(event, ToolCallEvent):
            if key not in calls:
                order.append(key)
            calls[key] = event.call
        elif isinstance(event, ToolResultEvent):
            results[event.batch, event.index, event.call_id] = event.result
    return [(calls[key], results.get((*key, calls[key].id))) for key in order]
