"""Pictures of a recorded batch: what ran when, what waited for what.

- :func:`draw_timeline` — a log (or its events) as a timeline, one row per call in
  model order: waiting, running and committing on one time axis, coloured by result
  code; SVG, or HTML whose bars show each call's card on hover.

``toolnursery replay LOG --timeline OUT.svg`` draws the same picture. See
``docs/durability.md`` for the times a log records.
"""

from __future__ import annotations

from ._core._homes import fixup_module_metadata as _fixup_module_metadata
from ._timeline._draw import TimelineFormat as TimelineFormat
from ._timeline._draw import draw_timeline as draw_timeline

__all__ = ["TimelineFormat", "draw_timeline"]

_fixup_module_metadata(__name__, __all__)
