"""Drawing a timeline: SVG, or HTML whose bars show the call's card on hover.

The SVG is written by hand (rectangles, lines and text on one time axis), so the
base install needs no drawing library. Every row is a ``<g class="call">`` carrying
the call's ``data-`` attributes and a ``<title>`` (an SVG viewer's tooltip); the
legend is ``<g id="legend">``; each result code has one colour, named in the legend.
"""

from __future__ import annotations

import datetime
import math
import os
from collections.abc import Callable, Iterable
from typing import Final, Literal, TypeAlias
from xml.sax.saxutils import escape as _escape
from xml.sax.saxutils import quoteattr as _quoteattr

from .._batch._recorder import RecorderEvent
from .._core._arguments import parse_arguments, safe_arguments
from .._core._controls import shown
from .._core._errors import ToolArgsError
from .._pipeline._registry import ToolRegistry
from .._tools._present import call_view, result_view
from .._tools._render import render_markdown
from ._model import PENDING, TimelineCall, TimelineData, approval_note, read_timeline

__all__ = ["CODE_COLORS", "TimelineFormat", "code_colors", "draw_timeline"]

TimelineFormat: TypeAlias = Literal["svg", "html"]
"""What :func:`draw_timeline` returns: an SVG document, or an HTML page around one."""

CODE_COLORS: Final = {
    "ok": "#2e9d57",
    "ERROR": "#d64545",
    "DENIED": "#b8336a",
    "TOOL_TIMEOUT": "#e08a00",
    "ABORTED": "#7d7d7d",
    "ABORTED_BEFORE_DISPATCH": "#b0b0b0",
    "INTERRUPTED": "#8e5ab8",
    PENDING: "#d9d9d9",
}
"""The colours of the result codes every picture uses alike."""

_OTHER_COLORS: Final = ("#c2407a", "#3b6fd6", "#b0852a", "#1f9aa6", "#a33b2a", "#6b7a1f")
QUEUED: Final = "#dfe3ea"  # before the call started: its turn (earlier calls, a barrier)
WAITING: Final = "#f3d27a"  # started, not yet dispatched: policy, keys, a slot
ASKING: Final = "#9b7fd1"  # its approval asked, until the answer came back
TICK: Final = "#1b3a6b"

_TIMEOUT_MARK: Final = (
    '<polygon points="0,0 {h},{half} 0,{h}" fill="#e08a00" stroke="#000" stroke-width="0.5"/>'
)
_LABEL_W: Final = 250
_PLOT_W: Final = 760
_TOP: Final = 118  # the first row's top
_MAX_NOTED: Final = 60  # calls above this many: no notes column, sparse labels
_MAX_NOTE: Final = 90  # characters of a note (its call's tooltip has all of it)
_AXIS_SIZE: Final = 11  # the axis's font size: the picture's smallest text

# Advance widths of the printable ASCII characters (32-126) in hundredths of an em: the
# wider of DejaVu Sans and Liberation Sans (what "sans-serif" is on most Linux systems,
# and the metrics of Arial), so text measured with them fits in those and narrower fonts.
_EM: Final = (
    32, 40, 46, 84, 64, 95, 78, 27, 39, 39, 50, 84, 32, 36, 32, 34,
    64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 34, 34, 84, 84, 84, 56,
    102, 68, 69, 72, 77, 67, 61, 78, 75, 29, 50, 67, 56, 86, 75, 79,
    67, 79, 72, 67, 61, 73, 68, 99, 69, 67, 69, 39, 34, 39, 84, 56,
    50, 61, 63, 55, 63, 62, 35, 63, 63, 28, 28, 58, 28, 97, 63, 61,
    63, 63, 41, 52, 39, 63, 59, 82, 59, 59, 52, 64, 34, 64, 84,
)  # fmt: skip


def text_width(text: str, size: float) -> float:
    """How wide ``text`` is drawn at ``size`` px in a sans-serif font, at most (as
    shown: control characters escaped; a character outside ASCII counts as a full em)."""
    return (
        size * sum(_EM[o - 32] if 32 <= (o := ord(ch)) < 127 else 100 for ch in shown(text)) / 100
    )


