"""A recorded batch's approvals: each ``Ask`` asked and answered in the batch's log.

A batch with a recorder routes its calls' approval requests through a
:class:`BatchJournal` (the driver installs it with the progress sink: :func:`open_log`). For a request of
one of its calls, the journal

* answers from the log, without asking, when the batch resumes a log that recorded an
  ``allowed-once`` for the call (the call is run again: its body never ran, or its tool
  is idempotent — see :mod:`toolnursery._batch._resume`);
* else records the question (an ``approval`` event with no outcome) before the service
  is awaited, and the answer before the call goes on to be dispatched or denied.

So the log says, of every call that asked: what it asked (the reason and the provenance
findings), what the answer was, and — when its last line is the question, or an answer
other than ``allowed-once`` — that its body was never dispatched.
"""

from __future__ import annotations

from collections.abc import Coroutine
from contextvars import Token
from typing import Any, Final, get_args

from .._core._execution import ApprovalOutcome, ApprovalRequest, ApprovalService
from .._core._journal import ApprovalJournal, install_journal, remove_journal
from .._core._progress import ReportSink, install_sink, remove_sink
from .._machine._batch import BatchMachine
from .._machine._events import ApprovalEvent
from ._resume import ResumedRecorder

__all__ = ["BatchJournal", "LogSinks", "close_log", "open_log"]

_OUTCOMES: Final = frozenset(get_args(ApprovalOutcome))


class BatchJournal:
    """The approvals of one batch's calls, recorded in its log (see the module)."""

    __slots__ = ("index", "machine")

    def __init__(self, machine: BatchMachine) -> None:
        self.machine = machine
        self.index: dict[str, int] = {}  # call id -> index (a repeated id never asks)

    def ask(
        self, service: ApprovalService, request: ApprovalRequest
    ) -> Coroutine[Any, Any, ApprovalOutcome] | None:
        machine = self.machine
        if request.signal is not machine.signal:
            return None  # a call of another batch (a nested one without a log)
        index = self.index.get(request.call_id)
        if index is None:
            for call in machine.calls[len(self.index) :]:
                self.index.setdefault(call.call_id, call.index)
            index = self.index.get(request.call_id)
            if index is None:  # pragma: no cover - every call of the batch is added first
                return None
        return self.answer(service, request, index)

    async def answer(
        self, service: ApprovalService, request: ApprovalRequest, index: int
    ) -> ApprovalOutcome:
        recorder = self.machine.recorder
        if isinstance(recorder, ResumedRecorder):
            known = recorder.answer(index, request.call_id)
            if known is not None:
                return known
        self.record(request, index, None)
        outcome = await service.request(request)
        if outcome in _OUTCOMES:  # else the call fails as unanswered (not dispatched)
            self.record(request, index, outcome)
        return outcome

    def record(self, request: ApprovalRequest, index: int, outcome: ApprovalOutcome | None) -> None:
        machine = self.machine
        recorder = machine.recorder
        if recorder is None:  # pragma: no cover - a journal is opened for a recorder only
            return
        event = ApprovalEvent(
            machine.id,
            index,
            request.call_id,
            request.tool_name,
            outcome,
            request.reason,
            request.provenance,
            machine.offset(),
        )
        try:
            recorder.record(event)
        except Exception as exc:
            # The call fails closed (its policy fails: it is not dispatched), and the
            # batch fails as for any recorder that raises.
            if machine.failure is None:
                machine.failure = exc
            raise


class LogSinks:
    """What a recorded batch installs for its calls: the progress sink and the journal."""

    __slots__ = ("journal", "reports")

    def __init__(
        self, reports: Token[ReportSink | None], journal: Token[ApprovalJournal | None]
    ) -> None:
        self.reports: Token[ReportSink | None] = reports
        self.journal: Token[ApprovalJournal | None] = journal


def open_log(machine: BatchMachine) -> LogSinks:
    """Make a recorded batch's progress reports and approvals durable events: install
    its progress sink and its :class:`BatchJournal` (the tasks it starts inherit both)."""
    reports = install_sink(machine.record_report)
    return LogSinks(reports, install_journal(BatchJournal(machine)))


def close_log(sinks: LogSinks) -> None:
    """Undo :func:`open_log` (``ValueError`` in another context, as ``remove_sink``)."""
    remove_journal(sinks.journal)
    remove_sink(sinks.reports)
