"""The presentation vocabulary: how a tool asks a UI to show its calls and results.

A tool's ``present_call(args)`` returns a :data:`ToolCallView` for the pending call
and its ``present_result(args, result)`` a :data:`ToolResultView` for the completed
one: frozen values tagged by ``card`` (``"generic"``, ``"terminal"``, ``"diff"``)
that survive a JSON round trip, so a UI bridge switches on ``card`` — live, and again
when it replays a log.

- :func:`call_view`, :func:`result_view` — what a UI calls: a tool's views, with the
  fallbacks applied; they never raise.
- :func:`render_markdown`, :func:`render_terminal` — the views as Markdown or as
  terminal text.

See ``docs/presentation.md``.
"""

from __future__ import annotations

from ._core._homes import fixup_module_metadata as _fixup_module_metadata
from ._tools._present import call_view as call_view
from ._tools._present import result_view as result_view
from ._tools._presentation import DiffCallView as DiffCallView
from ._tools._presentation import DiffResultView as DiffResultView
from ._tools._presentation import FileDiff as FileDiff
from ._tools._presentation import FileLocation as FileLocation
from ._tools._presentation import GenericCallView as GenericCallView
from ._tools._presentation import GenericResultView as GenericResultView
from ._tools._presentation import TerminalCallView as TerminalCallView
from ._tools._presentation import TerminalResultView as TerminalResultView
from ._tools._presentation import ToolCallKind as ToolCallKind
from ._tools._presentation import ToolCallView as ToolCallView
from ._tools._presentation import ToolResultView as ToolResultView
from ._tools._render import render_markdown as render_markdown
from ._tools._render import render_terminal as render_terminal

__all__ = [
    "DiffCallView",
    "DiffResultView",
    "FileDiff",
    "FileLocation",
    "GenericCallView",
    "GenericResultView",
    "TerminalCallView",
    "TerminalResultView",
    "ToolCallKind",
    "ToolCallView",
    "ToolResultView",
    "call_view",
    "render_markdown",
    "render_terminal",
    "result_view",
]

_fixup_module_metadata(__name__, __all__)