def _fit(text: str, size: float, room: float) -> str:
    """``text``, cut with "…" where it would be wider than ``room`` px at ``size``."""
    if text_width(text, size) <= room:
        return text
    while text and text_width(text + "…", size) > room:
        text = text[:-1]
    return text + "…"


def escape(text: str) -> str:
    """``text`` for XML character data: escaped, and well-formed whatever it holds
    (control characters, U+FFFE/U+FFFF and lone surrogates shown as escapes)."""
    return _escape(shown(text))


def quoteattr(text: str) -> str:
    """``text`` as a quoted XML attribute value, well-formed whatever it holds."""
    return _quoteattr(shown(text))


def code_colors(codes: Iterable[str]) -> dict[str, str]:
    """A colour per result code: the fixed ones, then a palette in sorted order."""
    colors: dict[str, str] = {}
    others = iter(_OTHER_COLORS)
    for code in sorted(set(codes), key=lambda c: (c not in CODE_COLORS, c)):
        known = CODE_COLORS.get(code)
        colors[code] = known if known is not None else next(others, "#555555")
    return colors


def draw_timeline(
    source: str | os.PathLike[str] | Iterable[RecorderEvent],
    *,
    format: TimelineFormat = "svg",
    registry: ToolRegistry | None = None,
    title: str | None = None,
) -> str:
    """Draw a recorded batch as a timeline: one row per call, in model order.

    Each row shows the call's phases on one time axis — queued (until the scheduler
    started it: earlier calls, a barrier), waiting (its policy, a conflicting resource
    key, a free slot), running (its dispatch) and committing (until its result was
    committed, in model order) — coloured by its result code, with its progress
    reports as ticks, retries and timeouts marked, and what it waited for named. A
    log written before events carried times draws the calls without bars and says
    that their times are unknown.

    Args:
        source: a log file (as :class:`~toolnursery.log.JsonlRecorder` writes it) or
            its events (e.g. :func:`~toolnursery.log.read_log`'s list).
        format: ``"svg"`` (a standalone SVG document) or ``"html"`` (a page with the
            SVG; hovering a bar shows the call's card).
        registry: whose tools' presenters draw the cards in the HTML (default:
            generic cards).
        title: the picture's heading (default: the log's name, or "batch timeline").

    Returns:
        The document, as text.

    Raises:
        ValueError: ``format`` is not ``"svg"`` or ``"html"``.
        LogFormatError: ``source`` is a file holding a line that is not an event.
        OSError: ``source`` cannot be read.
    """
    if format not in ("svg", "html"):
        raise ValueError(f'draw_timeline(): format must be "svg" or "html", got {format!r}')
    if title is None:
        title = (
            f"timeline of {os.path.basename(os.fspath(source))}"
            if isinstance(source, str | os.PathLike)
            else "batch timeline"
        )
    data = read_timeline(source)
    svg = _svg(data, title)
    if format == "svg":
        return '<?xml version="1.0" encoding="UTF-8"?>\n' + svg
    return _html(data, svg, title, registry)


# -- the SVG --------------------------------------------------------------------------


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds < 10 else f"{seconds:.2f} s"


def _step(end: float) -> float:
    """A round tick step giving 4 to 10 ticks up to ``end``."""
    raw = end / 8
    power = 10.0 ** math.floor(math.log10(raw))
    return next(f * power for f in (1.0, 2.0, 5.0, 10.0) if raw <= f * power)


def _row_height(n: int) -> float:
    return 22.0 if n <= _MAX_NOTED else max(3.0, min(14.0, 1800 / n))


