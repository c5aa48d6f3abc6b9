"""The directory the example tools are confined to, and path resolution against it.

Every path argument is resolved against the root, following symlinks, before any
file is opened; a path that ends up outside it fails with :class:`OutsideRootError`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Final

import trio

from .._core._errors import OutsideRootError

__all__ = ["SandboxRoot"]


class SandboxRoot:
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
