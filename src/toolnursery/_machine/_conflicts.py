"""The resource-conflict table of a batch, and the grouping rules it implies (pure).

Two ``keyed`` calls conflict when they name the same resource and at least one of the
two writes it. A keyed call waits for every *earlier unfinished* call it conflicts
with; an ``exclusive`` call is a barrier that closes the group of calls before it.
Nothing here knows about trio, slots or the pipeline: the scheduler's admission and
the command's demo explanations both read these rules from here.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Generic, TypeVar

from .._core._decisions import ResourceKey

__all__ = ["ConflictTable", "conflicting_resources", "group_heads"]

T = TypeVar("T", bound=Hashable)


class ConflictTable(Generic[T]):
    """Which unfinished calls hold each resource, and whether they write it.

    Calls are added in model order (:meth:`add` answers which earlier unfinished calls
    the new one conflicts with) and removed when their dispatch ends.
    """

    __slots__ = ("_holders",)

    def __init__(self) -> None:
        self._holders: dict[str, dict[T, bool]] = {}

    def add(self, item: T, keys: Sequence[ResourceKey]) -> list[T]:
        """Register ``item``'s keys (one per resource, as classification makes them);
        return the earlier unfinished items it conflicts with, each once."""
        holders = self._holders
        blocking: dict[T, None] = {}
        for key in keys:
            resource = key.resource
            write = key.mode == "write"
            held = holders.get(resource)
            if held is None:
                holders[resource] = {item: write}
                continue
            for other, other_writes in held.items():
                if write or other_writes:
                    blocking[other] = None
            held[item] = write
        return list(blocking)

    def remove(self, item: T, keys: Sequence[ResourceKey]) -> None:
        """Forget ``item`` (its dispatch ended): it blocks nobody any more."""
        holders = self._holders
        for key in keys:
            held = holders.get(key.resource)
            if held is None:
                continue
            held.pop(item, None)
            if not held:
                del holders[key.resource]

    def holders(self, resource: str) -> dict[T, bool]:
        """The unfinished items holding ``resource``, each with whether it writes."""
        return dict(self._holders.get(resource, {}))

    def __len__(self) -> int:
        """How many resources are held."""
        return len(self._holders)


def conflicting_resources(
    earlier: Sequence[ResourceKey], later: Sequence[ResourceKey]
) -> list[str]:
    """The resources two calls' keys conflict on: the same one, at least one write."""
    modes = {key.resource: key.mode for key in earlier}
    return [
        key.resource
        for key in later
        if key.resource in modes and "write" in (key.mode, modes[key.resource])
    ]


def group_heads(modes: Sequence[str]) -> list[int]:
    """For each call, the index of the first call of its group (``modes`` are kinds).

    A group is the run of calls since the last ``exclusive`` barrier: the call right
    after an exclusive one starts a new group.
    """
    heads = [0] * len(modes)
    for i in range(1, len(modes)):
        heads[i] = i if modes[i - 1] == "exclusive" else heads[i - 1]
    return heads