def _describe(c: TimelineCall) -> str:
    """The row's tooltip: the call, its outcome, its times, what it waited for."""
    lines = [f"{c.label} — {c.code}" + (f" (batch {c.batch[:8]})" if c.batch else "")]
    if c.mode is not None:
        keys = ", ".join(f"{k.mode} {k.resource}" for k in c.keys)
        lines.append(f"mode: {c.mode}" + (f" [{keys}]" if keys else ""))
    if c.started is None:
        lines.append("times unknown (the log records none)")
    else:
        parts = [("started", c.started), ("admitted", c.admitted), ("began", c.began)]
        parts += [("ended", c.ended), ("committed", c.committed)]
        lines.append(", ".join(f"{name} {_ms(t)}" for name, t in parts if t is not None))
    if c.waited_for:
        lines.append("waited for: " + "; ".join(c.waited_for))
    if c.attempts > 1:
        began = ", ".join(_ms(t) for t in c.attempt_starts)
        lines.append(f"retried: {c.attempts} attempts" + (f", began {began}" if began else ""))
    if c.progress:
        lines.append(f"progress reports: {len(c.progress)}")
    if c.asked:
        asked = "approval asked" + (f" at {_ms(c.asked_at)}" if c.asked_at is not None else "")
        if c.ask_reason:
            asked += f" ({c.ask_reason})"
        if c.answer is None:
            asked += ": no answer recorded"
        else:
            asked += f": {c.answer}" + (
                f" at {_ms(c.answered_at)}" if c.answered_at is not None else ""
            )
        lines.append(asked)
    return "\n".join(lines)


def _svg(data: TimelineData, title: str) -> str:
    calls = data.calls
    n = len(calls)
    row_h = _row_height(n)
    noted = n <= _MAX_NOTED
    notes = [_note(c) if noted else "" for c in calls]
    # At least a microsecond: a hostile log's times cannot make the scale infinite.
    end = max(data.end, 1e-6) if data.end > 0 else 1.0
    scale = _PLOT_W / end
    colors = code_colors(c.code for c in calls)
    legend, legend_w = _legend(colors, any(c.asked for c in calls))
    summary = _summary(data, n)
    # Wide enough for every text it holds: the notes, the axis's last label, the legend,
    # the title and the summary (measured with the widest common sans-serif metrics).
    width = max(
        _LABEL_W + _PLOT_W + max((text_width(note, 11) + 24 for note in notes), default=0),
        _LABEL_W + _PLOT_W + 20 + text_width(_tick_label(end, end), _AXIS_SIZE) / 2,
        10 + legend_w + 20,
        10 + text_width(title, 16) * 1.1 + 20,  # bold
        10 + text_width(summary, 12) + 20,
    )
    width = math.ceil(width)
    height = _TOP + n * row_h + 40

    def x(t: float) -> float:
        # Far off the plot is drawn at its edge: a coordinate is always finite.
        return min(max(_LABEL_W + t * scale, -_PLOT_W), width + _PLOT_W)

    out: list[str] = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="sans-serif" font-size="12" '
        f'role="img" aria-label={quoteattr(title)}>',
        f"<title>{escape(title)}</title>",
        '<rect width="100%" height="100%" fill="#ffffff"/>',
        f'<text x="10" y="22" font-size="16" font-weight="bold">{escape(title)}</text>',
    ]
    out.append(f'<text x="10" y="40" id="summary">{escape(summary)}</text>')
    out.append(legend)
    out.append(_axis(data, end, _TOP - 6, _TOP + n * row_h))
    label_every = 1 if row_h >= 12 else math.ceil(12 / row_h)
    for row, c in enumerate(calls):
        top = _TOP + row * row_h
        if row and calls[row - 1].batch != c.batch:  # a new batch: a rule above it
            out.append(
                f'<line class="batch" x1="0" y1="{top:.1f}" x2="{width:.0f}" y2="{top:.1f}" '
                'stroke="#555" stroke-dasharray="6,3"/>'
            )
        out.append(_row(c, row, top, row_h, x, colors, notes[row], label_every, data.end))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _summary(data: TimelineData, n: int) -> str:
    batches = len({c.batch for c in data.calls})
    summary = f"{n} call{'s' if n != 1 else ''}"
    if batches > 1:
        summary += f" in {batches} batches"
    if data.timed:
        summary += f", {_ms(data.end)} from the first start to the last commit"
        if data.wall is not None:
            try:
                when = datetime.datetime.fromtimestamp(data.wall, datetime.UTC)
            except (OverflowError, OSError, ValueError):  # no date: a hostile wall clock
                summary += f"; started at Unix time {data.wall:g}"
            else:
                summary += f"; started {when:%Y-%m-%d %H:%M:%S} UTC"
    else:
        summary += ": times unknown (this log was written before events carried times)"
    return summary


