"""Presentation vocabulary: how a tool asks a UI to show its calls and results.

A tool's ``present_call(args)`` returns a :data:`ToolCallView` for the pending call
and ``present_result(args, result)`` a :data:`ToolResultView` for the completed one.
Both are closed unions of frozen Structs tagged by ``card`` (``"generic"``,
``"terminal"``, ``"diff"``) whose JSON form uses camelCase (``rawInput``,
``exitCode``, ``oldText``), so a UI bridge switches on ``card`` and a view survives a
JSON round trip. Presenters are pure functions of the arguments (and the result),
because a UI calls them both live and when replaying a log.

This module is the vocabulary only, below :class:`~toolnursery.ToolDefinition` (whose
presenter options name these types); what a UI calls to present a tool's call —
:func:`~toolnursery.presentation.call_view` and :func:`~toolnursery.presentation.result_view`, with their
fallbacks — is :mod:`toolnursery._tools._present`, above it.
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

import msgspec

from .._core._content import ContentBlock

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
]

ToolCallKind: TypeAlias = Literal[
    "read", "edit", "delete", "move", "search", "execute", "fetch", "other"
]
"""The category of a call, for a generic card's icon; absent means ``"other"``."""


class FileLocation(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """A file a call reads or modifies, so a UI can follow along.

    Attributes:
        path: the path the tool operated on, as the model gave it.
        line: an optional 1-based line to focus.
    """

    path: str
    line: int | None = None


class FileDiff(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """One file's change, for an inline diff.

    Attributes:
        path: the file.
        old_text: the content before, or ``None`` for a new file — and for any
            call-time overwrite, since a pure presenter cannot read the prior content.
        new_text: the content after.
    """

    path: str
    old_text: str | None
    new_text: str


class _Card(
    msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True, tag_field="card"
):
    """The shared shape of every card: frozen, camelCase, tagged by ``card``."""


class GenericCallView(_Card, tag="generic", frozen=True, kw_only=True):
    """The default pending card: a title row with optional detail.

    Attributes:
        title: a short label for what this call does (a card header or log line).
        kind: the call's category, for an icon; ``None`` means ``"other"``.
        raw_input: the salient input to show in a detail view (a string renders
            as-is, anything else as JSON); ``None`` shows nothing.
        content: UI-facing blocks to show with the pending call.
        locations: files the call reads or modifies.
    """

    title: str
    kind: ToolCallKind | None = None
    raw_input: Any = None
    content: tuple[ContentBlock, ...] | None = None
    locations: tuple[FileLocation, ...] | None = None


class TerminalCallView(_Card, tag="terminal", frozen=True, kw_only=True):
    """A call that is a shell command: a terminal card.

    Attributes:
        title: the command, shown as the card's title line.
        description: a one-line summary rendered above the card.
        cwd: the working directory; an absolute path is used as-is, a relative one
            is resolved by the UI against the session workspace, ``None`` means the
            session workspace.
    """

    title: str
    description: str | None = None
    cwd: str | None = None


class DiffCallView(_Card, tag="diff", frozen=True, kw_only=True):
    """A call that creates or modifies files: an inline diff card.

    Attributes:
        title: the card header (e.g. ``Write foo.txt``).
        diffs: one entry per file the call changes.
        locations: files the call modifies, usually the diffs' paths.
    """

    title: str
    diffs: tuple[FileDiff, ...]
    locations: tuple[FileLocation, ...] | None = None


class GenericResultView(_Card, tag="generic", frozen=True, kw_only=True):
    """The default completed card.

    Attributes:
        title: a replacement title; ``None`` keeps the pending title.
        content: UI-facing content; ``None`` renders the raw result content.
    """

    title: str | None = None
    content: tuple[ContentBlock, ...] | None = None


class TerminalResultView(_Card, tag="terminal", frozen=True, kw_only=True):
    """The completed state of a command: its output and how it ended.

    A UI without a terminal card derives a fenced ``console`` block from
    ``output``; the tool does not encode it twice.

    Attributes:
        title: a replacement title; ``None`` keeps the pending title.
        output: the captured output.
        exit_code: the exit status, when the process exited.
        signal: the signal that killed the process (e.g. ``"SIGTERM"``).

    Raises:
        ValueError: raised when both ``exit_code`` and ``signal`` are given; they
            are mutually exclusive.
    """

    title: str | None = None
    output: str | None = None
    exit_code: int | None = None
    signal: str | None = None

    def __post_init__(self) -> None:
        if self.exit_code is not None and self.signal is not None:
            raise ValueError(
                "TerminalResultView: exit_code and signal are mutually exclusive "
                f"(got exit_code={self.exit_code!r}, signal={self.signal!r})"
            )


class DiffResultView(_Card, tag="diff", frozen=True, kw_only=True):
    """A completed file mutation: the change to show.

    A completed update replaces the call's content, so a mutation tool returns this
    even when it repeats the call-time diff.

    Attributes:
        title: a replacement title; ``None`` keeps the pending title.
        diffs: the applied change per file, in file order.
    """

    title: str | None = None
    diffs: tuple[FileDiff, ...]


ToolCallView: TypeAlias = GenericCallView | TerminalCallView | DiffCallView
"""How a pending call is shown; tagged by ``card``."""

ToolResultView: TypeAlias = GenericResultView | TerminalResultView | DiffResultView
"""How a completed call is shown; tagged by ``card``."""
