"""Resuming a batch after a crash: what a log says about each call, and what to do.

The analysis is pure: :func:`plan_resume` reads a log's events and the batch's calls
and decides, call by call, from one invariant of the recorder's durable order — a
call's ``tool_call`` event is recorded before anything of it runs (its first hook, its
body), and its ``tool_result`` event when it commits:

* a call with a recorded result **committed**: its recorded result is returned, and it
  does not run again (``replay``) — except a result recorded as
  ``ABORTED_BEFORE_DISPATCH`` (its body never ran: it runs now), and an ``ABORTED``
  result of an idempotent tool (it runs again);
* a call with no event at all **never started**: it runs (``run``);
* a call recorded as started with no result was **interrupted**: an idempotent tool
  runs again (``run``); any other tool is not run — its result is
  :class:`~toolnursery.InterruptedCallError` (code ``INTERRUPTED``,
  ``interrupted``), so a side effect never happens twice;
* a call whose id an earlier call of the batch already has, and no recorded result,
  gets the batch's duplicate-id result (``duplicate``), as the first run would have.

Approvals are in the log too (``approval`` events: a call's ``Ask`` is recorded when it
goes to the approval service, and its answer before the call is dispatched or denied),
so a resumed batch re-asks nothing that was answered:

* a call answered ``rejected``, with no result, stays rejected (``rejected``: the result
  the rejection gives, ``Error: the user rejected tool "…"``), whatever its policy would
  say now;
* a call whose last line is its question, or an answer that stops it (``cancelled``,
  ``unavailable``), was never dispatched: it runs (``run``) and its policy asks again
  (nobody answered, or no answer let it run);
* a call answered ``allowed-once`` that runs again (its result says its body never ran,
  or its tool is idempotent) runs with that answer (:attr:`ResumedCall.approval`): its
  ``Ask`` is answered from the log, not asked. One answered ``allowed-once`` with no
  result may have been dispatched: a tool that is not idempotent is ``interrupted``.

A ``tool_call`` line of a call after its result (a resumed run ran it again) voids that
result: what the later run did is what counts.

:class:`PlannedRun` is what carrying a plan out needs (the scheduler does it, for
``run_tool_calls(..., resume_from=log)``): the calls to run run as one batch under the
resumed batch's id (so ``ctx.idempotency_key`` is the key their first run saw), their
events recorded under their original indices; the other results are recorded (the
ones not yet in the log) and returned in model order. This module never runs a call.

Which batch of the log is resumed: the one named by ``batch_id``, else the last batch
whose lines all belong to these calls — each ``tool_call`` line is the call at its
index, each ``tool_result`` / ``context`` / ``progress`` line carries the id of the call
at its index. When no batch matches, no call of these has started, so every call runs
(in a new batch). A line counts for a call only when batch, index and call id agree;
what is not so is never taken as the call's, failing closed:

* a batch whose only lines are other calls' results (no ``tool_call`` line, a foreign
  call id at one of these indices) is not resumed — a note in :attr:`ResumePlan.notes`;
* a batch that records lines of these calls (their starts, or their results at their
  indices) and also another call's line at one of their indices contradicts itself:
  :class:`~toolnursery.ResumeError` names the line;
* a call's result (or other line) without its ``tool_call`` line cannot be checked
  against the call's tool and arguments: the call counts as started with no result
  (``interrupted``, or ``run`` for an idempotent tool), with a ``note`` saying why.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Final, Literal, TypeAlias

import msgspec

from .._core._content import HookContext, ToolCall, ToolExecutionResult
from .._core._errors import (
    TOOL_ABORTED,
    TOOL_ABORTED_BEFORE_DISPATCH,
    DuplicateCallIdError,
    InterruptedCallError,
    ResumeError,
)
from .._core._execution import ApprovalOutcome
from .._core._outcomes import failure_result, json_safe, text_result
from ._recorder import (
    ApprovalEvent,
    ContextEvent,
    ProgressEvent,
    RecorderEvent,
    ToolCallEvent,
    ToolCallRecorder,
    ToolResultEvent,
    read_log,
)

if TYPE_CHECKING:
    from .._pipeline._registry import ToolRegistry, ToolScope

__all__ = [
    "PlannedRun",
    "ResumeAction",
    "ResumePlan",
    "ResumedCall",
    "ResumedRecorder",
    "carry_out",
    "is_idempotent",
    "plan_resume",
    "read_plan",
]

ResumeAction: TypeAlias = Literal["replay", "run", "interrupted", "duplicate", "rejected"]
"""What a resumed batch does with one call: return the recorded result, run the
call, give it the ``INTERRUPTED`` result, the duplicate-id result, or the result of the
user's recorded rejection."""


