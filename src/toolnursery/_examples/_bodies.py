"""The example tools' bodies: what each call does, given the root it is confined to.

Each factory takes the :class:`SandboxRoot` and returns the body; the bodies validate
their own arguments. ``list_dir``, ``search_text`` and ``move_path`` are plain
``def`` bodies (the registry runs them in a worker thread); ``search_text`` polls the
call's signal between files.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import trio

from .._core._content import TextContent, ToolReturn
from .._core._errors import FileToolError, OutsideRootError, ToolArgsError
from .._core._execution import ToolRunContext
from .._tools._definition import ToolBody
from ._files import BINARY_PROBE, check_kind, clip, os_error, read_regular, write_regular
from ._params import (
    LIST_PARAMS,
    MOVE_PARAMS,
    READ_PARAMS,
    SEARCH_PARAMS,
    SLEEP_PARAMS,
    WRITE_PARAMS,
    show_number,
    validate,
)
from ._root import SandboxRoot

__all__ = [
    "list_dir_body",
    "move_path_body",
    "read_file_body",
    "search_text_body",
    "sleep_body",
    "write_file_body",
]

_SEARCH_FILE_LIMIT: Final = 2_000_000
_LINE_PREVIEW: Final = 200


def read_file_body(root: SandboxRoot) -> ToolBody:
    """``read_file``: a text file's contents, truncated at ``max_bytes``."""

    async def read_file(args: Any, ctx: ToolRunContext) -> ToolReturn:
        values = validate(READ_PARAMS, args)
        raw: str = values["path"]
        limit: int = values["max_bytes"]
        path = await root.aresolve(raw)
        shown = root.show(path)
        try:
            data = await trio.to_thread.run_sync(read_regular, path, limit + 1)
        except IsADirectoryError:
            raise FileToolError(
                f'"{clip(shown)}" is a directory; use list_dir', code="IS_A_DIRECTORY"
            ) from None
        except OSError as exc:
            raise os_error("read", shown, exc) from exc
        if b"\x00" in data[:BINARY_PROBE]:
            return _text(f'"{shown}" is a binary file; read_file shows text only', binary=True)
        text = data[:limit].decode("utf-8", errors="replace")
        meta: dict[str, Any] = {"lines": _count_lines(text)}
        if len(data) > limit:
            text += f"\n[truncated after {limit} bytes]"
            meta["truncated"] = True
        return _text(text, **meta)

    return read_file


def _text(text: str, **meta: Any) -> ToolReturn:
    return ToolReturn((TextContent(text),), meta=meta)


def _count_lines(text: str) -> int:
    return text.count("\n") + (not text.endswith("\n")) if text else 0


def list_dir_body(root: SandboxRoot) -> ToolBody:
    """``list_dir``: a directory's entries, sorted, directories marked with ``/``."""

    # A plain def (runs in a worker thread): one thread hop for the whole listing.
    def list_dir(args: Any, ctx: ToolRunContext) -> ToolReturn:
        values = validate(LIST_PARAMS, args)
        path = root.resolve(values["path"])
        shown = root.show(path)
        try:
            with os.scandir(path) as entries:
                lines = sorted(e.name + "/" if e.is_dir() else e.name for e in entries)
        except NotADirectoryError:
            raise FileToolError(
                f'"{clip(shown)}" is not a directory', code="NOT_A_DIRECTORY"
            ) from None
        except OSError as exc:
            raise os_error("list", shown, exc) from exc
        return _text("\n".join(lines) if lines else f'"{shown}" is empty', entries=len(lines))

    return list_dir


def search_text_body(root: SandboxRoot) -> ToolBody:
    """``search_text``: the lines containing a literal text, in the files under a path."""

    # A plain def: the registry runs it in a worker thread, so blocking I/O is fine
    # here; it polls the signal between files to stop early once the call is aborted.
    def search_text(args: Any, ctx: ToolRunContext) -> ToolReturn:
        values = validate(SEARCH_PARAMS, args)
        pattern: str = values["pattern"]
        if not pattern:
            raise ToolArgsError(['"pattern" must not be empty'])
        fold = bool(values["ignore_case"])
        needle = pattern.casefold() if fold else pattern
        limit: int = values["max_results"]
        start = root.resolve(values["path"])
        shown = root.show(start)
        matches: list[str] = []
        files = 0
        try:
            check_kind(os.stat(start).st_mode)
            for file in _walk(root, start):
                if ctx.signal.cancelled or len(matches) >= limit:
                    break
                found = _search_file(file, needle, fold, limit - len(matches))
                if found:
                    files += 1
                    where = root.show(file)
                    matches.extend(f"{where}:{number}: {line}" for number, line in found)
        except OSError as exc:
            raise os_error("search", shown, exc) from exc
        if not matches:
            return _text(f'no matches for "{pattern}"', matches=0, files=0)
        plural = "es" if len(matches) != 1 else ""
        footer = f"{len(matches)} match{plural} in {files} file{'s' if files != 1 else ''}"
        if len(matches) >= limit:
            footer += f" (stopped at max_results={limit})"
        return _text("\n".join([*matches, footer]), matches=len(matches), files=files)

    return search_text


