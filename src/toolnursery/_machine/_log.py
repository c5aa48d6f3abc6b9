"""A batch machine's statistics and durable log: the part of
:class:`~toolnursery._machine._batch.BatchMachine` (its base class) that counts and
records, apart for its length."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .._core._content import ToolExecutionResult
from .._core._progress import CallReport
from .._core._statistics import Counters, ToolStatistics, outcome
from .._pipeline._call import CallRecord
from .._pipeline._registry import counters
from ._admission import Admission
from ._events import ContextEvent, ProgressEvent, ToolCallRecorder, ToolResultEvent

if TYPE_CHECKING:
    from .._pipeline._registry import ToolRegistry

__all__ = ["BatchLog", "micros"]


def micros(seconds: float) -> float:
    """``seconds`` to the microsecond: a short JSON number."""
    return int(seconds * 1_000_000) / 1_000_000


class BatchLog:
    """The statistics and the durable log of a batch (see the module docstring)."""

    __slots__ = ()

    id: str
    registry: ToolRegistry
    recorder: ToolCallRecorder | None
    calls: list[CallRecord]
    results: list[ToolExecutionResult]
    admission: Admission
    stats: Counters
    timings: bool
    started: int
    cursor: int
    finalized: bool
    report_index: dict[str, int]
    stamps: dict[int, list[float | None]] | None
    clock: Callable[[], float]
    t0: float

    # -- statistics ----------------------------------------------------------------------

    def statistics(self) -> ToolStatistics:
        """A frozen snapshot of the batch (see :meth:`ToolBatch.statistics`)."""
        codes: dict[str, int] = {}
        for result in self.results:
            key = outcome(result)
            codes[key] = codes.get(key, 0) + 1
        return self.stats.snapshot(self.started, self.cursor, codes, self.admission.waiting)

    def fold_statistics(self) -> None:
        """Add this batch's phase times to the registry's; count calls never committed.

        The phase times reach the registry when the batch ends (one addition per phase,
        not per call). A started call that did not commit (internal failure,
        cancellation from an enclosing scope) is abandoned.
        """
        stats = self.stats
        into = counters(self.registry)
        if self.timings:  # (phase times are taken only then)
            into.prepare += stats.prepare
            into.wait += stats.wait
            into.dispatch += stats.dispatch
            into.finalize += stats.finalize
        cursor, started = self.cursor, self.started
        if cursor >= started:
            return
        stats.abandoned = started - cursor
        # The registry counted a call as committed once it passed finalize.
        unfinalized = self.calls[cursor + self.finalized : started]
        into.abandoned += sum(1 for call in unfinalized if call.plan is not None)

    # -- the durable log -------------------------------------------------------------------

    def record_report(self, report: CallReport) -> None:
        """Record a report of one of this batch's calls as a ``progress`` event."""
        recorder = self.recorder
        call_id = report.call_id
        if recorder is None or call_id is None:
            return
        known = self.report_index
        index = known.get(call_id)
        if index is None:
            for call in self.calls[len(known) :]:
                known.setdefault(call.call_id, call.index)  # a repeated id never runs
            index = known.get(call_id)
            if index is None:
                return  # not this batch's call (a nested batch's, say)
        recorder.record(ProgressEvent(self.id, index, call_id, report, self.offset()))

    def offset(self) -> float:
        """Seconds since the batch run started (the driver's clock), to the microsecond."""
        return micros(self.clock() - self.t0)

    def result_event(self, call: CallRecord, result: ToolExecutionResult) -> ToolResultEvent:
        """The call's ``tool_result`` event: committed now, with its dispatch's times."""
        stamps = self.stamps
        stamp = stamps.pop(call.index, None) if stamps is not None else None
        if stamp is None:
            return ToolResultEvent(self.id, call.index, call.call_id, result, self.offset())
        t0 = self.t0
        admitted, began, ended = stamp
        starts = call.attempt_starts
        return ToolResultEvent(
            self.id,
            call.index,
            call.call_id,
            result,
            micros(self.clock() - t0),
            None if admitted is None else micros(admitted - t0),
            None if began is None else micros(began - t0),
            None if ended is None else micros(ended - t0),
            tuple(micros(s - t0) for s in starts) if starts and len(starts) > 1 else (),
        )

    def record_contexts(self) -> None:
        """Record every committed result's contexts (once all results are in)."""
        recorder = self.recorder
        if recorder is None:
            return
        for call, result in zip(self.calls, self.results, strict=True):
            for context in result.additional_contexts:
                recorder.record(ContextEvent(self.id, call.index, call.call_id, context))