class ResumedCall(msgspec.Struct, frozen=True, kw_only=True):
    """One call of a resumed batch, and what resuming does with it.

    Attributes:
        index: the call's position in the batch.
        call: the call.
        action: ``replay``, ``run``, ``interrupted``, ``duplicate`` or ``rejected``.
        result: for ``replay`` the recorded result (its recorded contexts attached),
            for ``interrupted`` / ``duplicate`` / ``rejected`` the result it gets;
            ``None`` for ``run``.
        started: the log records the call as started before (so ``run`` is a re-run).
        note: why the log's lines of this call were not trusted (a result or another
            line of it without its ``tool_call`` line: an edited or merged log), else
            ``None``; such a call is treated as started with no result.
        approval: the answer the log records for the call's ``Ask`` (``allowed-once``
            or ``rejected``), else ``None``; a call that runs with ``allowed-once`` is
            not asked again.
    """

    index: int
    call: ToolCall
    action: ResumeAction
    result: ToolExecutionResult | None = None
    started: bool = False
    note: str | None = None
    approval: ApprovalOutcome | None = None


class ResumePlan(msgspec.Struct, frozen=True, kw_only=True):
    """What resuming a batch does, call by call.

    Attributes:
        batch_id: the resumed batch's id (reused, so each call's idempotency key is the
            one its first run saw); ``None`` when no recorded batch matched (every call
            runs, in a new batch).
        calls: one entry per call, in model order.
        notes: the log lines that resuming set aside, and why: a batch not resumed
            because its only lines are of other calls' results (or contexts, or
            progress) at these indices, and each call's ``note``.
    """

    batch_id: str | None
    calls: tuple[ResumedCall, ...]
    notes: tuple[str, ...] = ()

    def count(self, action: ResumeAction) -> int:
        """How many calls the plan gives ``action``."""
        return sum(1 for entry in self.calls if entry.action == action)


class _Recorded:
    __slots__ = ("answers", "calls", "contexts", "held", "lines", "results")

    def __init__(self) -> None:
        self.calls: dict[int, ToolCall] = {}
        self.results: dict[int, ToolExecutionResult] = {}
        self.contexts: dict[int, list[HookContext]] = {}
        # (kind, index, call id) of each result, context, progress and approval line
        self.lines: list[tuple[str, int, str]] = []
        self.answers: dict[int, ApprovalOutcome] = {}  # the last allowed-once / rejected
        # calls whose last line is their question, or an answer that let them not run
        self.held: set[int] = set()

    def add(self, event: RecorderEvent) -> None:
        index = event.index
        if isinstance(event, ToolCallEvent):
            self.calls.setdefault(index, event.call)
            if self.results.pop(index, None) is not None:  # run again: the result is void
                self.contexts.pop(index, None)
            self.held.discard(index)
            return
        self.lines.append((_KINDS[type(event)], index, event.call_id))
        if isinstance(event, ApprovalEvent):
            outcome = event.outcome
            if outcome == "allowed-once" or outcome == "rejected":
                self.answers[index] = outcome
            if outcome == "allowed-once":
                self.held.discard(index)
            else:
                self.held.add(index)
            return
        self.held.discard(index)
        if isinstance(event, ToolResultEvent):
            self.results[index] = event.result
            self.contexts.pop(index, None)  # a re-run's contexts follow it
        elif isinstance(event, ContextEvent):
            self.contexts.setdefault(index, []).append(event.context)


_RERUN_CODES: Final = frozenset({TOOL_ABORTED, TOOL_ABORTED_BEFORE_DISPATCH})
_KINDS: Final = {
    ToolResultEvent: "result",
    ContextEvent: "context",
    ProgressEvent: "progress",
    ApprovalEvent: "approval",
}