def _note(c: TimelineCall) -> str:
    """What the notes column says of a call (its code unless ok, its approval, attempts,
    waits)."""
    note = c.code if c.code != "ok" else ""
    if c.result is None:
        note = "no result recorded (the batch did not finish)"
    if c.asked:
        note = (note + "; " if note else "") + approval_note(c.answer)
    if c.attempts > 1:
        note = (note + "; " if note else "") + f"{c.attempts} attempts"
    if c.waited_for:
        note = (note + "; " if note else "") + "waited for " + "; ".join(c.waited_for)
    if len(note) > _MAX_NOTE:
        note = note[: _MAX_NOTE - 1] + "…"
    return note


def _legend(colors: dict[str, str], asked: bool = False) -> tuple[str, float]:
    # A call's running and committing bars take its result's colour: the swatches show
    # the first one the picture uses (ok's green when any call succeeded).
    first = colors.get("ok") or next(iter(colors.values()), CODE_COLORS["ok"])
    items: list[tuple[str, str]] = [
        (f'<rect width="14" height="10" fill="{QUEUED}"/>', "queued (earlier calls, a barrier)"),
        (f'<rect width="14" height="10" fill="{WAITING}"/>', "waiting (policy, keys, a slot)"),
        (f'<rect width="14" height="10" fill="{first}"/>', "running (its result's colour)"),
        (f'<rect width="14" height="10" fill="{first}" fill-opacity="0.3"/>', "committing"),
        (f'<line x1="7" y1="-1" x2="7" y2="11" stroke="{TICK}" stroke-width="2"/>', "progress"),
        (
            '<line x1="7" y1="-1" x2="7" y2="11" stroke="#000" stroke-width="2" '
            'stroke-dasharray="2,1"/>',
            "retry (↻ attempts)",
        ),
        (_TIMEOUT_MARK.format(h=10, half=5), "timed out"),
    ]
    if asked:
        items.insert(2, (f'<rect width="14" height="10" fill="{ASKING}"/>', "asking (approval)"))
    out = ['<g id="legend" transform="translate(10,52)">']
    x = 0.0
    y = 0.0
    for swatch, text in items:
        out.append(f'<g transform="translate({x:.0f},{y:.0f})">{swatch}')
        out.append(f'<text x="18" y="10" font-size="11">{escape(text)}</text></g>')
        x += 28 + text_width(text, 11)
    widest = x - 10
    x, y = 0.0, 20.0
    out.append('<text x="0" y="30" font-size="11">results:</text>')
    x = 18 + text_width("results:", 11)
    for code, color in colors.items():
        out.append(
            f'<g class="code" data-code={quoteattr(code)} transform="translate({x:.0f},{y:.0f})">'
            f'<rect width="14" height="10" fill="{color}"/>'
            f'<text x="18" y="10" font-size="11">{escape(code)}</text></g>'
        )
        x += 28 + text_width(code, 11)
    out.append("</g>")
    return "\n".join(out), max(widest, x - 10)


def _axis(data: TimelineData, end: float, top: float, bottom: float) -> str:
    out = [f'<g id="axis" font-size="{_AXIS_SIZE}" fill="#555">']
    out.append(
        f'<line x1="{_LABEL_W}" y1="{top:.1f}" x2="{_LABEL_W + _PLOT_W}" y2="{top:.1f}" '
        'stroke="#888"/>'
    )
    if data.timed:
        step = _step(end)
        ticks = int(end / step + 1e-9)
        for i in range(ticks + 1):
            t = i * step
            px = _LABEL_W + t / end * _PLOT_W  # t / end first: t * _PLOT_W may overflow
            text = _tick_label(t, end)
            out.append(
                f'<line x1="{px:.1f}" y1="{top:.1f}" x2="{px:.1f}" y2="{bottom:.1f}" '
                'stroke="#eee"/>'
                f'<text x="{px:.1f}" y="{top - 4:.1f}" text-anchor="middle">{text}</text>'
            )
    out.append("</g>")
    return "\n".join(out)


