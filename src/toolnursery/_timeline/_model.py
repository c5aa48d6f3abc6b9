"""A log's events as a timeline: one row per call, in model order, on one time axis.

Each call's times come from its events (see :mod:`toolnursery._batch._recorder`): its
``tool_call`` (the run's wall-clock start, when the call started, how it was
scheduled), its ``tool_result`` (admitted, dispatch began and ended, committed), its
``progress`` reports and its ``approval`` lines (asked, answered). The axis is the wall clock, so the calls of a batch resumed by a
later run share it with the first run's; a call whose events carry no times (a log
written before they did) has a row and no bars.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Final

import msgspec

from .._batch._recorder import (
    ApprovalEvent,
    CallMode,
    ProgressEvent,
    RecorderEvent,
    ToolCallEvent,
    ToolResultEvent,
    read_log,
)
from .._core._content import ToolCall, ToolExecutionResult
from .._core._decisions import ResourceKey
from .._core._errors import TOOL_TIMEOUT
from .._core._execution import ApprovalOutcome
from .._core._progress import ProgressReport
from .._machine._conflicts import conflicting_resources

__all__ = [
    "DENIED",
    "PENDING",
    "TimelineCall",
    "TimelineData",
    "approval_note",
    "outcome_code",
    "read_timeline",
]

PENDING = "PENDING"
"""The code of a call whose result was never recorded."""


class TimelineCall(msgspec.Struct, frozen=True, kw_only=True):
    """One row: a call, its result code, and its times on the picture's axis.

    Times are seconds since the earliest recorded start of the picture; ``None``
    when the log does not say.
    """

    batch: str
    index: int
    call: ToolCall
    result: ToolExecutionResult | None
    code: str
    mode: CallMode | None = None
    keys: tuple[ResourceKey, ...] = ()
    origin: float | None = None  # the start of the batch run that started the call
    started: float | None = None
    admitted: float | None = None
    began: float | None = None
    ended: float | None = None
    committed: float | None = None
    progress: tuple[tuple[float, float | None], ...] = ()  # (time, fraction done)
    waited_for: tuple[str, ...] = ()
    attempts: int = 1
    attempt_starts: tuple[float, ...] = ()  # when each attempt began (a retried call)
    timed_out: bool = False
    asked: bool = False  # the log records an approval question for the call
    answer: ApprovalOutcome | None = None  # its last recorded answer (None: unanswered)
    asked_at: float | None = None  # when the (last) question went out
    answered_at: float | None = None  # when its answer came back
    ask_reason: str | None = None  # the Ask's reason

    @property
    def label(self) -> str:
        """``id name``, as the row is labelled."""
        return f"{self.call.id} {self.call.name}"


class TimelineData(msgspec.Struct, frozen=True, kw_only=True):
    """Every call of a log, batch by batch, each batch in model order."""

    calls: tuple[TimelineCall, ...]
    timed: bool  # some call has times
    end: float  # the latest time on the axis (0 when nothing is timed)
    wall: float | None  # the axis's zero, as Unix seconds


DENIED: Final = "DENIED"
"""The label of a call refused before its dispatch without an error code (a pre-execute
deny, a guard, an approval that did not grant it): what ``toolnursery demo`` prints."""


def approval_note(answer: ApprovalOutcome | None) -> str:
    """What a call's approval lines say, in short, for a call that was asked:
    ``asked: rejected`` (the last answer), ``asked, no answer recorded``."""
    return "asked, no answer recorded" if answer is None else f"asked: {answer}"


def outcome_code(result: ToolExecutionResult | None) -> str:
    """``ok``, the error's code (``ERROR`` without one), or :data:`PENDING`."""
    if result is None:
        return PENDING
    if not result.is_error:
        return "ok"
    error = result.error
    return error.code if error is not None and error.code else "ERROR"


class _Row:
    __slots__ = (
        "approval",
        "attempts",
        "call",
        "keys",
        "mode",
        "progress",
        "result",
        "t",
        "times",
        "wall",
    )

    def __init__(self, call: ToolCall) -> None:
        self.call = call
        self.mode: CallMode | None = None
        self.keys: tuple[ResourceKey, ...] = ()
        self.wall: float | None = None
        self.t: float | None = None
        self.result: ToolExecutionResult | None = None
        self.times: tuple[float | None, ...] = (None, None, None, None)
        self.progress: list[tuple[float | None, float | None]] = []
        self.attempts: tuple[float, ...] = ()
        self.approval: tuple[ApprovalEvent, ApprovalEvent | None] | None = None  # (asked, answer)


