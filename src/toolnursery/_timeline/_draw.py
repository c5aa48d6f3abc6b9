"""Drawing a timeline: SVG, or HTML whose bars show the call's card on hover."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Literal, TypeAlias

from .._batch._recorder import RecorderEvent
from .._pipeline._registry import ToolRegistry

__all__ = ["TimelineFormat", "draw_timeline"]

TimelineFormat: TypeAlias = Literal["svg", "html"]
"""What :func:`draw_timeline` returns: an SVG document, or an HTML page around one."""


def draw_timeline(
    source: str | os.PathLike[str] | Iterable[RecorderEvent],
    *,
    format: TimelineFormat = "svg",
    registry: ToolRegistry | None = None,
    title: str | None = None,
) -> str:
    """Draw a recorded batch as a timeline: one row per call, in model order.

    Each row shows the call's phases on one time axis — waiting (for its turn, a
    barrier, a conflicting resource key or a free slot), running (the dispatch) and
    committing (until its result was committed, in model order) — coloured by its
    result code, with its progress reports as ticks, retries and timeouts marked, and
    what it waited for named. A log written before events carried times draws the
    calls without bars and says that their times are unknown.

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
    raise NotImplementedError