def _tick_label(t: float, end: float) -> str:
    return f"{t * 1000:g} ms" if end < 10 else f"{t:g} s"


def _bar(x0: float, x1: float, y: float, h: float, fill: str, cls: str, extra: str = "") -> str:
    w = max(x1 - x0, 1.0)
    return (
        f'<rect class="{cls}" x="{x0:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" '
        f'fill="{fill}"{extra}/>'
    )


def _row(
    c: TimelineCall,
    row: int,
    top: float,
    row_h: float,
    x: Callable[[float], float],
    colors: dict[str, str],
    note: str,
    label_every: int,
    end: float,
) -> str:
    color = colors[c.code]
    bar_h = max(row_h * 0.64, 2.0)
    y = top + (row_h - bar_h) / 2
    mid = top + row_h / 2 + 4
    out = [
        f'<g class="call" data-row="{row}" data-batch={quoteattr(c.batch)} '
        f'data-index="{c.index}" data-call-id={quoteattr(c.call.id)} '
        f'data-code={quoteattr(c.code)} data-color="{color}">',
        f"<title>{escape(_describe(c))}</title>",
    ]
    if row % 2 == 0 and row_h >= 6:
        out.append(f'<rect x="0" y="{top:.1f}" width="100%" height="{row_h:.1f}" fill="#f7f8fa"/>')
    if row % label_every == 0:
        size = min(12.0, max(row_h - 2, 8.0))
        text = _fit(c.label if row_h >= 12 else f"{row} {c.call.id}", size, _LABEL_W - 14)
        out.append(
            f'<text class="label" x="{_LABEL_W - 8}" y="{top + row_h / 2 + size / 3:.1f}" '
            f'text-anchor="end" font-size="{size:.0f}">{escape(text)}</text>'
        )
    if c.started is not None:
        origin = c.origin if c.origin is not None else c.started
        first = c.admitted if c.admitted is not None else c.began
        if first is None:  # settled without a dispatch (denied, invalid): it only commits
            first = c.started
        if c.started > origin:
            out.append(_bar(x(origin), x(c.started), y, bar_h, QUEUED, "queued"))
        if first > c.started:
            out.append(_bar(x(c.started), x(first), y, bar_h, WAITING, "waiting"))
        if c.admitted is not None and c.began is not None and c.began > c.admitted:
            out.append(_bar(x(c.admitted), x(c.began), y, bar_h, WAITING, "waiting"))
        if c.asked_at is not None:  # over the wait: from the question to its answer
            answered = c.answered_at if c.answered_at is not None else end
            out.append(
                _bar(x(c.asked_at), max(x(answered), x(c.asked_at) + 2), y, bar_h, ASKING, "asking")
            )
        if c.began is not None:
            stop = c.ended if c.ended is not None else c.committed
            stop = stop if stop is not None else c.began
            out.append(_bar(x(c.began), x(stop), y, bar_h, color, "running"))
            if c.committed is not None and c.committed > stop:
                out.append(
                    _bar(
                        x(stop),
                        x(c.committed),
                        y,
                        bar_h,
                        color,
                        "committing",
                        ' fill-opacity="0.3"',
                    )
                )
        elif c.committed is not None:
            out.append(
                _bar(x(first), x(c.committed), y, bar_h, color, "committing", ' fill-opacity="0.3"')
            )
        if c.result is None:  # never committed: open to the end of the axis
            stop = max(x(end), x(c.started) + 12)
            dashed = ' stroke="#777" stroke-dasharray="4,2"'
            out.append(_bar(x(c.started), stop, y, bar_h, "none", "pending", dashed))
        for t in c.attempt_starts[1:]:  # a retry: a notch where each later attempt began
            out.append(
                f'<line class="attempt" x1="{x(t):.1f}" y1="{y - 2:.1f}" x2="{x(t):.1f}" '
                f'y2="{y + bar_h + 2:.1f}" stroke="#000" stroke-width="2" '
                'stroke-dasharray="2,1"/>'
            )
        for t, _fraction in c.progress:
            out.append(
                f'<line class="tick" x1="{x(t):.1f}" y1="{y - 1:.1f}" x2="{x(t):.1f}" '
                f'y2="{y + bar_h + 1:.1f}" stroke="{TICK}" stroke-width="1.5"/>'
            )
        last = max(t for t in (c.started, c.began, c.ended, c.committed) if t is not None)
        after = x(last) + 3
        if c.timed_out:
            out.append(f'<g class="timeout" transform="translate({after:.1f},{y:.1f})">')
            out.append(_TIMEOUT_MARK.format(h=bar_h, half=bar_h / 2) + "</g>")
            after += bar_h + 3
        if c.attempts > 1:
            out.append(
                f'<text class="retried" x="{after:.1f}" y="{mid:.1f}" font-size="11" '
                f'fill="#333">↻{c.attempts}</text>'
            )
    elif c.result is not None or c.code == PENDING:
        out.append(
            f'<text class="unknown" x="{_LABEL_W + 4}" y="{mid:.1f}" font-size="11" '
            f'fill="{color}">■ {escape(c.code)} (times unknown)</text>'
        )
    if note:
        out.append(
            f'<text class="note" x="{_LABEL_W + _PLOT_W + 10}" y="{mid:.1f}" '
            f'font-size="11" fill="#444">{escape(note)}</text>'
        )
    out.append("</g>")
    return "".join(out)


