"""The commit side of a batch: settled calls finalized, recorded and published in model order.

:class:`BatchCommits` is the part of :class:`~toolnursery._batch._driver.ToolBatch` that
commits: the settled model-order prefix finalized (the post-execute hooks, in the driver
or, after the hand-off, in the worker that settled a call), its results recorded as
events and published to the readers, and the calls that never started given their
synthetic results. ``ToolBatch`` inherits it, so the driver and the workers call these
methods as the batch's own.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

import msgspec
import trio

from .._core._content import ToolExecutionResult
from .._core._outcomes import ABORTED_BEFORE_DISPATCH_RESULT
from .._core._progress import CallReport
from .._core._signal import CancelSignal
from .._core._statistics import Counters
from .._core._statistics import now as _now
from .._pipeline._call import RESOLVED, CallRecord, Slot
from .._pipeline._registry import ToolRegistry
from .._pipeline._stages import conclude, finalize_now
from . import _intake
from ._admission import Admission
from ._pool import WorkerPool
from ._recorder import ContextEvent, ProgressEvent, ToolCallEvent, ToolCallRecorder, ToolResultEvent

__all__ = ["BatchCommits"]


def _us(seconds: float) -> float:
    """``seconds`` (not negative) cut to the microsecond: a short JSON number."""
    return int(seconds * 1_000_000) / 1_000_000


_HAND_OFF_MAX = 16
"""The most dispatches in flight for which the driver hands the commits to its workers
(:meth:`ToolBatch._hand_off`): it saves one scheduler round (about 5 µs) per batch and
costs each commit about a third of a µs more."""


_NEW = Slot.NEW
_SETTLED = Slot.SETTLED
_COMMITTED = Slot.COMMITTED


class BatchCommits:
    """The commit side of :class:`~toolnursery._batch._driver.ToolBatch`, which sets
    this state up and runs the batch."""

    registry: ToolRegistry
    signal: CancelSignal
    recorder: ToolCallRecorder | None
    id: str
    _calls: list[CallRecord]
    _results: list[ToolExecutionResult]
    _started: int  # calls started, a model-order prefix
    _cursor: int  # calls committed, a model-order prefix
    _closed: bool
    _finalized: bool
    _failure: Exception | None
    _timings: bool
    _grace: float  # seconds the policy hooks may still run after an abort
    _stats: Counters
    _admission: Admission
    _pool: WorkerPool | None
    _handed_off: bool
    _wake_driver: trio.Event
    _wake_reader: trio.Event | None
    _report_index: dict[str, int]
    _stamps: dict[int, list[float | None]] | None
    _t0: float
    _wall: float

    async def _commit_ready(self) -> None:
        """Commit the settled model-order prefix: finalize, record, publish."""
        while True:
            pending = self._commit_now(post=True)
            if pending is None:
                return
            call, rest, begun = pending
            pool = self._pool
            if pool is not None and pool.owed:
                pool.flush()
            result = await rest  # a post-execute that suspended
            if self._timings:
                self._stats.finalize += _now() - begun
            self._commit(call, result, True)

    def _commit_now(
        self, *, post: bool
    ) -> tuple[CallRecord, Coroutine[Any, Any, ToolExecutionResult], int] | None:
        """Commit the settled model-order prefix as far as no commit awaits.

        Returns the call at the cursor whose post-execute suspended, with the rest of
        it to await and when its finalize began (:meth:`_commit_ready` awaits it and
        commits the call), or ``None``. ``post=False`` (a worker): stop at a call whose
        post-execute is due instead of running it.
        """
        calls = self._calls
        timings = self._timings
        recorder = self.recorder
        results = self._results
        while self._cursor < len(calls):
            call = calls[self._cursor]
            if call.slot is not _SETTLED:
                return None
            if call.plan is None or call.fixed is not None:
                result = call.fixed
                assert result is not None
                passed = False
            else:
                passed = True
                plan = call.plan
                if plan.version != plan.versions.value:  # call.current_plan(), inline
                    plan = call.current_plan()  # a listener added meanwhile runs
                hooks = plan.hooks
                due = hooks.post and call.state is RESOLVED
                if due and not post:
                    return None
                if timings and hooks.any_finalize:
                    begun = _now()
                    done = finalize_now(call, self._grace) if due else conclude(call, plan)
                    if type(done) is not ToolExecutionResult:
                        return call, done, begun  # type: ignore[return-value]
                    result = done
                    self._stats.finalize += _now() - begun
                elif due:
                    # Post-execute run by hand up to its first suspension: a coroutine
                    # of ours only when it does suspend.
                    done = finalize_now(call, self._grace)
                    if type(done) is not ToolExecutionResult:
                        return call, done, 0  # type: ignore[return-value]
                    result = done
                else:
                    result = conclude(call, plan)  # no post-execute due: no coroutine
            # self._commit(call, result, passed), inlined (the hot path):
            if self._failure is not None or recorder is not None:
                self._commit(call, result, passed)
                continue
            call.slot = _COMMITTED
            results.append(result)
            self._cursor += 1
            reader = self._wake_reader
            if reader is not None:
                reader.set()
        return None

    def _commit(self, call: CallRecord, result: ToolExecutionResult, passed: bool) -> None:
        """Record and publish the finalized call at the cursor (``passed``: it passed
        the registry's finalize)."""
        # A failure from here on leaves a call that passed finalize (its observers
        # ran) uncommitted: the registry counted it committed, not abandoned.
        if self._failure is not None:
            self._finalized = passed
            raise self._failure
        recorder = self.recorder
        if recorder is not None:
            # Contexts are recorded once, as context events after all results.
            recorded = (
                msgspec.structs.replace(result, additional_contexts=())
                if result.additional_contexts
                else result
            )
            try:
                recorder.record(self._result_event(call, recorded))
            except Exception:
                self._finalized = passed
                raise
        call.slot = _COMMITTED
        self._results.append(result)
        self._cursor += 1
        self._wake_readers()

    def _finish_unstarted(self) -> None:
        """Give every call that never started (abort) a synthetic result, in model order.

        These bypass the registry entirely: no policy, no observers.
        """
        calls = self._calls
        recorder = self.recorder
        while self._cursor < len(calls):
            call = calls[self._cursor]
            call.plan = None  # classified maybe, never started: not the registry's call
            self._started += 1
            if recorder is not None:
                tool_call = call.tool_call
                assert tool_call is not None
                now = self._offset()
                logged = _intake.loggable(tool_call)
                recorder.record(ToolCallEvent(self.id, call.index, logged, self._wall, now))
                recorder.record(
                    ToolResultEvent(
                        self.id, call.index, call.call_id, ABORTED_BEFORE_DISPATCH_RESULT, now
                    )
                )
            assert call.slot is _NEW
            call.slot = _COMMITTED
            self._results.append(ABORTED_BEFORE_DISPATCH_RESULT)
            self._cursor += 1
            self._wake_readers()

    def _wake_readers(self) -> None:
        """Wake a reader waiting in :meth:`__anext__` (``run_tool_calls`` has none)."""
        event = self._wake_reader
        if event is not None:
            event.set()

    def _hand_off(self) -> bool:
        """Whether the driver leaves the rest of the batch to its workers.

        Once every call of a closed batch has started, the driver has nothing left but
        to commit. Waiting for the dispatches in flight in the nursery's exit, rather
        than on its own wake-up (then leaving the nursery, a schedule point of its
        own), saves the batch a round of the trio scheduler: each worker that settles a
        call commits the settled prefix (:meth:`_settled`: observers and the recorder,
        which never await), and the driver commits whatever is left once the pool has
        ended (:meth:`_after_pool`). Not when a call still to commit has a post-execute
        hook: that runs in the driver as soon as its call settles. Nor when more than
        :data:`_HAND_OFF_MAX` dispatches are in flight: a round is worth less than a
        worker's commit costs over the driver's for that many calls.
        """
        calls = self._calls
        if (
            not self._closed
            or self._started < len(calls)
            or self._pool is None
            or self._admission.admitted > _HAND_OFF_MAX
        ):
            return False
        if self._failure is not None:
            raise self._failure
        self._pool.flush()
        self._commit_now(post=False)
        for call in calls[self._cursor :]:
            plan = call.plan
            if plan is not None and plan.hooks.post:
                # A post-execute runs as soon as its call settles, in the driver: no
                # hand-off (workers never run it).
                return False
        self._handed_off = True
        if not self._admission.admitted:
            self._pool.finish()  # nothing in flight: the pool's leftovers end now
        return True

    def _settled(self) -> None:
        """A worker settled a call: wake the driver; after the hand-off, commit."""
        self._wake_driver.set()
        if self._handed_off:
            pool = self._pool
            assert pool is not None
            if self._failure is None and (not pool.unwinding or self.signal._cancelled):
                # (Once a call was cancelled, and not by the batch's abort, something
                # outside cancels the batch: nothing is committed any more, here.)
                try:
                    self._commit_now(post=False)
                except Exception as exc:
                    self._failed(exc)  # the driver re-raises it once the pool has ended
            if not self._admission.admitted:
                pool.finish()  # the last dispatch settled: what a body left running ends

    def _failed(self, exc: Exception) -> None:
        """A dispatch failed internally (not a result): the driver re-raises the first."""
        if self._failure is None:
            self._failure = exc

    def _fold_statistics(self) -> None:
        """Add this batch's phase times to the registry's; count calls never committed.

        The phase times reach the registry when the batch ends (one addition per
        phase, not per call). A started call that did not commit (internal failure,
        cancellation from an enclosing scope) is abandoned.
        """
        stats = self._stats
        into = self.registry._stats
        into.prepare += stats.prepare
        into.wait += stats.wait
        into.dispatch += stats.dispatch
        into.finalize += stats.finalize
        cursor, started = self._cursor, self._started
        if cursor >= started:
            return
        stats.abandoned = started - cursor
        # The registry counted a call as committed once it passed finalize.
        unfinalized = self._calls[cursor + self._finalized : started]
        into.abandoned += sum(1 for call in unfinalized if call.plan is not None)

    def _record_report(self, report: CallReport) -> None:
        """Record a report of one of this batch's calls as a ``progress`` event."""
        recorder = self.recorder
        call_id = report.call_id
        if recorder is None or call_id is None:
            return
        known = self._report_index
        index = known.get(call_id)
        if index is None:
            for call in self._calls[len(known) :]:
                known.setdefault(call.call_id, call.index)  # a repeated id never runs
            index = known.get(call_id)
            if index is None:
                return  # not this batch's call (a nested batch's, say)
        recorder.record(ProgressEvent(self.id, index, call_id, report, self._offset()))

    def _offset(self) -> float:
        """Seconds since the batch run started (trio's clock), to the microsecond."""
        return _us(trio.current_time() - self._t0)

    def _result_event(self, call: CallRecord, result: ToolExecutionResult) -> ToolResultEvent:
        """The call's ``tool_result`` event: committed now, with its dispatch's times."""
        stamps = self._stamps
        stamp = stamps.pop(call.index, None) if stamps is not None else None
        if stamp is None:
            return ToolResultEvent(self.id, call.index, call.call_id, result, self._offset())
        t0 = self._t0
        admitted, began, ended = stamp
        starts = call.attempt_starts
        return ToolResultEvent(
            self.id,
            call.index,
            call.call_id,
            result,
            _us(trio.current_time() - t0),
            None if admitted is None else _us(admitted - t0),
            None if began is None else _us(began - t0),
            None if ended is None else _us(ended - t0),
            tuple(_us(s - t0) for s in starts) if starts and len(starts) > 1 else (),
        )

    def _record_contexts(self) -> None:
        recorder = self.recorder
        if recorder is None:
            return
        for call, result in zip(self._calls, self._results, strict=True):
            for context in result.additional_contexts:
                recorder.record(ContextEvent(self.id, call.index, call.call_id, context))
