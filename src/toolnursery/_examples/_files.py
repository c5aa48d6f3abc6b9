"""Regular-file I/O for the example tools, and its one translation of ``OSError``.

Blocking functions, run in worker threads. Files are opened non-blocking and
checked on the open descriptor, so a FIFO, a socket or a device can never hold a
worker thread past the call's deadline; error messages name the root-relative path,
never the host path.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Final

from .._core._errors import FileToolError

__all__ = ["BINARY_PROBE", "check_kind", "clip", "os_error", "read_regular", "write_regular"]


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


def clip(shown: str) -> str:
    """A shown path cut in the middle to fit an error message."""
    if len(shown) <= _SHOWN_LIMIT:
        return shown
    return shown[: _SHOWN_LIMIT // 2] + "…" + shown[-_SHOWN_LIMIT // 2 :]


def os_error(action: str, shown: str, exc: OSError) -> FileToolError:
    """The one translation of an ``OSError`` into a file tool's result.

    Only the root-relative ``shown`` path and the error's ``strerror`` reach the
    message: ``str(exc)`` would name the host path.
    """
    shown = clip(shown)
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


def check_kind(mode: int) -> None:
    """Refuse a mode that is neither a regular file nor a directory.

    Raises:
        OSError: the mode is a FIFO, a socket or a device (``os_error`` names which).
    """
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


def read_regular(path: Path, limit: int) -> bytes:
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


BINARY_PROBE: Final = 8192


_BEFORE_IMAGE_LIMIT: Final = 64 * 1024


def write_regular(path: Path, data: bytes) -> tuple[bool, str | None]:
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
    if b"\x00" in data[:BINARY_PROBE]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None
