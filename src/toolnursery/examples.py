"""Example tools that do real file work, confined to one root directory.

Six tools, each a raw :class:`~toolnursery.ToolDefinition` that declares its JSON
Schema and validates its own arguments:

* ``read_file`` (keyed) — a text file's contents, truncated at ``max_bytes``.
* ``list_dir`` (keyed) — a directory's entries, directories marked with ``/``.
* ``search_text`` (keyed) — lines containing a literal text, under a path.
  A plain ``def`` body: the registry runs it in a worker thread, and it polls the
  call's signal between files.
* ``write_file`` (keyed) — create or replace a text file.
* ``move_path`` (exclusive) — move a file or directory to a new path.
* ``sleep`` (parallel) — wait, cancellably; useful to watch scheduling.

The file tools name the resources each call touches (``concurrency_keys``), on the
root-relative path resolved exactly as the body resolves it:

* ``read_file(p)`` reads ``file:p``;
* ``list_dir(d)`` and ``search_text(d)`` *write* ``tree:d`` — a marker, not a real
  write: it conflicts with every write that reads it;
* ``write_file(p)`` writes ``file:p``, reads ``tree:a`` for ``p`` and each of its
  ancestors, and takes ``file:a`` for each ancestor directory (a write when the
  directory does not exist yet, since the call creates it; a read otherwise).

So a write waits for earlier reads of its file and for earlier listings and searches
of any directory above it, and later ones wait for it, while writes of different files
overlap each other and reads of other files. The price of the marker: two listings or
searches of the same directory run one after the other. A path that does not resolve
inside the root, or invalid arguments, make the classifier raise: the call is
exclusive (it fails without touching anything, so the barrier costs little, and no
key is ever computed from a path the body would not use). ``move_path`` touches two
paths and two directory listings, and is simply exclusive.

Each tool also presents itself to a UI (``present_call`` / ``present_result``): the
reads as generic cards of kind ``read`` / ``search`` with the file as a location,
``write_file`` as a diff card (the result's diff has the old text when the file was a
small text file — the before-image travels in the result's ``meta``), ``sleep`` as a
terminal card. The presenters are pure functions of the arguments and the result, and
answer ``None`` (the generic fallback) for arguments or ``meta`` they do not recognize,
so a UI can replay old logs with them.

Every path argument is resolved against the root, following symlinks, *before* any
file is opened: a path that ends up outside the root (``..``, an absolute path
elsewhere, a symlink pointing out) fails with :class:`OutsideRootError` and nothing
outside the root is read or written. The check is made once per call, so the tools
are a demonstration, not a security boundary against a concurrent attacker who can
swap directories for symlinks mid-call.

The tools read and write regular files and list directories, nothing else: a FIFO, a
socket or a device inside the root fails with ``NOT_A_REGULAR_FILE`` (files are opened
non-blocking and checked on the open descriptor, so nothing can hold a worker thread
past the call's deadline). Every other operating-system failure is ``OS_ERROR``
(``NOT_FOUND`` for a missing path); error messages name paths relative to the root,
never the host path. All failures are :class:`~toolnursery.FileToolError` (or its
subclass :class:`OutsideRootError`). A file name that is not UTF-8 is shown with
``\\xNN`` escapes (``caf\\xe9.txt``), and a path argument written that way names that
file.

Example::

    registry = example_registry("/path/to/project")
    calls = [ToolCall("c1", "read_file", '{"path": "README.md"}')]
    results = await run_tool_calls(registry, calls)
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Callable, Iterator, Mapping
from functools import partial
from pathlib import Path
from typing import Any, Final, Literal

import trio

from ._core._content import TextContent, ToolReturn
from ._core._decisions import ResourceKey
from ._core._errors import FileToolError, OutsideRootError, ToolArgsError
from ._core._execution import ToolRunContext
from ._pipeline._registry import ToolRegistry
from ._tools import _example_views as views
from ._tools._definition import ToolBody, ToolDefinition

__all__ = [
    "OutsideRootError",
    "example_registry",
    "example_tools",
    "fill_sandbox",
]

_Kind = Literal["string", "integer", "number", "boolean"]


# -- arguments ------------------------------------------------------------------------


class _Param:
    """One declared argument: its JSON type, whether required, its default and range."""

    __slots__ = ("default", "description", "kind", "maximum", "minimum", "name", "required")

    def __init__(
        self,
        name: str,
        kind: _Kind,
        description: str,
        *,
        required: bool = False,
        default: object = None,
        minimum: float | None = None,
        maximum: float | None = None,
    ) -> None:
        self.name = name
        self.kind = kind
        self.description = description
        self.required = required
        self.default = default
        self.minimum = minimum
        self.maximum = maximum

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.kind, "description": self.description}
        if self.default is not None:
            out["default"] = self.default
        if self.minimum is not None:
            out["minimum"] = self.minimum
        if self.maximum is not None:
            out["maximum"] = self.maximum
        return out

    def check(self, value: object) -> str | None:
        """The violation ``value`` commits, or ``None``."""
        kind = self.kind
        # bool is an int in Python but never a JSON number.
        if kind == "string":
            ok = isinstance(value, str)
        elif kind == "boolean":
            ok = isinstance(value, bool)
        elif kind == "integer":
            ok = isinstance(value, int) and not isinstance(value, bool)
        else:
            ok = isinstance(value, int | float) and not isinstance(value, bool)
        if not ok:
            article = "an" if kind == "integer" else "a"
            return f'"{self.name}" must be {article} {kind}'
        if isinstance(value, str) and "\x00" in value:
            return f'"{self.name}" must not contain NUL characters'
        if isinstance(value, int | float) and not isinstance(value, bool):
            low, high = self.minimum, self.maximum
            if (low is not None and value < low) or (high is not None and value > high):
                return f'"{self.name}" must be between {_num(low)} and {_num(high)}'
        return None


def _num(value: float | None) -> str:
    if value is None:
        return "any"
    return str(int(value)) if float(value).is_integer() else str(value)


def _parameters(params: tuple[_Param, ...]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {p.name: p.schema() for p in params},
        "required": [p.name for p in params if p.required],
    }


def _validate(params: tuple[_Param, ...], args: object) -> dict[str, Any]:
    """Check ``args`` against ``params``; return them with defaults filled in.

    Raises:
        ToolArgsError: listing every violation, in declaration order.
    """
    if not isinstance(args, Mapping):
        raise ToolArgsError(['"arguments" must be an object'])
    violations: list[str] = []
    values: dict[str, Any] = {}
    for param in params:
        if param.name not in args:
            if param.required:
                violations.append(f'missing required property "{param.name}"')
            values[param.name] = param.default
            continue
        value = args[param.name]
        problem = param.check(value)
        if problem is not None:
            violations.append(problem)
        values[param.name] = value
    if violations:
        raise ToolArgsError(violations)
    return values


# -- paths ----------------------------------------------------------------------------


class _Root:
    """The directory the tools are confined to, and path resolution against it."""

    __slots__ = ("path",)

    def __init__(self, root: str | os.PathLike[str]) -> None:
        path = Path(os.path.realpath(root))
        if not path.is_dir():
            raise NotADirectoryError(f"example tools root {os.fspath(root)!r} is not a directory")
        self.path = path

    def resolve(self, raw: str) -> Path:
        """Resolve ``raw`` (relative to the root, or absolute) following every symlink.

        A name the tools showed escaped (``caf\\xe9.txt``: a byte that is not UTF-8)
        names that file, unless a file with the literal name exists.

        Raises:
            OutsideRootError: the real path is not the root or inside it.
        """
        if "\\x" in raw:
            raw = _unescape(self.path, raw)
        candidate = Path(raw)
        if not candidate.is_absolute():
            candidate = self.path / candidate
        real = Path(os.path.realpath(candidate))
        if real != self.path and not real.is_relative_to(self.path):
            raise OutsideRootError(raw)
        return real

    async def aresolve(self, raw: str) -> Path:
        """:meth:`resolve` in a worker thread (it reads symlinks: blocking I/O)."""
        return await trio.to_thread.run_sync(self.resolve, raw)

    def show(self, path: Path) -> str:
        """``path`` as the model should see it: relative to the root, ``.`` for the root."""
        rel = path.relative_to(self.path).as_posix()
        return rel or "."

    def key(self, raw: str) -> str:
        """``raw`` resolved as the tools resolve it, root-relative: a resource name.

        Raises:
            OutsideRootError: it does not resolve inside the root.
        """
        return self.show(self.resolve(raw))


_SHOWN_LIMIT: Final = 120
_OPEN_FLAGS: Final = os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
_KINDS: Final = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


class _NotRegular(OSError):
    """Raised inside a worker thread when a path is not a regular file or directory."""

    def __init__(self, mode: int) -> None:
        self.kind = next((kind for test, kind in _KINDS if test(mode)), "a special file")
        super().__init__(errno.EINVAL, self.kind)


_ESCAPED_BYTE: Final = re.compile(r"\\x([89a-fA-F][0-9a-fA-F])")


def _unescape(root: Path, raw: str) -> str:
    """``raw`` with each ``\\xNN`` escape (what results show for an undecodable byte)
    turned back into that byte, when the literal path does not exist and that one does."""
    literal = Path(raw) if os.path.isabs(raw) else root / raw
    if os.path.lexists(literal):
        return raw
    decoded = _ESCAPED_BYTE.sub(lambda m: chr(0xDC00 + int(m.group(1), 16)), raw)
    target = Path(decoded) if os.path.isabs(decoded) else root / decoded
    return decoded if os.path.lexists(target) else raw


def _clip(shown: str) -> str:
    if len(shown) <= _SHOWN_LIMIT:
        return shown
    return shown[: _SHOWN_LIMIT // 2] + "…" + shown[-_SHOWN_LIMIT // 2 :]


def _os_error(action: str, shown: str, exc: OSError) -> FileToolError:
    """The one translation of an ``OSError`` into a file tool's result.

    Only the root-relative ``shown`` path and the error's ``strerror`` reach the
    message: ``str(exc)`` would name the host path.
    """
    shown = _clip(shown)
    if isinstance(exc, _NotRegular):
        return FileToolError(
            f'cannot {action} "{shown}": it is {exc.kind}, not a regular file or directory',
            code="NOT_A_REGULAR_FILE",
        )
    if isinstance(exc, FileNotFoundError):
        return FileToolError(
            f'cannot {action} "{shown}": no such file or directory', code="NOT_FOUND"
        )
    reason = exc.strerror or type(exc).__name__
    return FileToolError(f'cannot {action} "{shown}": {reason}', code="OS_ERROR")


def _check_kind(mode: int) -> None:
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise _NotRegular(mode)


def _open_regular(path: Path, flags: int, mode: int = 0o666) -> int:
    """Open a regular file without ever blocking on a FIFO or a device (blocking I/O).

    ``O_NONBLOCK`` makes opening a FIFO return at once; the descriptor's own type is
    then checked, so a path swapped for something else after a check cannot slip by.

    Raises:
        IsADirectoryError: the path is a directory.
        OSError: the open failed, or the path is not a regular file (``_NotRegular``).
    """
    fd = os.open(path, flags | _OPEN_FLAGS, mode)
    checked = False
    try:
        _check_regular(os.fstat(fd).st_mode)
        checked = True
    finally:
        if not checked:
            os.close(fd)
    return fd


def _check_regular(mode: int) -> None:
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory")
    if not stat.S_ISREG(mode):
        raise _NotRegular(mode)


def _read_regular(path: Path, limit: int) -> bytes:
    """Up to ``limit`` bytes of a regular file (blocking I/O: run it in a thread)."""
    fd = _open_regular(path, os.O_RDONLY)
    try:
        chunks: list[bytes] = []
        left = limit
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _always(_args: object) -> bool:
    return True


# -- resource keys --------------------------------------------------------------------
#
# Resource names are root-relative resolved paths ("." is the root): ``file:<p>`` is
# the node at p, ``tree:<d>`` a marker for "everything under d". Observers of a tree
# (list_dir, search_text) take a *write* of its marker and writers take a *read* of
# the marker of each directory above them: a write then conflicts with every listing
# or search that covers it, and writes never conflict with each other through it.
# The classifiers raise (→ exclusive) on invalid arguments or a path outside the root.


def _ancestors(rel: str) -> list[str]:
    """The directories above root-relative ``rel``, nearest first, ending at ``.``."""
    if rel == ".":
        return []
    parts = rel.split("/")
    return ["/".join(parts[:i]) or "." for i in range(len(parts) - 1, -1, -1)]


def _read_keys(root: _Root) -> Callable[[Any], list[ResourceKey]]:
    def keys(args: Any) -> list[ResourceKey]:
        values = _validate(_READ_PARAMS, args)
        return [ResourceKey.read(f"file:{root.key(values['path'])}")]

    return keys


def _tree_keys(root: _Root, params: tuple[_Param, ...]) -> Callable[[Any], list[ResourceKey]]:
    def keys(args: Any) -> list[ResourceKey]:
        values = _validate(params, args)
        return [ResourceKey.write(f"tree:{root.key(values['path'])}")]

    return keys


def _write_keys(root: _Root) -> Callable[[Any], list[ResourceKey]]:
    def keys(args: Any) -> list[ResourceKey]:
        values = _validate(_WRITE_PARAMS, args)
        rel = root.key(values["path"])
        above = _ancestors(rel)
        out = [ResourceKey.write(f"file:{rel}")]
        out += [ResourceKey.read(f"tree:{a}") for a in (rel, *above)]
        for directory in above[:-1]:  # the root always exists
            # A missing directory is created by the call (mkdir -p): a write of it.
            exists = (root.path / directory).is_dir()
            mode = ResourceKey.read if exists else ResourceKey.write
            out.append(mode(f"file:{directory}"))
        return out

    return keys


# -- the tools ------------------------------------------------------------------------

_READ_PARAMS: Final = (
    _Param("path", "string", "The file to read, relative to the root.", required=True),
    _Param(
        "max_bytes",
        "integer",
        "Read at most this many bytes.",
        default=100_000,
        minimum=1,
        maximum=10_000_000,
    ),
)
_LIST_PARAMS: Final = (
    _Param("path", "string", "The directory to list, relative to the root.", default="."),
)
_SEARCH_PARAMS: Final = (
    _Param("pattern", "string", "The literal text to look for.", required=True),
    _Param("path", "string", "A file or directory to search under.", default="."),
    _Param("ignore_case", "boolean", "Match regardless of case.", default=False),
    _Param(
        "max_results",
        "integer",
        "Stop after this many matches.",
        default=50,
        minimum=1,
        maximum=1000,
    ),
)
_WRITE_PARAMS: Final = (
    _Param("path", "string", "The file to write, relative to the root.", required=True),
    _Param("content", "string", "The complete new text of the file.", required=True),
)
_MOVE_PARAMS: Final = (
    _Param("source", "string", "The file or directory to move.", required=True),
    _Param(
        "destination",
        "string",
        "Its new path; must not exist yet (missing parent directories are created).",
        required=True,
    ),
)
_SLEEP_PARAMS: Final = (
    _Param("seconds", "number", "How long to wait.", required=True, minimum=0, maximum=60),
)

_BINARY_PROBE: Final = 8192
_SEARCH_FILE_LIMIT: Final = 2_000_000
_LINE_PREVIEW: Final = 200
_BEFORE_IMAGE_LIMIT: Final = 64 * 1024


def _read_file(root: _Root) -> ToolBody:
    async def read_file(args: Any, ctx: ToolRunContext) -> ToolReturn:
        values = _validate(_READ_PARAMS, args)
        raw: str = values["path"]
        limit: int = values["max_bytes"]
        path = await root.aresolve(raw)
        shown = root.show(path)
        try:
            data = await trio.to_thread.run_sync(_read_regular, path, limit + 1)
        except IsADirectoryError:
            raise FileToolError(
                f'"{_clip(shown)}" is a directory; use list_dir', code="IS_A_DIRECTORY"
            ) from None
        except OSError as exc:
            raise _os_error("read", shown, exc) from exc
        if b"\x00" in data[:_BINARY_PROBE]:
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


def _list_dir(root: _Root) -> ToolBody:
    # A plain def (runs in a worker thread): one thread hop for the whole listing.
    def list_dir(args: Any, ctx: ToolRunContext) -> ToolReturn:
        values = _validate(_LIST_PARAMS, args)
        path = root.resolve(values["path"])
        shown = root.show(path)
        try:
            with os.scandir(path) as entries:
                lines = sorted(e.name + "/" if e.is_dir() else e.name for e in entries)
        except NotADirectoryError:
            raise FileToolError(
                f'"{_clip(shown)}" is not a directory', code="NOT_A_DIRECTORY"
            ) from None
        except OSError as exc:
            raise _os_error("list", shown, exc) from exc
        return _text("\n".join(lines) if lines else f'"{shown}" is empty', entries=len(lines))

    return list_dir


def _search_text(root: _Root) -> ToolBody:
    # A plain def: the registry runs it in a worker thread, so blocking I/O is fine
    # here; it polls the signal between files to stop early once the call is aborted.
    def search_text(args: Any, ctx: ToolRunContext) -> ToolReturn:
        values = _validate(_SEARCH_PARAMS, args)
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
            _check_kind(os.stat(start).st_mode)
            for file in _walk(root, start):
                if ctx.signal.cancelled or len(matches) >= limit:
                    break
                found = _search_file(file, needle, fold, limit - len(matches))
                if found:
                    files += 1
                    where = root.show(file)
                    matches.extend(f"{where}:{number}: {line}" for number, line in found)
        except OSError as exc:
            raise _os_error("search", shown, exc) from exc
        if not matches:
            return _text(f'no matches for "{pattern}"', matches=0, files=0)
        plural = "es" if len(matches) != 1 else ""
        footer = f"{len(matches)} match{plural} in {files} file{'s' if files != 1 else ''}"
        if len(matches) >= limit:
            footer += f" (stopped at max_results={limit})"
        return _text("\n".join([*matches, footer]), matches=len(matches), files=files)

    return search_text


def _walk(root: _Root, start: Path) -> Iterator[Path]:
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
        data = _read_regular(path, _SEARCH_FILE_LIMIT + 1)
    except OSError:
        return found  # a file that cannot be read (or is not regular) has no matches
    if len(data) > _SEARCH_FILE_LIMIT or b"\x00" in data[:_BINARY_PROBE]:
        return found
    for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
        if needle in (line.casefold() if fold else line):
            found.append((number, line.strip()[:_LINE_PREVIEW]))
            if len(found) >= limit:
                break
    return found


def _write_file(root: _Root) -> ToolBody:
    async def write_file(args: Any, ctx: ToolRunContext) -> ToolReturn:
        values = _validate(_WRITE_PARAMS, args)
        content: str = values["content"]
        path = await root.aresolve(values["path"])
        shown = root.show(path)
        data = content.encode("utf-8")
        try:
            existed, old_text = await trio.to_thread.run_sync(_write_regular, path, data)
        except IsADirectoryError:
            raise FileToolError(f'"{_clip(shown)}" is a directory', code="IS_A_DIRECTORY") from None
        except OSError as exc:
            raise _os_error("write", shown, exc) from exc
        verb = "replaced" if existed else "created"
        # The before-image, for the result's diff card: only a small text file's, so a
        # log never carries a large or binary file's old content.
        meta: dict[str, Any] = {"created": not existed}
        if old_text is not None:
            meta["old_text"] = old_text
        return _text(f'{verb} "{shown}" ({len(data)} bytes)', **meta)

    return write_file


def _write_regular(path: Path, data: bytes) -> tuple[bool, str | None]:
    """Create or replace a regular file; return whether it existed and its old text.

    Blocking I/O (run it in a thread). The file is opened before anything is cut, and
    checked on its descriptor, so a FIFO or device is refused, never written.
    """
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, "is a directory")
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = _open_regular(path, os.O_RDWR | os.O_CREAT | os.O_EXCL)
        existed = False
    except FileExistsError:
        fd = _open_regular(path, os.O_RDWR)
        existed = True
    try:
        old_text = _before_image(fd) if existed else None
        os.ftruncate(fd, 0)
        view = memoryview(data)
        while view:
            view = view[os.pwrite(fd, view, len(data) - len(view)) :]
    finally:
        os.close(fd)
    return existed, old_text


def _before_image(fd: int) -> str | None:
    """A file's text before it is replaced, or ``None`` when it is large or not text."""
    if os.fstat(fd).st_size > _BEFORE_IMAGE_LIMIT:
        return None
    data = os.pread(fd, _BEFORE_IMAGE_LIMIT + 1, 0)
    if b"\x00" in data[:_BINARY_PROBE]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _move_path(root: _Root) -> ToolBody:
    # A plain def (runs in a worker thread): a few blocking calls, one thread hop.
    def move_path(args: Any, ctx: ToolRunContext) -> ToolReturn:
        values = _validate(_MOVE_PARAMS, args)
        source = root.resolve(values["source"])
        target = root.resolve(values["destination"])
        shown, to = root.show(source), root.show(target)
        if source == root.path:
            raise FileToolError("cannot move the root directory", code="OS_ERROR")
        try:
            mode = os.stat(source).st_mode
            _check_kind(mode)
            if target.exists():
                raise FileToolError(
                    f'cannot move to "{_clip(to)}": it already exists', code="ALREADY_EXISTS"
                )
            target.parent.mkdir(parents=True, exist_ok=True)
            os.rename(source, target)
        except OSError as exc:
            raise _os_error("move", shown, exc) from exc
        kind = "directory" if stat.S_ISDIR(mode) else "file"
        return _text(f'moved "{shown}" to "{to}"', moved=kind)

    return move_path


