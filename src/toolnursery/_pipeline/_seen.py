"""One committed result as the provenance ledger keeps it, and what reads its declared
record fields: a decoder typed to hold only those fields, else the walk of its JSON value
(which also names the JSON path of each)."""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from itertools import repeat
from operator import attrgetter
from typing import Any, Final

import msgspec

from .._core._content import TextContent, ToolExecutionResult
from ._matching import Date, Haystack, dates_in, same_date

__all__ = ["Seen", "Walk", "leaves", "record_texts"]

Steps = tuple[tuple[str | None, ...], ...]


class Seen:
    """One committed result as the ledger keeps it; its text is indexed on first use."""

    __slots__ = (
        "_folded_walks",
        "_haystack",
        "_paths",
        "_texts",
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
        # (empty tuples until made: a result that is never asked about makes no list)
        self._paths: Sequence[str] = ()
        self._texts: Sequence[list[str]] = ()  # per declared path, its fields' texts
        self._walks: list[Walk] | None = None  # made when a path is first named
        self._folded_walks: Sequence[list[str]] = ()

    def _fields(self) -> Haystack:
        value = self.result.value
        fields = [("$", self.result.text)] if value is None else list(leaves(value, "$"))
        self._paths = [path for path, _ in fields]
        haystack = self._haystack = Haystack([text for _, text in fields])
        return haystack

    def records(self) -> list[str]:
        """The declared record fields' texts, case-folded, path by path (a text may come
        twice); :meth:`path_of` names the place of one."""
        steps = self.record_steps
        if not steps:
            return []
        # the usual case: only the declared fields read out of the text (record_texts)
        found = record_texts(self.result, steps)
        if found is None:  # another shape, or not JSON text: its value, walked
            whole = self.result.value
            if whole is None:
                return []
            walks = self._walks = [Walk(whole, each) for each in steps]
            found = [walk.texts for walk in walks]
        self._texts = found
        keys: list[str] = []
        for texts in found:
            joined = "".join(texts)
            if joined.isascii() and joined.lower() == joined:  # no capital: its own fold
                keys += texts
            else:
                keys += map(str.casefold, texts)
        return keys

    def path_of(self, text: str) -> str:
        """The JSON path of the first record field whose case-folded text is ``text``
        (one :meth:`records` gave)."""
        folded = self._folded_walks
        if len(folded) < len(self._texts):  # made when a finding first names a field
            folded = self._folded_walks = [
                *folded,
                *(list(map(str.casefold, texts)) for texts in self._texts[len(folded) :]),
            ]
        for declared, texts in enumerate(folded):
            if text in texts:
                walks = self._walks
                if walks is None:  # read by record_texts: the same texts, in order
                    walks = self._walks = [Walk(self.result.value, s) for s in self.record_steps]
                return walks[declared].path(texts.index(text))
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


def record_texts(result: ToolExecutionResult, paths: Steps) -> list[list[str]] | None:
    """Per record path, the texts :class:`Walk` finds at its places in the JSON value of
    ``result``'s text, decoded with a type that holds only the declared fields (the
    rest of the text is skipped, not built); ``None`` when it cannot say (structured
    content, not JSON text, another shape than the paths say: walk the value)."""
    reader = _readers.get(paths, _UNREAD)
    if reader is _UNREAD:
        if len(_readers) > 1024:
            _readers.clear()
        reader = _readers[paths] = _reader(paths)
    if reader is None or result.structured_content is not None:
        return None
    content = result.content
    if len(content) != 1 or type(content[0]) is not TextContent:
        return None
    text = content[0].text
    if text[:1] not in _OPENERS:
        return None
    decoder, attributes = reader
    try:
        root = decoder.decode(text)
    except msgspec.DecodeError:  # not JSON, or not the shape: the value decides
        return None
    found: list[list[str]] = []
    for names in attributes:
        frontier: list[Any] = [root]
        for name in names:
            if name is None:
                frontier = (
                    list(frontier[0]) if len(frontier) == 1 else [i for n in frontier for i in n]
                )
            else:
                got = list(map(attrgetter(name), frontier))
                frontier = got if _MISSING not in got else [v for v in got if v is not _MISSING]
        found.append(_texts(frontier)[0])
    return found


_OPENERS: Final = ("{", "[")
_UNREAD: Final[Any] = object()
_END: Final[Any] = object()
_MISSING: Final[Any] = object()  # a declared field an object lacks (a plain object: `in` is quick)
_readers: dict[Steps, tuple[msgspec.json.Decoder[Any], list[tuple[str | None, ...]]] | None] = {}


def _reader(
    paths: Steps,
) -> tuple[msgspec.json.Decoder[Any], list[tuple[str | None, ...]]] | None:
    """A decoder of the declared fields of ``paths`` and, per path, the attributes its
    steps read (``None``: a list's items); ``None`` when two paths disagree on a
    place's shape (a list in one, an object or a whole value in another)."""
    tree: dict[Any, Any] = {}
    for steps in paths:
        node = tree
        for step in steps:
            if _END in node:
                return None
            node = node.setdefault(step, {})
        if len(node) > (_END in node):
            return None
        node[_END] = True
    named: dict[int, dict[str, str]] = {}

    def typed(node: dict[Any, Any]) -> Any:
        if _END in node:
            return Any
        if None in node:
            if len(node) > 1:
                return None
            inner = typed(node[None])
            return None if inner is None else list[inner]  # type: ignore[valid-type]
        fields = []
        names = named[id(node)] = {}
        for n, (key, child) in enumerate(node.items()):
            inner = typed(child)
            if inner is None:
                return None
            names[key] = f"f{n}"
            fields.append((f"f{n}", inner, _MISSING))
        return msgspec.defstruct(
            "Records", fields, rename={f: k for k, f in names.items()}, gc=False
        )

    root = typed(tree)
    if root is None:
        return None
    attributes = []
    for steps in paths:
        node = tree
        read: list[str | None] = []
        for step in steps:
            read.append(None if step is None else named[id(node)][step])
            node = node[step]
        attributes.append(tuple(read))
    return msgspec.json.Decoder(root), attributes


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
        self.texts, self.flat = _texts(frontier)

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


def _texts(frontier: list[Any]) -> tuple[list[str], bool]:
    """The texts at a path's places, and whether each place is one text (flat)."""
    kinds = set(map(type, frontier))
    if not kinds or kinds == _STR:  # one text per place (the usual case)
        return frontier, True
    texts: list[str] = []
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
    return texts, flat


_LISTS: Final = (list, tuple)
_DICT: Final = {dict}
_STR: Final = {str}
_ABSENT: Final = object()


def _scalar(item: object) -> bool:
    kind = type(item)
    return kind is str or kind is int


def _text(item: object) -> str:
    return item if type(item) is str else str(item)