def plan_resume(
    events: Iterable[RecorderEvent],
    calls: Sequence[ToolCall],
    is_idempotent: Callable[[ToolCall], bool],
    *,
    batch_id: str | None = None,
) -> ResumePlan:
    """Decide what resuming ``calls`` from a log's ``events`` does with each call.

    A recorded line counts for a call only when its batch, its index and its call id
    (and, on a ``tool_call`` line, the tool and arguments) are the call's.

    Args:
        events: the log's events, in file order (:func:`~toolnursery.log.read_log`).
        calls: the batch's calls, in model order (the same calls as the crashed run).
        is_idempotent: whether a call's tool may safely run again.
        batch_id: the batch to resume; ``None`` picks the last recorded batch whose
            lines all belong to ``calls``.

    Returns:
        The plan; pure: nothing runs, nothing is read but ``events``.

    Raises:
        ResumeError: ``batch_id`` is recorded with other calls than ``calls``; or a
            batch that records lines of these calls also holds a line of another call
            at one of their indices (an edited or merged log: which is right cannot be
            told).
    """
    batches: dict[str, _Recorded] = {}
    for event in events:
        recorded = batches.get(event.batch)
        if recorded is None:
            recorded = batches[event.batch] = _Recorded()
        recorded.add(event)
    safe = [json_safe(call) for call in calls]
    if batch_id is not None:
        found = batches.get(batch_id)
        if found is not None:
            mismatch = _mismatch(found, safe) or _stray(found, safe)
            if mismatch is not None:
                raise ResumeError(f'cannot resume batch "{batch_id}": {mismatch}')
        return _plan(batch_id, found or _Recorded(), calls, is_idempotent, ())
    notes: list[str] = []
    for name in reversed(batches):
        recorded = batches[name]
        if _mismatch(recorded, safe) is not None:
            continue  # it started other calls: another batch
        stray = _stray(recorded, safe)
        if stray is None:
            return _plan(name, recorded, calls, is_idempotent, tuple(notes))
        if recorded.calls or any(
            index < len(safe) and call_id == safe[index].id for _, index, call_id in recorded.lines
        ):
            raise ResumeError(f'cannot resume batch "{name}": it records these calls, and {stray}')
        notes.append(f'batch "{name}" not resumed: {stray}, and it has no call line')
    return _plan(None, _Recorded(), calls, is_idempotent, tuple(notes))


def _mismatch(recorded: _Recorded, calls: list[ToolCall]) -> str | None:
    """Why ``recorded``'s call lines are not ``calls`` (``None``: they are)."""
    for index in sorted(recorded.calls):
        if index >= len(calls):
            return f"the log records a call at index {index}, and there are {len(calls)} calls"
        call = recorded.calls[index]
        if call != calls[index]:
            return f"the log records call {call.id!r} ({call.name}) at index {index}, not {calls[index].id!r}"
    return None


def _stray(recorded: _Recorded, calls: list[ToolCall]) -> str | None:
    """The first result, context or progress line of ``recorded`` that is not of the
    call at its index (``None``: every one is)."""
    for kind, index, call_id in recorded.lines:
        if index >= len(calls):
            return f"its {kind} line at index {index} is past the last of {len(calls)} calls"
        if call_id != calls[index].id:
            return (
                f"its {kind} line at index {index} is for call {call_id!r}, not {calls[index].id!r}"
            )
    return None


