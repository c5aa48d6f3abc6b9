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
  ``interrupted``), so a side effect never happens twice.

Which batch of the log is resumed: the one named by ``batch_id``, else the last batch
whose recorded calls are exactly these calls at their indices. When no batch matches,
no call of these has started, so every call runs (in a new batch).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Final, Literal, TypeAlias

import msgspec

from ._content import HookContext, ToolCall, ToolExecutionResult
from ._errors import (
    TOOL_ABORTED,
    TOOL_ABORTED_BEFORE_DISPATCH,
    InterruptedCallError,
    ResumeError,
)
from ._outcomes import _failure, json_safe
from ._recorder import ContextEvent, RecorderEvent, ToolCallEvent, ToolResultEvent

__all__ = ["ResumeAction", "ResumePlan", "ResumedCall", "plan_resume"]

ResumeAction: TypeAlias = Literal["replay", "run", "interrupted"]
"""What a resumed batch does with one call: return the recorded result, run the
call, or give it the ``INTERRUPTED`` result."""


class ResumedCall(msgspec.Struct, frozen=True, kw_only=True):
    """One call of a resumed batch, and what resuming does with it.

    Attributes:
        index: the call's position in the batch.
        call: the call.
        action: ``replay``, ``run`` or ``interrupted``.
        result: for ``replay`` the recorded result (its recorded contexts attached),
            for ``interrupted`` the ``INTERRUPTED`` result; ``None`` for ``run``.
        started: the log records the call as started before (so ``run`` is a re-run).
    """

    index: int
    call: ToolCall
    action: ResumeAction
    result: ToolExecutionResult | None = None
    started: bool = False


class ResumePlan(msgspec.Struct, frozen=True, kw_only=True):
    """What resuming a batch does, call by call.

    Attributes:
        batch_id: the resumed batch's id (reused, so each call's idempotency key is the
            one its first run saw); ``None`` when no recorded batch matched (every call
            runs, in a new batch).
        calls: one entry per call, in model order.
    """

    batch_id: str | None
    calls: tuple[ResumedCall, ...]

    def count(self, action: ResumeAction) -> int:
        """How many calls the plan gives ``action``."""
        return sum(1 for entry in self.calls if entry.action == action)


class _Recorded:
    __slots__ = ("calls", "contexts", "results")

    def __init__(self) -> None:
        self.calls: dict[int, ToolCall] = {}
        self.results: dict[int, ToolExecutionResult] = {}
        self.contexts: dict[int, list[HookContext]] = {}


_RERUN_CODES: Final = frozenset({TOOL_ABORTED, TOOL_ABORTED_BEFORE_DISPATCH})


def plan_resume(
    events: Iterable[RecorderEvent],
    calls: Sequence[ToolCall],
    is_idempotent: Callable[[ToolCall], bool],
    *,
    batch_id: str | None = None,
) -> ResumePlan:
    """Decide what resuming ``calls`` from a log's ``events`` does with each call.

    Args:
        events: the log's events, in file order (:func:`~toolnursery.read_log`).
        calls: the batch's calls, in model order (the same calls as the crashed run).
        is_idempotent: whether a call's tool may safely run again.
        batch_id: the batch to resume; ``None`` picks the last recorded batch whose
            calls match ``calls``.

    Returns:
        The plan; pure: nothing runs, nothing is read but ``events``.

    Raises:
        ResumeError: ``batch_id`` is recorded with other calls than ``calls``.
    """
    batches: dict[str, _Recorded] = {}
    for event in events:
        recorded = batches.get(event.batch)
        if recorded is None:
            recorded = batches[event.batch] = _Recorded()
        if isinstance(event, ToolCallEvent):
            recorded.calls.setdefault(event.index, event.call)
        elif isinstance(event, ToolResultEvent):
            recorded.results[event.index] = event.result
            recorded.contexts.pop(event.index, None)  # a re-run's contexts follow it
        elif isinstance(event, ContextEvent):
            recorded.contexts.setdefault(event.index, []).append(event.context)
    safe = [json_safe(call) for call in calls]
    if batch_id is not None:
        found = batches.get(batch_id)
        if found is not None:
            mismatch = _mismatch(found, safe)
            if mismatch is not None:
                raise ResumeError(f'cannot resume batch "{batch_id}": {mismatch}')
        return _plan(batch_id, found or _Recorded(), calls, is_idempotent)
    for name in reversed(batches):
        if _mismatch(batches[name], safe) is None:
            return _plan(name, batches[name], calls, is_idempotent)
    return _plan(None, _Recorded(), calls, is_idempotent)


def _mismatch(recorded: _Recorded, calls: list[ToolCall]) -> str | None:
    for index in sorted(recorded.calls.keys() | recorded.results.keys()):
        if index >= len(calls):
            return f"the log records a call at index {index}, and there are {len(calls)} calls"
        call = recorded.calls.get(index)
        if call is not None and call != calls[index]:
            return f"the log records call {call.id!r} ({call.name}) at index {index}, not {calls[index].id!r}"
    return None


def _plan(
    batch_id: str | None,
    recorded: _Recorded,
    calls: Sequence[ToolCall],
    is_idempotent: Callable[[ToolCall], bool],
) -> ResumePlan:
    entries: list[ResumedCall] = []
    for index, call in enumerate(calls):
        result = recorded.results.get(index)
        started = index in recorded.calls or result is not None
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
                index=index, call=call, action="replay", result=result, started=True
            )
        elif not started or code == TOOL_ABORTED_BEFORE_DISPATCH or is_idempotent(call):
            entry = ResumedCall(index=index, call=call, action="run", started=started)
        else:
            entry = ResumedCall(
                index=index,
                call=call,
                action="interrupted",
                result=_failure(InterruptedCallError(call.name)),
                started=True,
            )
        entries.append(entry)
    return ResumePlan(batch_id=batch_id, calls=tuple(entries))
