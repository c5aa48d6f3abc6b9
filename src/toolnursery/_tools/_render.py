"""Render call/result views as Markdown or as terminal text.

Both renderers take the pending :data:`ToolCallView`, the completed
:data:`ToolResultView` (``None`` while pending, or when the tool has no result
presenter) and the raw result (``None`` while pending), and apply the fallbacks of
the presentation vocabulary: a result view's ``title`` replaces the pending title
only when given; a generic result without ``content`` shows the raw result content;
no result view at all keeps the pending card and shows the raw result content in
place of the call's content (a completed update replaces the call's content).

The card layouts:

* generic — a title (with the call's ``kind`` unless it is ``other``), the salient
  ``raw_input`` (a string as-is, anything else as JSON), the content, the files.
* terminal — the ``description`` above a console block that opens with the command
  (``<cwd> $ <title>``) and holds the result's ``output``, then how it ended.
* diff — one unified diff per file, computed with :mod:`difflib` from the old and
  new text; a new file (``old_text=None``) is a diff from ``/dev/null``.
"""

from __future__ import annotations

import difflib
import io
import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, NamedTuple, TypeAlias, assert_never

from .._core._content import (
    AudioContent,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    ToolExecutionResult,
    ToolResult,
)
from .._core._controls import shown
from ._presentation import (
    DiffCallView,
    DiffResultView,
    FileDiff,
    GenericCallView,
    GenericResultView,
    TerminalCallView,
    TerminalResultView,
    ToolCallView,
    ToolResultView,
)

if TYPE_CHECKING:
    from rich.console import RenderableType
    from rich.text import Text

__all__ = ["RawResult", "render_markdown", "render_terminal", "unified_diff_lines"]

RawResult: TypeAlias = ToolResult | ToolExecutionResult
"""A call's raw result: its model-facing ``content`` and ``is_error``."""


def unified_diff_lines(diff: FileDiff) -> list[str]:
    """Return one file's change as unified-diff lines, without line terminators.

    A new file (``old_text is None``) is diffed from ``/dev/null``; a last line
    without a newline is followed by ``\\ No newline at end of file`` as ``diff -u``
    writes it; identical texts give the two header lines only.

    Args:
        diff: the file's old and new text.

    Returns:
        The ``---``/``+++`` header lines followed by the hunks (three context lines).
    """
    old = [] if diff.old_text is None else _lines(diff.old_text)
    lines = [
        "--- /dev/null" if diff.old_text is None else f"--- a/{diff.path}",
        f"+++ b/{diff.path}",
    ]
    for line in list(difflib.unified_diff(old, _lines(diff.new_text)))[2:]:
        if line.endswith("\n"):
            lines.append(line[:-1])
        else:
            lines.extend((line, "\\ No newline at end of file"))
    return lines


def _lines(text: str) -> list[str]:
    # Split at "\n" only: str.splitlines also breaks at \f, \x1c, \u2028 and the
    # like, which diff tools treat as ordinary characters.
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


# --- the layout both renderers draw ----------------------------------------------


class _Console(NamedTuple):
    prompt: str | None
    output: str | None


class _Input(NamedTuple):
    text: str
    language: Literal["text", "json"]


class _Blocks(NamedTuple):
    blocks: Sequence[ContentBlock]
    raw: bool  # model-facing text (shown as-is) rather than UI-facing Markdown


class _Files(NamedTuple):
    names: list[str]


_Section: TypeAlias = _Console | _Input | _Blocks | _Files | FileDiff


class _Layout(NamedTuple):
    terminal: TerminalCallView | None  # the terminal call, whose card has no heading
    heading: str  # title plus the kind label
    sections: list[_Section]
    status: str | None  # how a command ended
    completed: bool
    failed: bool


