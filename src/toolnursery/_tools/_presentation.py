"""Presentation vocabulary: how a tool asks a UI to show its calls and results.

A tool's ``present_call(args)`` returns a :data:`ToolCallView` for the pending call
and ``present_result(args, result)`` a :data:`ToolResultView` for the completed one.
Both are closed unions of frozen Structs tagged by ``card`` (``"generic"``,
``"terminal"``, ``"diff"``) whose JSON form uses camelCase (``rawInput``,
``exitCode``, ``oldText``), so a UI bridge switches on ``card`` and a view survives a
JSON round trip. Presenters are pure functions of the arguments (and the result),
because a UI calls them both live and when replaying a log.

:func:`call_view` and :func:`result_view` are what a UI calls: they apply the
fallbacks (no presenter, a presenter returning ``None``, raising, or returning
something that is not a view) and never raise.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, cast

import msgspec

from .._core._content import ContentBlock, ToolExecutionResult, ToolResult

if TYPE_CHECKING:
    from ._definition import ToolDefinition

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
    "result_view",
]

_log = logging.getLogger("toolnursery.presentation")

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

_CALL_VIEWS = (GenericCallView, TerminalCallView, DiffCallView)
_RESULT_VIEWS = (GenericResultView, TerminalResultView, DiffResultView)


def call_view(
    definition: ToolDefinition | None, args: Any, *, name: str | None = None
) -> ToolCallView:
    """Return the view of a pending call, applying the fallbacks; never raises.

    The tool's ``present_call(args)`` is used when it returns a well-formed
    :data:`ToolCallView`. Otherwise — no definition (an unknown tool on replay), no
    presenter, a presenter returning ``None``, raising, or returning anything that
    is not a valid call view — the result is the generic card
    ``GenericCallView(title=<tool name>, raw_input=args)``.

    Args:
        definition: the tool's definition, or ``None`` when the tool is unknown.
        args: the call's arguments, as logged.
        name: the tool name for the fallback title; defaults to
            ``definition.name`` (``"unknown tool"`` when neither is given).

    Returns:
        The view to show.
    """
    presenter = definition.present_call if definition is not None else None
    if definition is not None and presenter is not None:
        view = _presented(presenter, (args,), _CALL_VIEWS, ToolCallView, definition)
        if view is not None:
            return cast("ToolCallView", view)
    if name is None:
        name = definition.name if definition is not None else "unknown tool"
    return GenericCallView(title=name, raw_input=args)


def result_view(
    definition: ToolDefinition | None, args: Any, result: ToolResult | ToolExecutionResult
) -> ToolResultView | None:
    """Return the tool's view of a completed call, or ``None``; never raises.

    ``None`` means the fallback: keep the pending call's title and render the raw
    result content. It is returned when there is no definition or no presenter, or
    the presenter returns ``None``, raises, or returns anything that is not a valid
    result view.

    Args:
        definition: the tool's definition, or ``None`` when the tool is unknown.
        args: the call's arguments, as logged.
        result: the call's result; a :class:`ToolExecutionResult` is narrowed to the
            :class:`ToolResult` (``content``, ``is_error``, ``meta``, ``structured``)
            presenters see.

    Returns:
        The view to show, or ``None`` for the fallback.
    """
    presenter = definition.present_result if definition is not None else None
    if definition is None or presenter is None:
        return None
    if isinstance(result, ToolExecutionResult):
        result = ToolResult(
            content=result.content,
            is_error=result.is_error,
            meta=result.meta,
            structured=result.structured_content,
        )
    view = _presented(presenter, (args, result), _RESULT_VIEWS, ToolResultView, definition)
    return cast("ToolResultView | None", view)


def _presented(
    presenter: Callable[..., object],
    call_args: tuple[Any, ...],
    kinds: tuple[type[msgspec.Struct], ...],
    union: Any,
    definition: ToolDefinition,
) -> msgspec.Struct | None:
    tool = definition.name
    try:
        view = presenter(*call_args)
    except Exception:
        _log.warning("presenter of tool %r raised; using the fallback view", tool, exc_info=True)
        return None
    if view is None:
        return None
    if isinstance(view, kinds) and _well_formed(view, union):
        return view
    # Name the type only: the value's repr may itself fail (or recurse too deep).
    _log.warning(
        "presenter of tool %r returned a %s, not a valid view; using the fallback",
        tool,
        type(view).__name__,
    )
    return None


def _well_formed(view: msgspec.Struct, union: Any) -> bool:
    # A Struct's constructor does not check field types; a round trip through
    # builtins does, so a UI never receives a view it would have to defend against.
    # Any failure (wrong types, a non-JSON raw_input, nesting past the recursion
    # limit) just means "not a view".
    try:
        msgspec.convert(msgspec.to_builtins(view), type=union)
    except Exception:
        return False
    return True