def _plan(
    batch_id: str | None,
    recorded: _Recorded,
    calls: Sequence[ToolCall],
    is_idempotent: Callable[[ToolCall], bool],
    notes: tuple[str, ...],
) -> ResumePlan:
    entries: list[ResumedCall] = []
    seen: set[str] = set()
    # A line of a call whose call line is missing: it may have started (its line says
    # so), and a result there cannot be checked against the call's tool and arguments.
    orphans = {index for _, index, _ in recorded.lines if index not in recorded.calls}
    for index, call in enumerate(calls):
        result = recorded.results.get(index)
        duplicate = call.id in seen
        seen.add(call.id)
        note = None
        if index in orphans:
            note = (
                f"the log holds a {'result' if result is not None else 'line'} of call "
                f"{call.id!r} at index {index} without its call line; not trusted"
            )
            result = None
        started = index in recorded.calls or note is not None
        answer = recorded.answers.get(index) if note is None else None
        held = index in recorded.held and note is None
        code = result.error.code if result is not None and result.error is not None else None
        if result is not None and not (
            result.is_error
            and code in _RERUN_CODES
            and (code == TOOL_ABORTED_BEFORE_DISPATCH or is_idempotent(call))
        ):
            contexts = tuple(recorded.contexts.get(index, ()))
            if contexts:
                result = msgspec.structs.replace(result, additional_contexts=contexts)
            entry = ResumedCall(
                index=index,
                call=call,
                action="replay",
                result=result,
                started=True,
                approval=answer,
            )
        elif duplicate:
            entry = ResumedCall(
                index=index,
                call=call,
                action="duplicate",
                result=failure_result(DuplicateCallIdError(call.id)),
                started=started,
                note=note,
            )
        elif answer == "rejected":
            entry = ResumedCall(
                index=index,
                call=call,
                action="rejected",
                result=text_result(f'Error: the user rejected tool "{call.name}"'),
                started=True,
                approval=answer,
            )
        elif not started or held or code == TOOL_ABORTED_BEFORE_DISPATCH or is_idempotent(call):
            entry = ResumedCall(
                index=index, call=call, action="run", started=started, note=note, approval=answer
            )
        else:
            entry = ResumedCall(
                index=index,
                call=call,
                action="interrupted",
                result=failure_result(InterruptedCallError(call.name)),
                started=True,
                note=note,
                approval=answer,
            )
        entries.append(entry)
    notes += tuple(entry.note for entry in entries if entry.note is not None)
    return ResumePlan(batch_id=batch_id, calls=tuple(entries), notes=notes)


# -- carrying a plan out ------------------------------------------------------------------


class PlannedRun:
    """What carrying out a plan takes: the calls to run, their recorder, the merge.

    The calls to run form one batch (under ``plan.batch_id``); :meth:`recorder` wraps
    the caller's recorder so their events keep their original indices and the decided
    results (interrupted, duplicate) are recorded in model order; :meth:`merge` puts
    the results together in model order, and :meth:`ordered` streams them so.
    """

    def __init__(self, plan: ResumePlan) -> None:
        self.plan = plan
        self.to_run = [entry for entry in plan.calls if entry.action == "run"]
        self.indices = [entry.index for entry in self.to_run]
        self._recorder: ResumedRecorder | None = None
        self._shown = 0

    @property
    def calls(self) -> list[ToolCall]:
        """The calls that run, in model order."""
        return [entry.call for entry in self.to_run]

    def recorder(self, inner: ToolCallRecorder | None) -> ToolCallRecorder | None:
        """The recorder to give the batch of the calls that run (with no ``inner``, one
        that keeps nothing when a call that runs has a recorded answer to reuse)."""
        if inner is None:
            if not any(entry.approval is not None for entry in self.to_run):
                return None
            inner = _Discard()
        self._recorder = ResumedRecorder(inner, self.plan.batch_id, self.plan, self.indices)
        return self._recorder

    def finish(self) -> None:
        """Record the decided results not recorded yet (call once the batch is done)."""
        recorder = self._recorder
        if recorder is not None:
            if recorder.batch is None:  # nothing ran, nothing recorded: an id of its own
                recorder.batch = uuid.uuid4().hex
            recorder.flush()

    def ordered(
        self, ran: int, result: ToolExecutionResult | None
    ) -> Iterator[tuple[ToolCall, ToolExecutionResult]]:
        """The results to show now, in model order, once ``ran`` calls that run have
        committed, the last of them with ``result`` (``None``: the batch is over)."""
        upto = len(self.plan.calls) if result is None else self.indices[ran - 1]
        entries = self.plan.calls
        while self._shown < upto:
            entry = entries[self._shown]
            self._shown += 1
            if entry.result is not None:
                yield entry.call, entry.result
        if result is not None:
            self._shown += 1
            yield entries[upto].call, result

    def merge(self, ran: Sequence[ToolExecutionResult]) -> list[ToolExecutionResult]:
        """Every call's result, in model order, given the results of the calls that ran."""
        results = [entry.result for entry in self.plan.calls]
        for index, result in zip(self.indices, ran, strict=True):
            results[index] = result
        return [result for result in results if result is not None]