def _layout(call: ToolCallView, result: ToolResultView | None, raw: RawResult | None) -> _Layout:
    if not isinstance(call, GenericCallView | TerminalCallView | DiffCallView):
        raise TypeError(f"call must be a ToolCallView card, not {call!r}")
    if result is not None and not isinstance(
        result, GenericResultView | TerminalResultView | DiffResultView
    ):
        raise TypeError(f"result must be a ToolResultView card or None, not {result!r}")
    title = call.title if result is None or result.title is None else result.title
    failed = raw is not None and raw.is_error
    head: list[_Section] = []
    sections: list[_Section] = []
    terminal = call if isinstance(call, TerminalCallView) else None
    heading = title
    prompt = None
    if terminal is not None:
        prompt = f"{terminal.cwd} $ {title}" if terminal.cwd else f"$ {title}"
    elif isinstance(call, GenericCallView):
        if call.kind is not None and call.kind != "other":
            heading = f"{title} ({call.kind})"
        if call.raw_input is not None:
            head.append(_input(call.raw_input))
    raw_blocks = [] if raw is None else [_Blocks(raw.content, raw=True)]
    output = None
    status = None
    match result:
        case None if raw is not None:
            sections += raw_blocks
        case None:
            if isinstance(call, GenericCallView) and call.content:
                sections.append(_Blocks(call.content, raw=False))
            if isinstance(call, DiffCallView):
                sections += call.diffs
            if not isinstance(call, TerminalCallView) and call.locations:
                sections.append(_Files([_location(loc.path, loc.line) for loc in call.locations]))
        case GenericResultView():
            if result.content is not None:
                sections.append(_Blocks(result.content, raw=False))
            else:
                sections += raw_blocks
        case TerminalResultView():
            output = result.output
            if output is not None and output.endswith("\n"):
                output = output[:-1]
            output = output or None
            if result.exit_code is not None:
                status = f"exit code {result.exit_code}"
            elif result.signal is not None:
                status = f"killed by {result.signal}"
        case DiffResultView():
            sections += result.diffs
        case _:
            assert_never(result)
    if prompt is not None or output is not None:
        head.append(_Console(prompt, output))
    if status is None and failed and terminal is not None:
        status = "failed"
    return _Layout(terminal, heading, head + sections, status, raw is not None, failed)


def _input(value: object) -> _Input:
    if isinstance(value, str):
        return _Input(value, "text")
    return _Input(json.dumps(value, indent=2, ensure_ascii=False, default=repr), "json")


def _location(path: str, line: int | None) -> str:
    return path if line is None else f"{path}:{line}"


# --- Markdown --------------------------------------------------------------------

_BACKTICKS = re.compile(r"`+")


def render_markdown(
    call: ToolCallView,
    result: ToolResultView | None = None,
    *,
    raw: RawResult | None = None,
    note: str | None = None,
) -> str:
    """Render one tool call as Markdown.

    A generic or diff card is a ``###`` heading (marked ``— failed`` when the raw
    result is an error) followed by its sections; a terminal card is its description
    and a fenced ``console`` block, then ``Exit code N`` / ``Killed by SIG…``. Raw
    model-facing text is fenced; a view's UI-facing text is Markdown already.

    Args:
        call: the pending view (from :func:`call_view`).
        result: the completed view (from :func:`result_view`), or ``None`` to keep
            the pending card.
        raw: the raw result, ``None`` while the call is pending: its content is
            shown when no view replaces it, and ``is_error`` marks the card failed.
        note: a remark shown in italics at the end of a card that has no outcome
            (no raw result), e.g. why a call has no result.

    Returns:
        The Markdown text, ending with a newline.

    Raises:
        TypeError: raised when ``call`` or ``result`` is not one of the view cards.
    """
    layout = _layout(call, result, raw)
    parts: list[str] = []
    if layout.terminal is None:
        parts.append(f"### {layout.heading}" + (" — failed" if layout.failed else ""))
    elif layout.terminal.description:
        parts.append(layout.terminal.description)
    for section in layout.sections:
        match section:
            case _Console(prompt, output):
                lines = [text for text in (prompt, output) if text is not None]
                parts.append(_fence("\n".join(lines), "console"))
            case _Input(text, language):
                parts.append(_fence(text, language))
            case _Blocks(blocks, raw_text):
                parts.extend(_markdown_blocks(blocks, raw_text))
            case _Files(names):
                parts.append("Files: " + ", ".join(f"`{name}`" for name in names))
            case FileDiff():
                parts.append(_fence("\n".join(unified_diff_lines(section)), "diff"))
            case _:
                assert_never(section)
    if layout.status is not None:
        parts.append(_capitalized(layout.status))
    elif note and not layout.completed:
        parts.append(f"*{_capitalized(note)}*")
    return "\n\n".join(parts) + "\n"


def _capitalized(text: str) -> str:
    return text[:1].upper() + text[1:]


