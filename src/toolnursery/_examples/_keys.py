"""The example tools' resource keys: what each call reads and writes, by path.

Resource names are root-relative resolved paths ("." is the root): ``file:<p>`` is
the node at p, ``tree:<d>`` a marker for "everything under d". Observers of a tree
(list_dir, search_text) take a *write* of its marker and writers take a *read* of
the marker of each directory above them: a write then conflicts with every listing
or search that covers it, and writes never conflict with each other through it.
The classifiers raise (→ exclusive) on invalid arguments or a path outside the root.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._core._decisions import ResourceKey
from ._params import READ_PARAMS, WRITE_PARAMS, Param, validate
from ._root import SandboxRoot

__all__ = ["read_keys", "tree_keys", "write_keys"]


def _ancestors(rel: str) -> list[str]:
    """The directories above root-relative ``rel``, nearest first, ending at ``.``."""
    if rel == ".":
        return []
    parts = rel.split("/")
    return ["/".join(parts[:i]) or "." for i in range(len(parts) - 1, -1, -1)]


def read_keys(root: SandboxRoot) -> Callable[[Any], list[ResourceKey]]:
    """``read_file``'s classifier: a read of ``file:<path>``."""

    def keys(args: Any) -> list[ResourceKey]:
        values = validate(READ_PARAMS, args)
        return [ResourceKey.read(f"file:{root.key(values['path'])}")]

    return keys


def tree_keys(root: SandboxRoot, params: tuple[Param, ...]) -> Callable[[Any], list[ResourceKey]]:
    """The classifier of a tool that observes a tree: a write of ``tree:<path>``."""

    def keys(args: Any) -> list[ResourceKey]:
        values = validate(params, args)
        return [ResourceKey.write(f"tree:{root.key(values['path'])}")]

    return keys


def write_keys(root: SandboxRoot) -> Callable[[Any], list[ResourceKey]]:
    """``write_file``'s classifier: its file, the trees above it, the directories it may create."""

    def keys(args: Any) -> list[ResourceKey]:
        values = validate(WRITE_PARAMS, args)
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
