"""Cards for the ``toolnursery`` command: ``run --show`` and ``replay LOG``.

A card is a call's presentation — the tool's ``present_call`` / ``present_result``
views through :func:`call_view` / :func:`result_view`, with their fallbacks — drawn
by :func:`render_terminal` (rich) or :func:`render_markdown`. ``replay`` reads a
:class:`JsonlRecorder` log as :func:`read_log` does (a torn line, left by a writer that
died mid-write, is skipped; any other line that is not an event is an error naming
it) and prints each batch's calls in log order, a call without a result as pending, a
call whose approval was asked with the answer the log records (``asked: rejected``).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from typing import NamedTuple, TextIO

from .._batch._recorder import (
    ApprovalEvent,
    ContextEvent,
    ToolCallEvent,
    ToolResultEvent,
    iter_log,
)
from .._core._arguments import parse_arguments, safe_arguments
from .._core._content import HookContext, TextContent, ToolCall, ToolExecutionResult
from .._core._controls import shown
from .._core._errors import ToolArgsError
from .._core._execution import ApprovalOutcome
from .._examples._toolset import example_tools
from .._pipeline._registry import ToolRegistry
from .._timeline._model import approval_note
from .._tools._present import call_view, result_view
from .._tools._render import render_markdown, render_terminal

__all__ = [
    "NO_RESULT",
    "ReplayedBatch",
    "ReplayedCall",
    "card_width",
    "example_presenters",
    "read_batches",
    "render_card",
    "render_replay",
    "rich_missing",
    "wants_color",
]

NO_RESULT = "no result recorded (the batch did not finish)"
"""The note on a replayed call whose result was never recorded."""


class ReplayedCall(NamedTuple):
    """One recorded call: its place in the batch, the call, its result if recorded, its
    contexts, whether its approval was asked, the last answer recorded and the reason."""

    position: int
    call: ToolCall
    result: ToolExecutionResult | None
    contexts: list[HookContext]
    asked: bool = False
    answer: ApprovalOutcome | None = None
    reason: str | None = None


class ReplayedBatch(NamedTuple):
    """One batch of a log, its calls in index order."""

    id: str
    calls: list[ReplayedCall]


def rich_missing() -> bool:
    """Whether :mod:`rich` (the ``cli`` extra) cannot be imported."""
    try:
        import rich  # noqa: F401
    except ImportError:
        return True
    return False


def card_width(width: int | None) -> int:
    """The cards' width: ``width`` when given, else the terminal's, else 80."""
    if width is not None:
        return width
    if _isatty(sys.stdout):
        return shutil.get_terminal_size((80, 24)).columns
    return 80


def wants_color() -> bool:
    """Color on a terminal, unless ``NO_COLOR`` is set (https://no-color.org)."""
    return _isatty(sys.stdout) and not os.environ.get("NO_COLOR")


def _isatty(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty is not None and isatty())


def example_presenters() -> ToolRegistry:
    """The bundled example tools, for their presenters only (nothing runs on replay)."""
    registry = ToolRegistry()
    for definition in example_tools(tempfile.gettempdir()):
        registry.register(definition)
    return registry


def render_card(
    registry: ToolRegistry | None,
    call: ToolCall,
    result: ToolExecutionResult | None,
    *,
    markdown: bool = False,
    width: int = 80,
    color: bool = False,
) -> str:
    """One call as a card, presented by its tool in ``registry`` (generic if unknown).

    Args:
        registry: where the call's tool (and so its presenters) is looked up.
        call: the call as the model sent it.
        result: its result, or ``None`` when none was recorded (shown as pending
            with the :data:`NO_RESULT` note).
        markdown: Markdown instead of a terminal card.
        width: the terminal card's width.
        color: ANSI styles in the terminal card.
    """
    definition = registry.get(call.name) if registry is not None else None
    try:
        args = parse_arguments(call.arguments)
    except ToolArgsError:
        args = safe_arguments(call.arguments)  # shown as given; the call did not run
    pending = call_view(definition, args, name=call.name)
    completed = result_view(definition, args, result) if result is not None else None
    note = NO_RESULT if result is None else None
    if markdown:
        return render_markdown(pending, completed, raw=result, note=note)
    return render_terminal(pending, completed, raw=result, width=width, color=color, note=note)


def read_batches(path: str | os.PathLike[str]) -> tuple[list[ReplayedBatch], list[int]]:
    """Read a log's batches, pairing each call with its result and contexts.

    Returns:
        The batches in the order their first call was recorded, and the numbers of the
        torn lines that were skipped.

    Raises:
        LogFormatError: a line is not an event (the message names it).
        OSError: the log cannot be read.
    """
    # Keyed by index and call id: a line for another call at the same index (an edited
    # or merged log) is shown as a row of its own, never as this call's result.
    batches: dict[str, dict[tuple[int, str], ReplayedCall]] = {}
    torn: list[int] = []
    for number, event, _ in iter_log(path):
        if event is None:
            torn.append(number)
            continue
        calls = batches.setdefault(event.batch, {})
        if isinstance(event, ToolCallEvent):
            key = (event.index, event.call.id)
            if key not in calls:
                calls[key] = ReplayedCall(event.index, event.call, None, [])
            continue
        key = (event.index, event.call_id)
        entry = calls.get(key)
        if entry is None:  # its tool_call line is missing: keep what is known
            entry = ReplayedCall(event.index, ToolCall(event.call_id, "unknown tool"), None, [])
        if isinstance(event, ToolResultEvent):
            calls[key] = entry._replace(result=event.result)
        elif isinstance(event, ContextEvent):
            calls[key] = entry
            entry.contexts.append(event.context)
        elif isinstance(event, ApprovalEvent):  # the question, then its answer
            calls[key] = entry._replace(asked=True, answer=event.outcome, reason=event.reason)
    out = [
        ReplayedBatch(batch, [calls[key] for key in sorted(calls)])
        for batch, calls in batches.items()
    ]
    return out, torn


def render_replay(
    batches: list[ReplayedBatch],
    registry: ToolRegistry | None,
    *,
    markdown: bool = False,
    width: int = 80,
    color: bool = False,
) -> Iterator[str]:
    """The text of a replay, piece by piece: per batch a heading, its cards, its contexts.

    Whatever the log holds, control characters are shown escaped (a terminal card
    escapes its own text; the rest is escaped here), a newline only where one is meant.
    """
    for batch in batches:
        missing = sum(1 for entry in batch.calls if entry.result is None)
        count = f"{len(batch.calls)} call{'s' if len(batch.calls) != 1 else ''}"
        if missing:
            count += f", {missing} without a result"
        name = shown(batch.id, newlines=False)
        yield f"## Batch {name} ({count})\n\n" if markdown else f"batch {name}: {count}\n"
        for entry in batch.calls:
            card = render_card(
                registry,
                entry.call,
                entry.result,
                markdown=markdown,
                width=width,
                color=color,
            )
            yield shown(card) + "\n" if markdown else card
            if entry.asked:  # under its card: what the person was asked, and the answer
                why = f" ({entry.reason})" if entry.reason else ""
                line = f"{entry.call.id} {entry.call.name}: approval {approval_note(entry.answer)}"
                line = shown(line + why, newlines=False)
                yield f"> {line}\n\n" if markdown else f"{line}\n"
        for entry in batch.calls:
            for context in entry.contexts:
                text = " ".join(b.text for b in context.content if isinstance(b, TextContent))
                where = f"context for {entry.call.id} from {context.source}"
                line = shown(f"{where}: {text}", newlines=False)
                yield f"> {line}\n\n" if markdown else f"{line}\n"
