"""The batch log: recording a batch's events, reading them back, planning a resume.

A batch given a ``recorder`` reports its durable events to it — each call's
:class:`ToolCallEvent` when it starts, its :class:`ApprovalEvent` s when an ``Ask`` is
asked and answered, its :class:`ToolResultEvent` when it commits (model order),
:class:`ContextEvent` and :class:`ProgressEvent` — and
:class:`JsonlRecorder` writes them as a JSON-lines log that survives the process:

- :func:`read_log`, :func:`iter_log` — the events of a log (line by line, torn lines
  included, with :func:`iter_log`);
- :func:`replay_log` — each recorded call paired with its result (``None`` when the
  process died before it committed);
- :func:`plan_resume` — what ``run_tool_calls(..., resume_from=log)`` would do with
  each call of an interrupted batch (a :class:`ResumePlan`), without doing it.

:class:`~toolnursery.LogFormatError` and :class:`~toolnursery.ResumeError` belong to
the error tree in :mod:`toolnursery` and are re-exported here. See
``docs/concepts/recording.md`` and ``docs/durability.md``.
"""

from __future__ import annotations

from ._batch._recorder import LOG_FORMAT as LOG_FORMAT
from ._batch._recorder import ApprovalEvent as ApprovalEvent
from ._batch._recorder import ContextEvent as ContextEvent
from ._batch._recorder import JsonlRecorder as JsonlRecorder
from ._batch._recorder import ProgressEvent as ProgressEvent
from ._batch._recorder import RecorderEvent as RecorderEvent
from ._batch._recorder import ToolCallEvent as ToolCallEvent
from ._batch._recorder import ToolCallRecorder as ToolCallRecorder
from ._batch._recorder import ToolResultEvent as ToolResultEvent
from ._batch._recorder import iter_log as iter_log
from ._batch._recorder import read_log as read_log
from ._batch._recorder import replay_log as replay_log
from ._batch._resume import ResumedCall as ResumedCall
from ._batch._resume import ResumePlan as ResumePlan
from ._batch._resume import plan_resume as plan_resume
from ._core._errors import LogFormatError as LogFormatError
from ._core._errors import ResumeError as ResumeError
from ._core._homes import fixup_module_metadata as _fixup_module_metadata

__all__ = [
    "LOG_FORMAT",
    "ApprovalEvent",
    "ContextEvent",
    "JsonlRecorder",
    "LogFormatError",
    "ProgressEvent",
    "RecorderEvent",
    "ResumeError",
    "ResumePlan",
    "ResumedCall",
    "ToolCallEvent",
    "ToolCallRecorder",
    "ToolResultEvent",
    "iter_log",
    "plan_resume",
    "read_log",
    "replay_log",
]

_fixup_module_metadata(__name__, __all__)