def read_timeline(source: str | os.PathLike[str] | Iterable[RecorderEvent]) -> TimelineData:
    """The timeline of a log file or of its events (torn lines skipped).

    Raises:
        LogFormatError: ``source`` is a file holding a line that is not an event.
        OSError: ``source`` cannot be read.
    """
    events = read_log(source) if isinstance(source, str | os.PathLike) else source
    batches: dict[str, dict[int, _Row]] = {}
    for event in events:
        rows = batches.setdefault(event.batch, {})
        if isinstance(event, ToolCallEvent):
            before = rows.get(event.index)
            row = rows[event.index] = _Row(event.call)  # a resumed run starts it anew
            row.mode, row.keys, row.wall, row.t = event.mode, event.keys, event.wall, event.t
            if before is not None and before.call.id == event.call.id and before.approval:
                # a resume keeps the answer (not asked again); its times are the first run's
                question, answer = before.approval
                row.approval = (msgspec.structs.replace(question, t=None), _untimed(answer))
            continue
        row = rows.get(event.index) or rows.setdefault(
            event.index, _Row(ToolCall(event.call_id, "unknown tool"))
        )
        if isinstance(event, ToolResultEvent):
            row.result = event.result
            row.times = (event.admitted, event.began, event.ended, event.t)
            row.attempts = event.attempts
        elif isinstance(event, ApprovalEvent):
            if event.outcome is None or row.approval is None:  # a question (or a lone answer)
                row.approval = (event, None if event.outcome is None else event)
            else:
                row.approval = (row.approval[0], event)
        elif isinstance(event, ProgressEvent):
            report = event.report
            if isinstance(report, ProgressReport):
                fraction = (
                    min(max(report.progress / report.total, 0.0), 1.0) if report.total else None
                )
                row.progress.append((event.t, fraction))
    walls = [
        row.wall
        for rows in batches.values()
        for row in rows.values()
        if row.wall and math.isfinite(row.wall)
    ]
    zero = min(walls) if walls else None
    calls: list[TimelineCall] = []
    for batch, rows in batches.items():
        ordered = [(index, rows[index]) for index in sorted(rows)]
        calls.extend(_batch_calls(batch, ordered, zero))
    end = max(
        (
            t
            for c in calls
            for t in (c.started, c.admitted, c.began, c.ended, c.committed)
            if t is not None
        ),
        default=0.0,
    )
    return TimelineData(calls=tuple(calls), timed=zero is not None, end=end, wall=zero)


def _untimed(event: ApprovalEvent | None) -> ApprovalEvent | None:
    return None if event is None else msgspec.structs.replace(event, t=None)


def _batch_calls(
    batch: str, rows: Sequence[tuple[int, _Row]], zero: float | None
) -> Iterator[TimelineCall]:
    barrier: _Row | None = None  # the last exclusive call before this one
    group: list[_Row] = []  # the calls since that barrier
    for index, row in rows:
        shift = None if zero is None or row.wall is None else row.wall - zero

        def at(t: float | None, shift: float | None = shift) -> float | None:
            # A time that is not a finite number on the axis (a hostile or merged log
            # whose clocks overflow) is unknown.
            if t is None or shift is None:
                return None
            placed = t + shift
            return placed if math.isfinite(placed) else None

        waited: list[str] = []
        if row.mode == "exclusive" and group:
            waited.append("a barrier: every earlier call to finish")
        elif barrier is not None and not group:
            waited.append(f"barrier {barrier.call.id} {barrier.call.name}")
        if row.mode == "keyed":
            for other in group:
                if other.mode == "keyed":
                    on = conflicting_resources(other.keys, row.keys)
                    if on:
                        waited.append(f"{other.call.id} ({', '.join(on)})")
        admitted, began, ended, committed = (at(t) for t in row.times)
        result = row.result
        code = outcome_code(result)
        if code == "ERROR" and committed is not None and began is None:
            code = DENIED  # refused before any dispatch without a code: a policy's denial
        meta = result.meta if result is not None else None
        attempts = meta.get("attempts", 1) if isinstance(meta, Mapping) else 1
        if not isinstance(attempts, int) or attempts < 1:
            attempts = 1
        question, answer = row.approval or (None, None)
        yield TimelineCall(
            batch=batch,
            index=index,
            call=row.call,
            result=result,
            code=code,
            mode=row.mode,
            keys=row.keys,
            origin=at(0.0),
            started=at(row.t),
            admitted=admitted,
            began=began,
            ended=ended,
            committed=committed,
            progress=tuple(
                (t, fraction) for when, fraction in row.progress if (t := at(when)) is not None
            ),
            waited_for=tuple(waited),
            attempts=max(attempts, len(row.attempts)),
            attempt_starts=tuple(t for s in row.attempts if (t := at(s)) is not None),
            timed_out=code == TOOL_TIMEOUT,
            asked=question is not None,
            answer=None if answer is None else answer.outcome,
            asked_at=None if question is None or question is answer else at(question.t),
            answered_at=None if answer is None else at(answer.t),
            ask_reason=None if question is None else question.reason,
        )
        if row.mode == "exclusive":
            barrier, group = row, []
        else:
            group.append(row)
