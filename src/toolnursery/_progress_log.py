"""Recording the reports of a batch's calls as durable ``progress`` events."""

from __future__ import annotations

from ._progress import CallReport
from ._recorder import (
    ProgressEvent,
    RecorderEvent,
    ToolCallEvent,
    ToolCallRecorder,
    ToolResultEvent,
)

__all__ = ["ReportingRecorder"]


class ReportingRecorder:
    """A recorder that also records its calls' reports (a report sink).

    It forwards every event to ``inner``, and :meth:`report` records each report of
    a call in flight as a :class:`ProgressEvent` carrying that call's batch and
    index, so a log replays the progress in order with the calls. Install it as
    both the batch's recorder and a sink around the batch::

        recorder = ReportingRecorder(JsonlRecorder("run.jsonl"))
        with reporting(recorder.report):
            await run_tool_calls(registry, calls, recorder=recorder)

    Reports without a call id, or from a call not in flight in a batch it records,
    are not recorded.
    """

    def __init__(self, inner: ToolCallRecorder) -> None:
        self.inner = inner
        self._running: dict[str, list[tuple[str, int]]] = {}

    def record(self, event: RecorderEvent, /) -> None:
        """Forward ``event``, noting which calls are in flight."""
        self.inner.record(event)
        if isinstance(event, ToolCallEvent):
            self._running.setdefault(event.call.id, []).append((event.batch, event.index))
        elif isinstance(event, ToolResultEvent):
            places = self._running.get(event.call_id)
            if places is not None:
                try:
                    places.remove((event.batch, event.index))
                except ValueError:
                    pass
                if not places:
                    del self._running[event.call_id]

    def report(self, report: CallReport, /) -> None:
        """Record one report of a call in flight."""
        call_id = report.call_id
        places = None if call_id is None else self._running.get(call_id)
        if not places or call_id is None:
            return
        batch, index = places[0]  # a duplicate id in flight: the earliest call
        self.inner.record(ProgressEvent(batch, index, call_id, report))