def _fence(body: str, info: str) -> str:
    longest = max((len(run) for run in _BACKTICKS.findall(body)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{info}\n{body}\n{ticks}"


def _markdown_blocks(blocks: Sequence[ContentBlock], raw: bool) -> list[str]:
    parts: list[str] = []
    texts: list[str] = []  # consecutive raw text blocks share one fence
    for block in blocks:
        if isinstance(block, TextContent) and raw:
            # A text's final newline would be an empty last line inside the fence.
            texts.append(block.text.removesuffix("\n"))
            continue
        if texts:
            parts.append(_fence("\n".join(texts), "text"))
            texts = []
        if isinstance(block, TextContent):
            parts.append(block.text)
        elif isinstance(block, ImageContent):
            parts.append(f"![image](data:{block.mime_type};base64,{block.data})")
        elif isinstance(block, ResourceLink):
            parts.append(f"[{block.title or block.name}]({block.uri})")
        elif isinstance(block, EmbeddedResource) and block.resource.text is not None:
            parts.append(f"`{block.resource.uri}`")
            parts.append(_fence(block.resource.text.removesuffix("\n"), "text"))
        else:
            parts.append(f"*{_block_label(block)}*")
    if texts:
        parts.append(_fence("\n".join(texts), "text"))
    return parts


def _block_label(block: ContentBlock) -> str:
    """A one-line stand-in for a block that is not text (``[image: image/png]``)."""
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, ImageContent):
        return f"[image: {block.mime_type}]"
    if isinstance(block, AudioContent):
        return f"[audio: {block.mime_type}]"
    if isinstance(block, ResourceLink):
        return f"[link: {block.title or block.name} <{block.uri}>]"
    resource = block.resource
    kind = resource.mime_type or ("text" if resource.text is not None else "binary")
    label = f"[resource: {resource.uri} ({kind})]"
    if resource.text is not None:
        return label + "\n" + resource.text.removesuffix("\n")
    return label


# --- terminal (rich) -------------------------------------------------------------

_DIFF_STYLES = {"+": "green", "-": "red", "@": "cyan", "\\": "dim"}


def render_terminal(
    call: ToolCallView,
    result: ToolResultView | None = None,
    *,
    raw: RawResult | None = None,
    width: int = 80,
    color: bool = False,
    note: str | None = None,
) -> str:
    """Render one tool call as a terminal card, drawn with :mod:`rich`.

    The sections of :func:`render_markdown` inside a rounded panel whose top border
    carries the title (a terminal card's carries its ``cwd``) and whose bottom border
    carries the outcome (``exit code N``, ``killed by SIG…``, ``done``, ``failed``).
    ``rich`` is imported on the first call, so the library does not need it
    (install the ``cli`` extra).

    Args:
        call: the pending view (from :func:`call_view`).
        result: the completed view (from :func:`result_view`), or ``None``.
        raw: the raw result, ``None`` while the call is pending.
        width: the width to lay out for, in cells.
        color: emit ANSI styles; by default the text is plain.
        note: a remark shown as the last line of a card that has no outcome (no raw
            result), e.g. why a call has no result.

    Returns:
        The rendered text, ending with a newline.

    Raises:
        TypeError: raised when ``call`` or ``result`` is not one of the view cards.
    """
    from rich import box
    from rich.console import Console, Group
    from rich.panel import Panel
    from rich.text import Text

    layout = _layout(call, result, raw)
    failed = layout.failed
    parts: list[RenderableType] = []
    for section in layout.sections:
        match section:
            case _Console(prompt, output):
                text = Text()
                if prompt is not None:
                    text.append(shown(prompt), style="bold")
                if output is not None:
                    text.append(("\n" if prompt is not None else "") + shown(output))
                parts.append(text)
            case _Input(text_input, _):
                parts.append(Text(shown(text_input), style="cyan"))
            case _Blocks(blocks, _):
                for block in blocks:
                    if not isinstance(block, TextContent):
                        parts.append(Text(shown(_block_label(block)), style="italic"))
                    else:
                        body = shown(block.text.removesuffix("\n"))
                        text = Text(body, style="red" if failed else "")
                        parts.append(text)
            case _Files(names):
                parts.append(Text(shown("files: " + ", ".join(names)), style="dim"))
            case FileDiff():
                parts.append(_diff_text(section))
            case _:
                assert_never(section)
    if note and not layout.completed:
        parts.append(Text(shown(note), style="italic yellow"))
    spaced: list[RenderableType] = []
    for part in parts:
        if spaced:
            spaced.append(Text())
        spaced.append(part)
    status = layout.status
    if status is None and layout.completed:
        status = "failed" if failed else "done"
    terminal = layout.terminal
    panel = Panel(
        Group(*spaced),
        title=Text(
            shown(
                layout.heading if terminal is None else terminal.cwd or "terminal", newlines=False
            ),
            style="bold",
        ),
        title_align="left",
        subtitle=Text(shown(status), style="red" if failed else "green") if status else None,
        subtitle_align="right",
        box=box.ROUNDED,
        border_style="red" if failed else "blue",
    )
    sink = io.StringIO()
    console = Console(
        file=sink,
        width=width,
        color_system="standard" if color else None,
        force_terminal=color,
        force_jupyter=False,
        legacy_windows=False,
        markup=False,
        highlight=False,
        emoji=False,
    )
    if terminal is not None and terminal.description:
        console.print(Text(shown(terminal.description), style="italic"))
    console.print(panel)
    return sink.getvalue()


def _diff_text(diff: FileDiff) -> Text:
    from rich.text import Text

    text = Text()
    for index, line in enumerate(unified_diff_lines(diff)):
        if index:
            text.append("\n")
        text.append(shown(line), style="bold" if index < 2 else _DIFF_STYLES.get(line[:1], ""))
    return text
