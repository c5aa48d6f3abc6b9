"""The provenance ledger of an agent run: what the model was told and what it read.

A :class:`ProvenanceLedger` belongs to a scope (``scope.provenance``). From the moment it
is made it observes every committed result of the scope's calls (and of scopes nested in
it) and keeps, per result, the tool, the call id, the batch it ran in and the result's
JSON value (or its text); the host adds the text it trusts (:meth:`~ProvenanceLedger.trust`,
the user's messages) and the user's own identifiers (:meth:`~ProvenanceLedger.own`).

Asked about a value (:meth:`~ProvenanceLedger.origin`), the ledger says where it was seen,
in this order: one of the user's own identifiers; in trusted text; the whole value of a
record field one of the results' tools declares (``records=``); inside any other text of
a result; nowhere. A call sees only results of earlier batches: results of the calls of
its own batch were not in front of the model when it wrote the call.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Final

import msgspec

from .._core._content import ToolExecutionResult
from .._core._execution import ToolExecution
from .._core._provenance import Origin, ProvenanceFinding, Sink, record_steps, sink_kind
from .._tools._definition import ToolDefinition
from .._tools._sinks import sinks_of
from ._matching import (
    Date,
    Haystack,
    dates_in,
    fold,
    identifiers_in,
    is_address,
    needles,
    same_date,
    same_identifier,
    skeletons,
)

__all__ = ["ProvenanceLedger", "Seen"]

_UNREAD: Any = object()
_NONE: tuple[Any, ...] = ()


class Seen:
    """One committed result as the ledger keeps it; its text is indexed on first use."""

    __slots__ = (
        "_folded",
        "_haystack",
        "_paths",
        "_walks",
        "batch",
        "call_id",
        "index",
        "record_paths",
        "result",
        "tool",
    )

    def __init__(
        self,
        tool: str,
        call_id: str,
        batch: object,
        result: ToolExecutionResult,
        record_paths: tuple[str, ...],
        index: int,
    ) -> None:
        self.tool = tool
        self.call_id = call_id
        self.batch = batch
        self.result = result
        self.record_paths = record_paths
        self.index = index  # its place in the ledger: a later result has a larger one
        self._haystack: Haystack | None = None
        self._paths: list[str] = []
        self._folded: str | None = None
        self._walks: list[_Walk] = []

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
        fields = [("$", self.result.text)] if value is None else list(_leaves(value, "$"))
        self._paths = [path for path, _ in fields]
        haystack = self._haystack = Haystack([text for _, text in fields])
        return haystack

    def records(self) -> dict[str, Ref]:
        """``{text, case-folded: where}`` of the declared record fields (the first place
        of a text written twice); :meth:`path` names a place."""
        exact: dict[str, Ref] = {}
        walks = self._walks = []
        if self.record_paths and (whole := self.result.value) is not None:
            for path in self.record_paths:
                steps = record_steps(path)
                if steps is not None:
                    walk = _Walk(whole, steps)
                    declared = len(walks)
                    walks.append(walk)
                    for n, text in enumerate(walk.texts):
                        exact.setdefault(text.casefold(), (declared, n))
        return exact

    def path(self, ref: Ref) -> str:
        """The JSON path of a place :meth:`records` gave."""
        return self._walks[ref[0]].path(ref[1])

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


def _leaves(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, f"{path}.{key}")
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from _leaves(item, f"{path}[{i}]")
    elif isinstance(value, int) and not isinstance(value, bool):
        yield path, str(value)


Ref = tuple[int, int]
"""A record field of a result: its declared record path's index, and the field's ordinal
among that path's texts."""


