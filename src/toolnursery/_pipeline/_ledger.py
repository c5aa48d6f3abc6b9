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

import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

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
    needles,
    same_date,
    same_identifier,
    skeletons,
)

__all__ = ["ProvenanceLedger", "Seen"]

_UNREAD: Any = object()


class Seen:
    """One committed result as the ledger keeps it; indexed on first use."""

    __slots__ = (
        "_decoded",
        "_exact",
        "_folded",
        "_haystack",
        "_paths",
        "_records",
        "batch",
        "call_id",
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
    ) -> None:
        self.tool = tool
        self.call_id = call_id
        self.batch = batch
        self.result = result
        self.record_paths = record_paths
        self._haystack: Haystack | None = None
        self._paths: list[str] = []
        self._decoded: Any = _UNREAD
        self._exact: dict[str, str] | None = None
        self._folded: str | None = None
        self._records: dict[str, str] | None = None

    def _value(self) -> Any:
        value = self._decoded
        if value is _UNREAD:
            value = self._decoded = self.result.value
        return value

    def _fields(self) -> Haystack:
        value = self._value()
        fields = [("$", self.result.text)] if value is None else list(_leaves(value, "$"))
        self._paths = [path for path, _ in fields]
        haystack = self._haystack = Haystack([text for _, text in fields])
        return haystack

    def _written(self) -> str:
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

    def _exact_records(self) -> dict[str, str]:
        exact = self._exact
        if exact is None:
            exact = self._exact = {}
            if (whole := self._value()) is not None:
                for declared in self.record_paths:
                    steps = record_steps(declared)
                    for at, text in () if steps is None else _at(whole, steps, "$"):
                        exact.setdefault(text.casefold(), at)
        return exact

    def verbatim(self, value: str) -> str | None:
        """The path of a declared record field whose text is ``value`` (ignoring case)."""
        if not self.record_paths or fold(value) not in self._written():
            return None
        return self._exact_records().get(value.casefold())

    def record(self, value: str, wanted: tuple[str, ...]) -> str | None:
        """The path of a declared record field that writes the identifier ``value`` is
        (found by its skeletons ``wanted``, equal by :func:`same_identifier`)."""
        if not self.record_paths:
            return None
        exact = self._exact_records()
        if not exact:
            return None
        records = self._records
        if records is None:
            records = self._records = skeletons(exact)
        for needle in wanted:
            text = records.get(needle)
            if text is not None and same_identifier(value, text):
                return exact[text]
        return None

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


def _at(value: Any, steps: tuple[str | None, ...], path: str) -> list[tuple[str, str]]:
    """The texts at a record path's places in ``value``: ``(JSON path, text)``."""
    frontier: list[tuple[Any, str]] = [(value, path)]
    for step in steps:
        following: list[tuple[Any, str]] = []
        for node, at in frontier:
            kind = type(node)
            if step is None:
                if kind is list or kind is tuple:
                    following += [(item, f"{at}[{i}]") for i, item in enumerate(node)]
            elif isinstance(node, dict):
                item = node.get(step, _UNREAD)
                if item is not _UNREAD:
                    following.append((item, f"{at}.{step}"))
        frontier = following
    found: list[tuple[str, str]] = []
    for node, at in frontier:
        kind = type(node)
        if kind is str:
            found.append((at, node))
        elif kind is list or kind is tuple:  # a field holding a list of values
            found += [(f"{at}[{i}]", _text(item)) for i, item in enumerate(node) if _scalar(item)]
        elif kind is int:
            found.append((at, str(node)))
    return found


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
        self._declared: dict[str, tuple[str, ...]] = {}
        # answers of origin() since the ledger last changed: (value, kind, argument, batch)
        self._answers: dict[tuple[str, Sink, str, int], tuple[object, ProvenanceFinding]] = {}
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
        self._declared[tool] = (*self._declared.get(tool, ()), *paths)

    # -- what the pipeline tells it -----------------------------------------------------

    def observe(self, execution: ToolExecution, result: ToolExecutionResult) -> None:
        """Keep one committed result (the ledger's result observer; a host that runs
        calls outside the pipeline may feed it the same way)."""
        definition = self._definition(execution)
        paths = () if definition is None else definition.records
        extra = self._declared.get(execution.name)
        if extra:
            paths = (*paths, *extra)
        self._answers.clear()
        self._seen.append(Seen(execution.name, execution.call_id, execution.signal, result, paths))

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
        kind = sink_kind(kind)
        batch = None if execution is None else execution.signal
        key = (value, kind, argument, id(batch))
        known = self._answers.get(key)
        if known is not None and known[0] is batch:
            return known[1]
        finding = self._origin(value, kind, batch, argument)
        if len(self._answers) > 4096:
            self._answers.clear()
        self._answers[key] = (batch, finding)
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
        if any(same_identifier(value, span) for n in wanted for span in trusted.spans(n)) or (
            dates and same_date(dates, self._trusted_dates)
        ):
            return ProvenanceFinding(argument, value, kind, Origin.REQUEST)
        visible = [seen for seen in reversed(self._seen) if seen.batch is not batch]
        for seen in visible:  # a copy of a record field, verbatim: the usual case, and cheap
            path = seen.verbatim(value)
            if path is not None:
                return ProvenanceFinding(
                    argument, value, kind, Origin.RECORD, seen.tool, seen.call_id, path
                )
        for seen in visible:
            path = seen.record(value, wanted)
            if path is not None:
                return ProvenanceFinding(
                    argument, value, kind, Origin.RECORD, seen.tool, seen.call_id, path
                )
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
            for place, text in _leaves(arguments[argument], argument):
                if each is Sink.CONTENT:
                    for identifier, like in identifiers_in(text):
                        one = self.origin(identifier, like, execution=execution, argument=place)
                        found.append(_as(one, Sink.CONTENT))
                elif each is not Sink.INTENT or text:
                    found.append(self.origin(text, each, execution=execution, argument=place))
        return tuple(found)


def _as(finding: ProvenanceFinding, kind: Sink) -> ProvenanceFinding:
    return msgspec.structs.replace(finding, kind=kind)
