"""``run --progress``: a one-line status on stderr, fed by the batch's recorder events."""

from __future__ import annotations

import shutil
from collections import Counter
from typing import TextIO

from .._batch._recorder import (
    ProgressEvent,
    RecorderEvent,
    ToolCallEvent,
    ToolCallRecorder,
    ToolResultEvent,
)
from .._core._progress import ProgressReport

__all__ = ["ProgressLine"]


class ProgressLine:
    """A one-line status on a terminal, fed by the batch's recorder events.

    It forwards every event to ``inner`` (the ``--log`` recorder) first, so the
    durable log never depends on the display.
    """

    def __init__(self, stream: TextIO, total: int, inner: ToolCallRecorder | None) -> None:
        self.stream = stream
        self.total = total
        self.inner = inner
        self.running: dict[int, str] = {}
        self.progress: dict[int, str] = {}
        self.done = 0
        self.errors = 0
        self.shown = False

    def record(self, event: RecorderEvent, /) -> None:
        """Forward ``event`` to the log, then redraw if it changed the status."""
        if self.inner is not None:
            self.inner.record(event)
        if isinstance(event, ToolCallEvent):
            self.running[event.index] = event.call.name
        elif isinstance(event, ProgressEvent):
            report = event.report
            if not isinstance(report, ProgressReport) or event.index not in self.running:
                return
            self.progress[event.index] = _progress_text(report)
        elif isinstance(event, ToolResultEvent):
            self.running.pop(event.index, None)
            self.progress.pop(event.index, None)
            self.done += 1
            self.errors += event.result.is_error
        else:
            return
        self.draw()

    def status(self) -> str:
        """The status line: calls done and failed, the tools running, the latest progress."""
        errors = f", {self.errors} failed" if self.errors else ""
        counts = Counter(self.running.values())
        names = ", ".join(f"{n} x{c}" if c > 1 else n for n, c in counts.items())
        running = f"  running: {names}" if names else ""
        latest = next(reversed(self.progress.items()), None)
        if latest is not None:
            running += f"  [{self.running[latest[0]]} {latest[1]}]"
        return f"toolnursery: {self.done}/{self.total} done{errors}{running}"

    def draw(self) -> None:
        """Redraw the status in place, cut to the terminal's width."""
        width = shutil.get_terminal_size((80, 24)).columns - 1
        self._write("\r\x1b[2K" + self.status()[:width])
        self.shown = True

    def clear(self) -> None:
        """Erase the status, so that a result or message can be written on a clean line."""
        if self.shown:
            self._write("\r\x1b[2K")
            self.shown = False

    def finish(self) -> None:
        """Replace the status with a final count that stays on the screen."""
        self.clear()
        errors = f", {self.errors} failed" if self.errors else ""
        self._write(f"toolnursery: {self.done}/{self.total} done{errors}\n")

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            pass  # a display that cannot be written is not worth failing the batch over


def _progress_text(report: ProgressReport) -> str:
    amount = f"{report.progress:g}" + (f"/{report.total:g}" if report.total is not None else "")
    return f"{amount} {report.message}" if report.message else amount