class _Walk:
    """The texts at one record path's places in a value, and what names each place.

    Each level keeps, per node, the index of its parent in the level above (a list's
    items sit together, in order: an item's index is its distance from the first item
    of its parent), so a text's JSON path is rebuilt only when a finding names it.
    """

    __slots__ = ("frontier", "parents", "steps", "texts")

    def __init__(self, value: Any, steps: tuple[str | None, ...]) -> None:
        self.steps = steps
        self.parents: list[list[int]] = []
        frontier: list[Any] = [value]
        for step in steps:
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
            self.parents.append(parents)
            frontier = nodes
        self.frontier = frontier
        texts: list[str] = []
        for node in frontier:
            kind = type(node)
            if kind is str:
                texts.append(node)
            elif kind in _LISTS:  # a field holding a list of values
                texts += [_text(item) for item in node if _scalar(item)]
            elif kind is int:
                texts.append(str(node))
        self.texts = texts

    def path(self, n: int) -> str:
        """The JSON path of the ``n``-th text."""
        place: list[str | int] = []
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
        for step, parents in zip(reversed(self.steps), reversed(self.parents), strict=True):
            parent = parents[at]
            place.append(step if step is not None else at - bisect.bisect_left(parents, parent))
            at = parent
        return "$" + "".join(
            f"[{key}]" if type(key) is int else f".{key}" for key in reversed(place)
        )


_LISTS: Final = (list, tuple)


def _scalar(item: object) -> bool:
    kind = type(item)
    return kind is str or kind is int


def _text(item: object) -> str:
    return item if type(item) is str else str(item)


