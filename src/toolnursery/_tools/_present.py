"""Presenting a tool's call to a UI: the tool's presenter, or the fallback card.

:func:`call_view` and :func:`result_view` are what a UI calls: they apply the
fallbacks (no presenter, a presenter returning ``None``, raising, or returning
something that is not a view) and never raise. The views themselves are
:mod:`toolnursery._tools._presentation`'s; this module sits above
:class:`~toolnursery.ToolDefinition`, whose presenters it calls.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, cast

import msgspec

from .._core._content import ToolExecutionResult, ToolResult
from ._definition import ToolDefinition
from ._presentation import (
    DiffCallView,
    DiffResultView,
    GenericCallView,
    GenericResultView,
    TerminalCallView,
    TerminalResultView,
    ToolCallView,
    ToolResultView,
)

__all__ = ["call_view", "result_view"]

# The logger keeps the name it had when these lived in the presentation module.
_log = logging.getLogger("toolnursery.presentation")

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
