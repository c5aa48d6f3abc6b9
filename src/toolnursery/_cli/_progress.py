"""``run --progress``: the batch's status on stderr, fed by its recorder events.

On a terminal with rich (the ``cli`` extra), a :class:`LiveView` of the calls in
flight; otherwise a one-line :class:`ProgressLine`.
"""

from __future__ import annotations

import io
import math
import shutil
import time
from collections import Counter
from collections.abc import Callable
from typing import TextIO

from .._batch._recorder import (
    ProgressEvent,
    RecorderEvent,
    ToolCallEvent,
    ToolCallRecorder,
    ToolResultEvent,
)
from .._core._content import ToolCall
from .._core._controls import shown
from .._core._progress import ProgressReport

__all__ = ["LiveView", "ProgressLine"]


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
        # One line, whatever the tools' names and messages hold: no control character
        # (an ESC sequence, a newline) reaches the terminal.
        return shown(f"toolnursery: {self.done}/{self.total} done{errors}{running}", newlines=False)

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


class LiveView:
    """In-flight calls with their progress bars and elapsed times, on a terminal (rich).

    Drawn below the results as they are written: one line per running call — its id
    and tool, a bar from its latest ``ctx.report_progress`` (a pulse while it has
    reported no total), the report's message, and how long it has run — under a
    count of the calls done. :meth:`clear` erases it before a result is written,
    :meth:`draw` puts it back, and :meth:`finish` leaves the summary. Like
    :class:`ProgressLine`, it forwards every event to ``inner`` first.

    Args:
        stream: the terminal (stderr).
        total: the calls in the batch.
        inner: the ``--log`` recorder, or ``None``.
        clock: seconds, monotonic (default :func:`time.monotonic`).
        width: the terminal's columns (default: measured at each draw).
        rows: the most calls listed (the rest are counted).
        interval: the least seconds between two renderings for events (a tick always
            renders).
    """

    def __init__(
        self,
        stream: TextIO,
        total: int,
        inner: ToolCallRecorder | None,
        *,
        clock: Callable[[], float] = time.monotonic,
        width: int | None = None,
        rows: int = 12,
        interval: float = 0.1,
    ) -> None:
        self.stream = stream
        self.total = total
        self.inner = inner
        self.clock = clock
        self.width = width
        self.rows = rows
        self.began = clock()
        self.running: dict[int, tuple[ToolCall, float]] = {}
        self.progress: dict[int, ProgressReport] = {}
        self.done = 0
        self.errors = 0
        self.lines = 0  # lines drawn, erased by clear()
        self.interval = interval
        self._text = ""
        self._stale = True  # changed since last rendered
        self._rendered_at = -math.inf

    def record(self, event: RecorderEvent, /) -> None:
        """Forward ``event`` to the log, then redraw if it changed the view."""
        if self.inner is not None:
            self.inner.record(event)
        if isinstance(event, ToolCallEvent):
            self.running[event.index] = (event.call, self.clock())
        elif isinstance(event, ProgressEvent):
            report = event.report
            if not isinstance(report, ProgressReport) or event.index not in self.running:
                return
            self.progress[event.index] = report
        elif isinstance(event, ToolResultEvent):
            self.running.pop(event.index, None)
            self.progress.pop(event.index, None)
            self.done += 1
            self.errors += event.result.is_error
        else:
            return
        self._stale = True
        self.draw()

    def render(self) -> str:
        """The view as terminal text (ANSI styles, no trailing newline)."""
        from rich.console import Console
        from rich.progress_bar import ProgressBar
        from rich.table import Table
        from rich.text import Text

        width = self.width or shutil.get_terminal_size((80, 24)).columns
        now = self.clock()
        errors = f", {self.errors} failed" if self.errors else ""
        head = Text(f"toolnursery: {self.done}/{self.total} done{errors}", style="bold")
        head.append(f"  {_elapsed(now - self.began)}", style="dim")
        table = Table.grid(padding=(0, 1))
        table.add_column(no_wrap=True, overflow="ellipsis", max_width=max(width // 3, 12))
        table.add_column(width=20)
        table.add_column(no_wrap=True, overflow="ellipsis", ratio=1)
        table.add_column(no_wrap=True, justify="right", width=8)
        listed = list(self.running.items())[: self.rows]
        for index, (call, since) in listed:
            report = self.progress.get(index)
            if report is not None and report.total:
                bar = ProgressBar(total=report.total, completed=report.progress, width=20)
            else:
                bar = ProgressBar(total=None, width=20, animation_time=now)
            text = "" if report is None else _progress_text(report)
            table.add_row(
                Text(shown(f"{call.id} {call.name}", newlines=False), style="cyan"),
                bar,
                Text(shown(text, newlines=False)),
                Text(_elapsed(now - since), style="dim"),
            )
        console = Console(
            file=io.StringIO(), force_terminal=True, width=width - 1, color_system="standard"
        )
        with console.capture() as capture:
            console.print(head)
            if listed:
                console.print(table)
            hidden = len(self.running) - len(listed)
            if hidden > 0:
                console.print(Text(f"… and {hidden} more running", style="dim"))
        return capture.get().rstrip("\n")

    def draw(self) -> None:
        """Show the view: rendered anew when it changed and ``interval`` has passed since
        the last rendering (rendering costs milliseconds: a batch of many short calls
        must not wait for it at every event), else as last rendered."""
        now = self.clock()
        if self._stale and now - self._rendered_at >= self.interval:
            self._text = self.render()
            self._rendered_at = now
            self._stale = False
        elif self.lines:
            return  # on the screen already, as last rendered
        self.clear()
        self._write(self._text)
        self.lines = self._text.count("\n") + 1

    def tick(self) -> None:
        """Redraw, a few times a second: the elapsed times move on."""
        self._stale = True
        self.draw()

    def clear(self) -> None:
        """Erase the view, leaving the cursor where it began."""
        if self.lines:
            self._write("\r\x1b[2K" + "\x1b[1A\x1b[2K" * (self.lines - 1))
            self.lines = 0

    def finish(self) -> None:
        """Replace the view with the summary, which stays on the screen."""
        self.clear()
        errors = f", {self.errors} failed" if self.errors else ""
        elapsed = _elapsed(self.clock() - self.began)
        self._write(f"toolnursery: {self.done}/{self.total} done{errors} in {elapsed}\n")

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            pass  # a display that cannot be written is not worth failing the batch over


def _elapsed(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes}m{rest:02d}s"