class ProvenanceLedger:
    """Where the values of an agent run came from: its trusted text, the user's own
    identifiers, and every result the run's calls committed.

    Get a scope's ledger as ``scope.provenance``: it records from the moment it is
    first read, so read it when the agent run starts (the provenance guard does).
    A hook or guard asks about one argument of a call with
    ``execution.provenance("to")``, or about any value with :meth:`origin`.
    """

    def __init__(
        self,
        on_result: Callable[[Callable[[ToolExecution, ToolExecutionResult], None]], object],
        definition: Callable[[ToolExecution], ToolDefinition | None],
    ) -> None:
        self._definition = definition
        self._trusted: list[str] = []
        self._trusted_haystack: Haystack | None = None
        self._trusted_dates: set[Date] = set()
        self._own: dict[str, str] = {}
        self._seen: list[Seen] = []
        # The declared record fields of the results, indexed when first needed, across
        # results (dict lookups, not a scan per result): by the field's text, case-folded
        # (a result's records are read once a value asked about is written in its text),
        # then by each field's skeletons (once a value is not a verbatim copy). Entries
        # are (result, JSON path[, text]), one per result and key.
        self._unread: list[Seen] = []
        self._unsplit: list[tuple[Seen, dict[str, Ref]]] = []
        self._exact: dict[str, tuple[Seen, Ref]] = {}  # the first result indexed with it
        self._exact_more: dict[str, list[tuple[Seen, Ref]]] = {}  # the others
        self._skeletons: dict[str, list[tuple[Seen, Ref, str]]] = {}
        self._records_of: dict[int, tuple[object, tuple[str, ...]]] = {}
        self._declared: dict[str, tuple[str, ...]] = {}
        # origin()'s answers for the calls of one batch, by (value, kind): results of
        # that batch do not change them (its calls do not see them); anything else does
        self._answers: dict[tuple[str, Sink], ProvenanceFinding] = {}
        self._answers_for: object = _UNREAD
        on_result(self.observe)

    # -- what the host tells it ---------------------------------------------------------

    def trust(self, *texts: str) -> None:
        """Add text the host trusts: the user's messages, a system prompt, a form the
        user filled in. A sink value found in it has the origin ``request``.

        Raises:
            TypeError: a text is not a str.
        """
        for text in texts:
            if not isinstance(text, str):
                raise TypeError(f"trust() takes text (str), not {type(text).__name__}")
            self._answers.clear()
            self._trusted.append(text)
            self._trusted_haystack = None
            self._trusted_dates |= dates_in(text)

    def own(self, *values: str) -> None:
        """Add the user's own identifiers (their email, account number, phone): a sink
        value equal to one has the origin ``own``.

        Raises:
            TypeError: a value is not a str.
        """
        for value in values:
            if not isinstance(value, str):
                raise TypeError(f"own() takes identifiers (str), not {type(value).__name__}")
            self._answers.clear()
            for needle in needles(value, Sink.PARTY):
                self._own.setdefault(needle, value)

    def declare_records(self, tool: str, *paths: str) -> None:
        """Declare record fields of ``tool``'s results here, for a tool whose definition
        cannot carry ``records=`` (a mounted MCP tool); adds to what it declares.

        Raises:
            ValueError: a path is not a record path (``contacts[].email``).
        """
        for path in paths:
            if not isinstance(path, str) or record_steps(path) is None:
                raise ValueError(f"{path!r} is not a record path (like contacts[].email)")
        self._answers.clear()
        self._records_of.clear()
        self._declared[tool] = (*self._declared.get(tool, ()), *paths)

    # -- what the pipeline tells it -----------------------------------------------------

    def observe(self, execution: ToolExecution, result: ToolExecutionResult) -> None:
        """Keep one committed result (the ledger's result observer; a host that runs
        calls outside the pipeline may feed it the same way)."""
        definition = self._definition(execution)
        known = self._records_of.get(id(definition))
        if known is not None and known[0] is definition:
            paths = known[1]
        else:
            paths = () if definition is None else definition.records
            extra = self._declared.get(execution.name)
            if extra:
                paths = (*paths, *extra)
            if definition is not None:
                if len(self._records_of) > 256:
                    self._records_of.clear()
                self._records_of[id(definition)] = (definition, paths)
        if execution.signal is not self._answers_for:
            self._answers.clear()
        seen = Seen(
            execution.name, execution.call_id, execution.signal, result, paths, len(self._seen)
        )
        self._seen.append(seen)
        if paths and not result.is_error:
            self._unread.append(seen)

    def _read(self, batch: object, written: str | None) -> None:
        """Index the records of the unread results a call of ``batch`` may see (with
        ``written``: only those whose text holds it)."""
        waiting: list[Seen] = []
        index = self._exact
        for seen in self._unread:
            if seen.batch is batch or (written is not None and written not in seen.written()):
                waiting.append(seen)
                continue
            exact = seen.records()
            entries = {text: (seen, ref) for text, ref in exact.items()}
            for text in entries.keys() & index.keys():
                self._exact_more.setdefault(text, []).append(entries.pop(text))
            index.update(entries)
            self._unsplit.append((seen, exact))
        self._unread = waiting

    def _split(self, batch: object) -> None:
        """Index by skeleton the read records a call of ``batch`` may see."""
        self._read(batch, None)
        waiting: list[tuple[Seen, dict[str, Ref]]] = []
        index = self._skeletons
        for seen, exact in self._unsplit:
            if seen.batch is batch:
                waiting.append((seen, exact))
                continue
            for needle, text in skeletons(exact).items():
                index.setdefault(needle, []).append((seen, exact[text], text))
        self._unsplit = waiting

    def asks_for(self, words: Iterable[str]) -> bool:
        """Whether trusted text uses one of ``words`` (case-insensitive, as the start of a
        word: ``delete`` matches "Delete", "deleting")."""
        for word in words:
            pattern = re.compile(r"\b" + r"\s+".join(map(re.escape, word.casefold().split())))
            if any(pattern.search(text.casefold()) for text in self._trusted):
                return True
        return False

    @property
    def results(self) -> int:
        """How many results the ledger holds."""
        return len(self._seen)

    # -- what hooks ask -----------------------------------------------------------------

    def origin(
        self,
        value: str,
        kind: Sink = Sink.PARTY,
        *,
        execution: ToolExecution | None = None,
        argument: str = "",
    ) -> ProvenanceFinding:
        """Where ``value`` was seen, as a finding (its ``reason`` is ``None``).

        Args:
            value: the value, as the call passes it.
            kind: how to compare it (links drop their scheme; dates compare as dates).
            execution: the call asking: only results of earlier batches count (the
                model had not read its own batch's); ``None``: every result counts.
            argument: the argument's name, for the finding.
        """
        if type(kind) is not Sink:
            kind = sink_kind(kind)
        batch = None if execution is None else execution.signal
        answers = self._answers
        if batch is not self._answers_for:
            answers.clear()
            self._answers_for = batch
        known = answers.get((value, kind))
        if known is not None:
            return known if known.argument == argument else _named(known, argument)
        finding = self._origin(value, kind, batch, argument)
        if len(answers) > 4096:
            answers.clear()
        answers[value, kind] = finding
        return finding

    def _origin(self, value: str, kind: Sink, batch: object, argument: str) -> ProvenanceFinding:
        wanted = needles(value, kind)
        finding = ProvenanceFinding(argument, value, kind, Origin.UNSEEN)
        if not wanted:
            return finding
        own = next((self._own[n] for n in wanted if n in self._own), None)
        if own is not None and same_identifier(value, own):
            return ProvenanceFinding(argument, value, kind, Origin.OWN)
        dates = dates_in(value) if kind is Sink.DATE else set()
        trusted = self._trusted_haystack
        if trusted is None:
            trusted = self._trusted_haystack = Haystack(self._trusted)
        whole = is_address(value)
        if any(
            same_identifier(value, span) for n in wanted for span in trusted.spans(n, whole=whole)
        ) or (dates and same_date(dates, self._trusted_dates)):
            return ProvenanceFinding(argument, value, kind, Origin.REQUEST)
        if self._unread:
            self._read(batch, fold(value))
        verbatim: tuple[Seen, Ref] | None = None
        key = value.casefold()
        first = self._exact.get(key)
        for seen, place in () if first is None else (first, *self._exact_more.get(key, ())):
            if seen.batch is not batch and (verbatim is None or seen.index > verbatim[0].index):
                verbatim = (seen, place)
        if verbatim is not None:  # a copy of a record field, verbatim: the usual case
            seen, place = verbatim
            return ProvenanceFinding(
                argument, value, kind, Origin.RECORD, seen.tool, seen.call_id, seen.path(place)
            )
        if self._unread or self._unsplit:
            self._split(batch)
        best: tuple[Seen, Ref] | None = None
        for needle in wanted:  # the latest result; at one result, the first needle
            for seen, place, text in self._skeletons.get(needle, _NONE):
                if best is not None and seen.index <= best[0].index:
                    continue
                if seen.batch is not batch and same_identifier(value, text):
                    best = (seen, place)
        if best is not None:
            seen, place = best
            return ProvenanceFinding(
                argument, value, kind, Origin.RECORD, seen.tool, seen.call_id, seen.path(place)
            )
        visible = [seen for seen in reversed(self._seen) if seen.batch is not batch]
        for seen in visible:
            path = seen.fragment(wanted, dates)
            if path is not None:
                return ProvenanceFinding(
                    argument, value, kind, Origin.FRAGMENT, seen.tool, seen.call_id, path
                )
        return finding

    def explain(
        self, execution: ToolExecution, argument: str, kind: Sink | None = None
    ) -> tuple[ProvenanceFinding, ...]:
        """The provenance of every value of one argument of ``execution``.

        Each text (and integer) inside the argument is one finding, named by its place
        (``to``, ``to[1]``); a ``content`` argument gives one finding per identifier
        inside its text (emails, links, account and phone numbers). ``kind`` defaults to
        the argument's declared sink kinds (``party`` when it declares none).

        Raises:
            KeyError: the call has no such argument.
        """
        arguments = execution.arguments
        if not isinstance(arguments, dict) or argument not in arguments:
            raise KeyError(f'the call of "{execution.name}" has no argument "{argument}"')
        if kind is not None:
            kinds: tuple[Sink, ...] = (sink_kind(kind),)
        else:
            declared = sinks_of(self._definition(execution)).get(argument, ())
            kinds = declared or (Sink.PARTY,)
        found: list[ProvenanceFinding] = []
        for each in kinds:
            value = arguments[argument]
            leaves = ((argument, value),) if type(value) is str else _leaves(value, argument)
            for place, text in leaves:
                if each is Sink.CONTENT:
                    for identifier, like in identifiers_in(text):
                        one = self.origin(identifier, like, execution=execution, argument=place)
                        found.append(_as(one, Sink.CONTENT))
                elif each is not Sink.INTENT or text:
                    found.append(self.origin(text, each, execution=execution, argument=place))
        return tuple(found)


def _named(finding: ProvenanceFinding, argument: str) -> ProvenanceFinding:
    return msgspec.structs.replace(finding, argument=argument)


def _as(finding: ProvenanceFinding, kind: Sink) -> ProvenanceFinding:
    return msgspec.structs.replace(finding, kind=kind)