# -- the HTML -------------------------------------------------------------------------


def _card(registry: ToolRegistry | None, c: TimelineCall) -> str:
    definition = registry.get(c.call.name) if registry is not None else None
    try:
        args = parse_arguments(c.call.arguments)
    except ToolArgsError:
        args = safe_arguments(c.call.arguments)
    pending = call_view(definition, args, name=c.call.name)
    done = result_view(definition, args, c.result) if c.result is not None else None
    notes = ["no result recorded (the batch did not finish)"] if c.result is None else []
    if c.asked:
        notes.append(approval_note(c.answer))
    note = "; ".join(notes) or None
    return _describe(c) + "\n\n" + render_markdown(pending, done, raw=c.result, note=note)


_STYLE: Final = """
body { font-family: sans-serif; margin: 16px; }
g.call:hover rect.running, g.call:hover rect.committing { stroke: #000; stroke-width: 1; }
#card { position: fixed; display: none; max-width: 560px; max-height: 70vh; overflow: auto;
  background: #fffef6; border: 1px solid #888; box-shadow: 2px 2px 8px #0003;
  padding: 8px 10px; font-size: 12px; white-space: pre-wrap; font-family: monospace;
  pointer-events: none; }
"""

_SCRIPT: Final = """
const card = document.getElementById("card");
for (const row of document.querySelectorAll("g.call")) {
  row.addEventListener("mousemove", (e) => {
    const t = document.getElementById("card-" + row.dataset.row);
    card.textContent = t ? t.content.textContent : "";
    card.style.display = "block";
    card.style.left = Math.min(e.clientX + 16, window.innerWidth - 580) + "px";
    card.style.top = Math.min(e.clientY + 16, window.innerHeight - 120) + "px";
  });
  row.addEventListener("mouseleave", () => { card.style.display = "none"; });
}
"""


def _html(data: TimelineData, svg: str, title: str, registry: ToolRegistry | None) -> str:
    templates = "\n".join(
        f'<template id="card-{row}">{escape(_card(registry, c))}</template>'
        for row, c in enumerate(data.calls)
    )
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f"<style>{_STYLE}</style></head><body>\n"
        '<p id="hint">Hover a row to see its call and result.</p>\n'
        f'<div id="timeline">{svg}</div>\n<div id="card"></div>\n{templates}\n'
        f"<script>{_SCRIPT}</script>\n</body></html>\n"
    )