def _walk(root: SandboxRoot, start: Path) -> Iterator[Path]:
    """The regular files under ``start`` in sorted order, never leaving its tree."""
    if start.is_file():
        yield start
        return
    # followlinks=False: a symlinked directory is never entered, so the walk cannot
    # leave the tree; a symlinked file is read only when it resolves inside ``start``
    # (the call's keys cover that tree and nothing else).
    for directory, dirs, names in os.walk(start):
        dirs.sort()
        here = Path(directory)
        for name in sorted(names):
            path = here / name
            if path.is_symlink():
                try:
                    real = root.resolve(str(path))
                except OutsideRootError:
                    continue
                if not real.is_relative_to(start):
                    continue
            if path.is_file():
                yield path


def _search_file(path: Path, needle: str, fold: bool, limit: int) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    try:
        if path.stat().st_size > _SEARCH_FILE_LIMIT:
            return found
        data = read_regular(path, _SEARCH_FILE_LIMIT + 1)
    except OSError:
        return found  # a file that cannot be read (or is not regular) has no matches
    if len(data) > _SEARCH_FILE_LIMIT or b"\x00" in data[:BINARY_PROBE]:
        return found
    for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
        if needle in (line.casefold() if fold else line):
            found.append((number, line.strip()[:_LINE_PREVIEW]))
            if len(found) >= limit:
                break
    return found


def write_file_body(root: SandboxRoot) -> ToolBody:
    """``write_file``: create or replace a text file; ``meta`` carries a small before-image."""

    async def write_file(args: Any, ctx: ToolRunContext) -> ToolReturn:
        values = validate(WRITE_PARAMS, args)
        content: str = values["content"]
        path = await root.aresolve(values["path"])
        shown = root.show(path)
        data = content.encode("utf-8")
        try:
            existed, old_text = await trio.to_thread.run_sync(write_regular, path, data)
        except IsADirectoryError:
            raise FileToolError(f'"{clip(shown)}" is a directory', code="IS_A_DIRECTORY") from None
        except OSError as exc:
            raise os_error("write", shown, exc) from exc
        verb = "replaced" if existed else "created"
        # The before-image, for the result's diff card: only a small text file's, so a
        # log never carries a large or binary file's old content.
        meta: dict[str, Any] = {"created": not existed}
        if old_text is not None:
            meta["old_text"] = old_text
        return _text(f'{verb} "{shown}" ({len(data)} bytes)', **meta)

    return write_file


def move_path_body(root: SandboxRoot) -> ToolBody:
    """``move_path``: move a file or directory to a path that does not exist yet."""

    # A plain def (runs in a worker thread): a few blocking calls, one thread hop.
    def move_path(args: Any, ctx: ToolRunContext) -> ToolReturn:
        values = validate(MOVE_PARAMS, args)
        source = root.resolve(values["source"])
        target = root.resolve(values["destination"])
        shown, to = root.show(source), root.show(target)
        if source == root.path:
            raise FileToolError("cannot move the root directory", code="OS_ERROR")
        try:
            mode = os.stat(source).st_mode
            check_kind(mode)
            if target.exists():
                raise FileToolError(
                    f'cannot move to "{clip(to)}": it already exists', code="ALREADY_EXISTS"
                )
            target.parent.mkdir(parents=True, exist_ok=True)
            os.rename(source, target)
        except OSError as exc:
            raise os_error("move", shown, exc) from exc
        kind = "directory" if stat.S_ISDIR(mode) else "file"
        return _text(f'moved "{shown}" to "{to}"', moved=kind)

    return move_path


async def sleep_body(args: Any, ctx: ToolRunContext) -> str:
    """``sleep``: wait, cancellably, for the given number of seconds."""
    values = validate(SLEEP_PARAMS, args)
    seconds = values["seconds"]
    await trio.sleep(seconds)
    return f"slept {show_number(seconds)}s"