async def _sleep(args: Any, ctx: ToolRunContext) -> str:
    values = _validate(_SLEEP_PARAMS, args)
    seconds = values["seconds"]
    await trio.sleep(seconds)
    return f"slept {_num(seconds)}s"


def example_tools(root: str | os.PathLike[str]) -> list[ToolDefinition]:
    """The example tools, confined to ``root``.

    Args:
        root: an existing directory; every path argument is resolved against it.

    Returns:
        ``read_file``, ``list_dir``, ``search_text``, ``write_file``, ``move_path``
        and ``sleep``.

    Raises:
        NotADirectoryError: ``root`` is not an existing directory.
    """
    sandbox = _Root(root)
    safe: Callable[[Any], bool] = _always
    return [
        ToolDefinition(
            "read_file",
            "Read a UTF-8 text file under the root directory.",
            _parameters(_READ_PARAMS),
            _read_file(sandbox),
            concurrency_keys=_read_keys(sandbox),
            present_call=views.present_call(partial(_validate, _READ_PARAMS), views.read_call),
            present_result=views.present_result(
                partial(_validate, _READ_PARAMS), views.read_result
            ),
        ),
        ToolDefinition(
            "list_dir",
            "List a directory under the root; directories end with '/'.",
            _parameters(_LIST_PARAMS),
            _list_dir(sandbox),
            concurrency_keys=_tree_keys(sandbox, _LIST_PARAMS),
            present_call=views.present_call(partial(_validate, _LIST_PARAMS), views.list_call),
            present_result=views.present_result(
                partial(_validate, _LIST_PARAMS), views.list_result
            ),
        ),
        ToolDefinition(
            "search_text",
            "Find the lines containing a literal text in the files under a path.",
            _parameters(_SEARCH_PARAMS),
            _search_text(sandbox),
            concurrency_keys=_tree_keys(sandbox, _SEARCH_PARAMS),
            present_call=views.present_call(partial(_validate, _SEARCH_PARAMS), views.search_call),
            present_result=views.present_result(
                partial(_validate, _SEARCH_PARAMS), views.search_result
            ),
        ),
        ToolDefinition(
            "write_file",
            "Create or replace a UTF-8 text file under the root directory.",
            _parameters(_WRITE_PARAMS),
            _write_file(sandbox),
            concurrency_keys=_write_keys(sandbox),
            present_call=views.present_call(partial(_validate, _WRITE_PARAMS), views.write_call),
            present_result=views.present_result(
                partial(_validate, _WRITE_PARAMS), views.write_result
            ),
        ),
        ToolDefinition(
            "move_path",
            "Move a file or directory under the root to a new path under the root.",
            _parameters(_MOVE_PARAMS),
            _move_path(sandbox),
            present_call=views.present_call(partial(_validate, _MOVE_PARAMS), views.move_call),
            present_result=views.present_result(
                partial(_validate, _MOVE_PARAMS), views.move_result
            ),
        ),
        ToolDefinition(
            "sleep",
            "Wait for the given number of seconds.",
            _parameters(_SLEEP_PARAMS),
            _sleep,
            is_concurrency_safe=safe,
            present_call=views.present_call(partial(_validate, _SLEEP_PARAMS), views.sleep_call),
            present_result=views.present_result(
                partial(_validate, _SLEEP_PARAMS), views.sleep_result
            ),
        ),
    ]


def example_registry(root: str | os.PathLike[str]) -> ToolRegistry:
    """A :class:`ToolRegistry` holding the :func:`example_tools` confined to ``root``.

    Raises:
        NotADirectoryError: ``root`` is not an existing directory.
    """
    registry = ToolRegistry()
    for definition in example_tools(root):
        registry.register(definition)
    return registry


_SANDBOX_FILES: Final = {
    "README.md": "# Demo project\n\nA tiny project for the toolnursery demo.\n"
    "TODO: write the real README.\n",
    "src/app.py": 'def main() -> None:\n    print("hello")  # TODO: greet by name\n',
    "src/util.py": "def add(a: int, b: int) -> int:\n    return a + b\n",
    "notes/ideas.md": "- parallel reads\n- exclusive writes\n",
}


def fill_sandbox(root: str | os.PathLike[str]) -> list[str]:
    """Write a small sample project under ``root`` (the demo's sandbox).

    Returns:
        The relative paths written, sorted.
    """
    base = Path(root)
    for name, text in _SANDBOX_FILES.items():
        path = base / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return sorted(_SANDBOX_FILES)
