"""How the example tools present themselves: pure presenters for UIs and replay.

Each presenter is a function of the validated arguments (and the result); the
wrappers here validate with the tool's own argument check and turn anything
unrecognized — arguments from another version, foreign ``meta`` — into ``None``
(the generic fallback) instead of an exception, since a UI calls them live and again
when it replays a log.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .._core._content import TextContent, ToolResult
from .._tools._presentation import (
    DiffCallView,
    DiffResultView,
    FileDiff,
    FileLocation,
    GenericCallView,
    GenericResultView,
    TerminalCallView,
    TerminalResultView,
    ToolCallView,
    ToolResultView,
)

__all__ = [
    "list_call",
    "list_result",
    "move_call",
    "move_result",
    "present_call",
    "present_result",
    "read_call",
    "read_result",
    "search_call",
    "search_result",
    "sleep_call",
    "sleep_result",
    "write_call",
    "write_result",
]

Validate = Callable[[Any], dict[str, Any]]
"""A tool's argument check: the values with defaults filled in, or an exception."""

CallPresenter = Callable[[dict[str, Any]], ToolCallView]
ResultPresenter = Callable[[dict[str, Any], ToolResult], ToolResultView | None]


def present_call(validate: Validate, present: CallPresenter) -> Callable[[Any], Any]:
    """A ``present_call`` that answers ``None`` for arguments ``validate`` refuses."""

    def present_call(args: Any) -> ToolCallView | None:
        try:
            return present(validate(args))
        except Exception:
            return None

    return present_call


def present_result(
    validate: Validate, present: ResultPresenter
) -> Callable[[Any, ToolResult], Any]:
    """A ``present_result`` that answers ``None`` for arguments ``validate`` refuses."""

    def present_result(args: Any, result: ToolResult) -> ToolResultView | None:
        try:
            return present(validate(args), result)
        except Exception:
            return None

    return present_result


def _meta(result: ToolResult) -> Mapping[str, Any]:
    meta = result.meta
    return meta if isinstance(meta, Mapping) and not result.is_error else {}


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _plural(count: int, noun: str, plural: str | None = None) -> str:
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


def _seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def read_call(values: dict[str, Any]) -> ToolCallView:
    path = values["path"]
    return GenericCallView(title=f"Read {path}", kind="read", locations=(FileLocation(path=path),))


def read_result(values: dict[str, Any], result: ToolResult) -> ToolResultView | None:
    meta = _meta(result)
    lines = _count(meta.get("lines"))
    if meta.get("binary") is True:
        detail = "binary file"
    elif lines is not None:
        detail = _plural(lines, "line") + (", truncated" if meta.get("truncated") is True else "")
    else:
        return None
    return GenericResultView(title=f"Read {values['path']}: {detail}")


def list_call(values: dict[str, Any]) -> ToolCallView:
    path = values["path"]
    return GenericCallView(title=f"List {path}", kind="read", locations=(FileLocation(path=path),))


def list_result(values: dict[str, Any], result: ToolResult) -> ToolResultView | None:
    entries = _count(_meta(result).get("entries"))
    if entries is None:
        return None
    return GenericResultView(title=f"List {values['path']}: {_plural(entries, 'entry', 'entries')}")


def _search_title(values: dict[str, Any]) -> str:
    path = values["path"]
    return f'Search "{values["pattern"]}"' + ("" if path == "." else f" in {path}")


def search_call(values: dict[str, Any]) -> ToolCallView:
    path = values["path"]
    return GenericCallView(
        title=_search_title(values),
        kind="search",
        locations=None if path == "." else (FileLocation(path=path),),
    )


def search_result(values: dict[str, Any], result: ToolResult) -> ToolResultView | None:
    meta = _meta(result)
    matches, files = _count(meta.get("matches")), _count(meta.get("files"))
    if matches is None or files is None:
        return None
    found = (
        f"{_plural(matches, 'match', 'matches')} in {_plural(files, 'file')}"
        if matches
        else "no matches"
    )
    return GenericResultView(title=f"{_search_title(values)}: {found}")


def write_call(values: dict[str, Any]) -> ToolCallView:
    path = values["path"]
    # At call time the old text is unknown: a pure presenter cannot read the file.
    return DiffCallView(
        title=f"Write {path}",
        diffs=(FileDiff(path=path, old_text=None, new_text=values["content"]),),
        locations=(FileLocation(path=path),),
    )


def write_result(values: dict[str, Any], result: ToolResult) -> ToolResultView | None:
    meta = _meta(result)
    created = meta.get("created")
    if not isinstance(created, bool):
        return None
    old_text = meta.get("old_text")
    path = values["path"]
    return DiffResultView(
        title=f"{'Created' if created else 'Replaced'} {path}",
        diffs=(
            FileDiff(
                path=path,
                old_text=old_text if isinstance(old_text, str) and not created else None,
                new_text=values["content"],
            ),
        ),
    )


def move_call(values: dict[str, Any]) -> ToolCallView:
    source, destination = values["source"], values["destination"]
    return GenericCallView(
        title=f"Move {source} to {destination}",
        kind="move",
        locations=(FileLocation(path=source), FileLocation(path=destination)),
    )


def move_result(values: dict[str, Any], result: ToolResult) -> ToolResultView | None:
    moved = _meta(result).get("moved")
    if moved not in ("file", "directory"):
        return None
    return GenericResultView(title=f"Moved {moved} {values['source']} to {values['destination']}")


def sleep_call(values: dict[str, Any]) -> ToolCallView:
    return TerminalCallView(title=f"sleep {_seconds(values['seconds'])}")


def sleep_result(values: dict[str, Any], result: ToolResult) -> ToolResultView | None:
    output = "\n".join(b.text for b in result.content if isinstance(b, TextContent))
    if result.is_error:
        return TerminalResultView(output=output)
    return TerminalResultView(output=output, exit_code=0)
