"""``--timeline OUT``: a batch's timeline picture, for ``replay`` and ``demo``."""

from __future__ import annotations

import os
from collections.abc import Iterable

from .._batch._recorder import RecorderEvent
from .._pipeline._registry import ToolRegistry
from .._timeline._draw import TimelineFormat, draw_timeline
from ._common import UsageError

__all__ = ["timeline_format", "write_timeline"]


def timeline_format(path: str) -> TimelineFormat:
    """The picture's format from ``OUT``'s suffix.

    Raises:
        UsageError: the suffix is neither ``.svg`` nor ``.html``.
    """
    suffix = os.path.splitext(path)[1].lower()
    if suffix == ".svg":
        return "svg"
    if suffix in (".html", ".htm"):
        return "html"
    raise UsageError(f"--timeline {path!r}: name a .svg or .html file")


def write_timeline(
    path: str,
    source: str | Iterable[RecorderEvent],
    *,
    registry: ToolRegistry | None = None,
    title: str | None = None,
) -> None:
    """Draw ``source`` (a log path or events) into ``path``.

    Raises:
        UsageError: ``path`` has another suffix, or cannot be written.
    """
    document = draw_timeline(source, format=timeline_format(path), registry=registry, title=title)
    try:
        with open(path, "w", encoding="utf-8") as file:
            file.write(document)
    except OSError as exc:
        raise UsageError(f"cannot write --timeline {path!r}: {exc.strerror or exc}") from exc