class _Discard:
    __slots__ = ()

    def record(self, event: RecorderEvent, /) -> None:
        pass


class ResumedRecorder:
    """The recorder of a resumed batch's runs: events under their original indices,
    each decided result (interrupted, duplicate, rejected) recorded in model order, and
    the recorded answers the calls that run reuse (:meth:`answer`)."""

    __slots__ = ("batch", "indices", "inner", "pending", "plan")

    def __init__(
        self, inner: ToolCallRecorder, batch: str | None, plan: ResumePlan, indices: list[int]
    ) -> None:
        self.inner = inner
        self.batch = batch
        self.plan = plan
        self.indices = indices
        decided = ("interrupted", "duplicate", "rejected")
        self.pending = [e for e in plan.calls if e.action in decided]

    def answer(self, index: int, call_id: str) -> ApprovalOutcome | None:
        """The recorded answer the call at ``index`` of the running batch reuses (an
        ``allowed-once``), else ``None``: the call is asked."""
        if index >= len(self.indices):
            return None
        entry = self.plan.calls[self.indices[index]]
        if entry.call.id != call_id or entry.approval != "allowed-once":
            return None
        return entry.approval

    def record(self, event: RecorderEvent, /) -> None:
        index = self.indices[event.index]
        if self.batch is None:
            self.batch = event.batch
        if isinstance(event, ToolResultEvent | ContextEvent):
            self.flush(index)
        self.inner.record(msgspec.structs.replace(event, index=index))

    def flush(self, before: int | None = None) -> None:
        """Record the decided results of the calls before ``before`` (all: ``None``)."""
        pending = self.pending
        batch = self.batch
        while pending and (before is None or pending[0].index < before):
            entry = pending.pop(0)
            assert entry.result is not None
            assert batch is not None
            if not entry.started or entry.note is not None:  # the log gets the call line
                self.inner.record(ToolCallEvent(batch, entry.index, entry.call))
            self.inner.record(ToolResultEvent(batch, entry.index, entry.call.id, entry.result))


async def carry_out(
    planned: PlannedRun,
    recorder: ToolCallRecorder | None,
    run: Callable[
        [list[ToolCall], ToolCallRecorder | None, str | None], Awaitable[list[ToolExecutionResult]]
    ],
) -> list[ToolExecutionResult]:
    """Carry a plan out: ``run(calls, recorder, batch_id)`` runs the calls that run (on
    either driver), then the decided results are recorded and all are merged."""
    given = planned.recorder(recorder)
    ran: list[ToolExecutionResult] = []
    if planned.to_run:
        ran = await run(planned.calls, given, planned.plan.batch_id)
    planned.finish()
    return planned.merge(ran)


def is_idempotent(registry: ToolRegistry, agent: ToolScope | None) -> Callable[[ToolCall], bool]:
    """Whether a call's tool, as ``agent`` sees it, declares ``idempotent=True``."""

    def check(call: ToolCall) -> bool:
        definition = registry.get(call.name, agent)
        return definition is not None and definition.idempotent is True

    return check


def read_plan(
    registry: ToolRegistry,
    calls: Sequence[ToolCall],
    log: str | os.PathLike[str],
    *,
    agent: ToolScope | None = None,
    batch_id: str | None = None,
) -> ResumePlan:
    """Read ``log`` and plan resuming ``calls`` (a missing log: every call runs).

    Raises:
        ResumeError: ``batch_id`` is recorded with other calls.
        LogFormatError: ``log`` is not a toolnursery log.
        OSError: ``log`` exists but cannot be read.
    """
    try:
        events = read_log(log)
    except FileNotFoundError:
        events = []
    return plan_resume(events, calls, is_idempotent(registry, agent), batch_id=batch_id)
