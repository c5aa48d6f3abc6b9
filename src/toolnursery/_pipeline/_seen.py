"""One committed result as the provenance ledger keeps it, and the walk that reads the
declared record fields out of its JSON value (with the JSON path of each)."""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from itertools import repeat
from typing import Any, Final

import msgspec

from .._core._content import ToolExecutionResult
from ._matching import Date, Haystack, dates_in, fold, same_date

__all__ = ["Seen", "Walk", "leaves"]


class Seen:
    """One committed result as the ledger keeps it; its text is indexed on first use."""

    __slots__ = (
        "_folded",
        "_folded_walks",
        "_haystack",
        "_paths",
        "_walks",
        "arguments",
        "batch",
        "call_id",
        "index",
        "record_steps",
        "result",
        "tool",
    )

    def __init__(
        self,
        tool: str,
        call_id: str,
        batch: object,
        result: ToolExecutionResult,
        record_steps: tuple[tuple[str | None, ...], ...],
        index: int,
        arguments: object = None,
    ) -> None:
        self.tool = tool
        self.call_id = call_id
        self.batch = batch
        self.result = result
        self.record_steps = record_steps  # the declared record paths, parsed
        self.index = index  # its place in the ledger: a later result has a larger one
        self.arguments = arguments  # the call's arguments: what named the source
        self._haystack: Haystack | None = None
        self._paths: list[str] = []
        self._folded: str | None = None
        self._walks: list[Walk] = []
        self._folded_walks: list[list[str]] = []

    def written(self) -> str:
        """The result's text as its values are written in it, folded: what tells, without
        reading its records, that a value is not one of them."""
        written = self._folded
        if written is None:
            structured = self.result.structured_content
            text = self.result.text
            if structured is not None:
                text = msgspec.json.encode(structured).decode()
            written = self._folded = fold(text)
        return written

    def _fields(self) -> Haystack:
        value = self.result.value
        fields = [("$", self.result.text)] if value is None else list(leaves(value, "$"))
        self._paths = [path for path, _ in fields]
        haystack = self._haystack = Haystack([text for _, text in fields])
        return haystack

    def records(self) -> dict[str, None]:
        """The declared record fields' texts, case-folded (a dict for its fast key
        operations); :meth:`path_of` names the place of one."""
        exact: dict[str, None] = {}
        walks = self._walks = []
        if self.record_steps and (whole := self.result.value) is not None:
            for steps in self.record_steps:
                walk = Walk(whole, steps)
                walks.append(walk)
                exact.update(dict.fromkeys(map(str.casefold, walk.texts)))
        return exact

    def path_of(self, text: str) -> str:
        """The JSON path of the first record field whose case-folded text is ``text``
        (one :meth:`records` gave)."""
        folded = self._folded_walks
        if len(folded) < len(self._walks):  # made when a finding first names a field
            folded += [list(map(str.casefold, walk.texts)) for walk in self._walks[len(folded) :]]
        for declared, texts in enumerate(folded):
            if text in texts:
                return self._walks[declared].path(texts.index(text))
        raise KeyError(text)

    def fragment(self, wanted: tuple[str, ...], dates: set[Date]) -> str | None:
        """The path of a text of the result holding a value of ``wanted`` (or a date)."""
        haystack = self._haystack or self._fields()
        for needle in wanted:
            index = haystack.find(needle)
            if index >= 0:
                return self._paths[index]
        if dates:
            for index, text in enumerate(haystack.texts):
                if same_date(dates, dates_in(text)):
                    return self._paths[index]
        return None


def leaves(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from leaves(item, f"{path}.{key}")
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from leaves(item, f"{path}[{i}]")
    elif isinstance(value, int) and not isinstance(value, bool):
        yield path, str(value)


class Walk:
    """The texts at one record path's places in a value, and what names each place.

    Each level keeps, per node, the index of its parent in the level above (a list's
    items sit together, in order: an item's index is its distance from the first item
    of its parent), so a text's JSON path is rebuilt only when a finding names it.
    """

    __slots__ = ("_parents", "_value", "flat", "frontier", "steps", "texts")

    def __init__(self, value: Any, steps: tuple[str | None, ...]) -> None:
        self.steps = steps
        self._value = value
        self._parents: list[list[int]] | None = None  # made when a path is asked for
        frontier: list[Any] = [value]
        # The usual shape (a list of objects, each with the field, each field a text)
        # is walked with C-level map()s; any other falls back to the loops, same result.
        for step in steps:
            if step is None:
                if len(frontier) == 1 and type(frontier[0]) in _LISTS:
                    frontier = list(frontier[0])
                else:
                    frontier = [item for node in frontier if type(node) in _LISTS for item in node]
            elif set(map(type, frontier)) == _DICT:
                found = list(map(dict.get, frontier, repeat(step), repeat(_ABSENT)))
                frontier = found if _ABSENT not in found else [v for v in found if v is not _ABSENT]
            else:
                frontier = [
                    node[step]
                    for node in frontier
                    if (type(node) is dict or isinstance(node, dict)) and step in node
                ]
        self.frontier = frontier
        kinds = set(map(type, frontier))
        flat = not kinds or kinds == _STR  # one text per place (the usual case)
        texts: list[str] = frontier if flat else [node for node in frontier if type(node) is str]
        if not flat:
            texts = []
            flat = True
            for node in frontier:
                kind = type(node)
                if kind is str:
                    texts.append(node)
                elif kind is int:
                    texts.append(str(node))
                else:
                    flat = False
                    if kind in _LISTS:  # a field holding a list of values
                        texts += [_text(item) for item in node if _scalar(item)]
        self.texts = texts
        self.flat = flat

    @property
    def parents(self) -> list[list[int]]:
        """Per step, the index of each node's parent in the level above."""
        made = self._parents
        if made is None:
            made = self._parents = []
            frontier: list[Any] = [self._value]
            for step in self.steps:
                nodes: list[Any] = []
                parents: list[int] = []
                if step is None:
                    for p, node in enumerate(frontier):
                        if type(node) in _LISTS:
                            nodes += node
                            parents += [p] * len(node)
                else:
                    for p, node in enumerate(frontier):
                        if isinstance(node, dict) and step in node:
                            nodes.append(node[step])
                            parents.append(p)
                made.append(parents)
                frontier = nodes
        return made

    def path(self, n: int) -> str:
        """The JSON path of the ``n``-th text."""
        place: list[str | int] = []
        # one text per place (flat): the n-th text is at the n-th place
        at = n if self.flat else self._place(n, place)
        for step, parents in zip(reversed(self.steps), reversed(self.parents), strict=True):
            parent = parents[at]
            place.append(step if step is not None else at - bisect.bisect_left(parents, parent))
            at = parent
        return "$" + "".join(
            f"[{key}]" if type(key) is int else f".{key}" for key in reversed(place)
        )

    def _place(self, n: int, place: list[str | int]) -> int:
        count = 0
        at = -1
        for index, node in enumerate(self.frontier):
            kind = type(node)
            if kind is str or kind is int:
                if count == n:
                    at = index
                    break
                count += 1
            elif kind in _LISTS:
                for item_index, item in enumerate(node):
                    if _scalar(item):
                        if count == n:
                            at = index
                            place.append(item_index)
                            break
                        count += 1
                if at >= 0:
                    break
        return at


_LISTS: Final = (list, tuple)
_DICT: Final = {dict}
_STR: Final = {str}
_ABSENT: Final = object()


def _scalar(item: object) -> bool:
    kind = type(item)
    return kind is str or kind is int


def _text(item: object) -> str:
    return item if type(item) is str else str(item)
