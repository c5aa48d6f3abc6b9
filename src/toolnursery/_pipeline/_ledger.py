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
from ._matching import Date, Haystack, dates_in, identifiers_in, needles, same_date

__all__ = ["ProvenanceLedger", "Seen"]


class Seen:
    """One committed result as the ledger keeps it; its texts are read on first use."""

    __slots__ = ("_fields", "_records", "batch", "call_id", "record_paths", "result", "tool")

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
        self._fields: list[tuple[str, str, Haystack | None]] | None = None
        self._records: list[tuple[str, str]] | None = None

    def fields(self) -> list[tuple[str, str, Haystack | None]]:
        """Every text of the result: ``(JSON path, text, its haystack once built)``."""
        fields = self._fields
        if fields is None:
            value = self.result.value
            if value is None:
                fields = [("$", self.result.text, None)]
            else:
                fields = [(path, text, None) for path, text in _leaves(value, "$")]
            self._fields = fields
        return fields

    def haystack(self, index: int) -> Haystack:
        """The haystack of field ``index`` (built once)."""
        fields = self.fields()
        path, text, haystack = fields[index]
        if haystack is None:
            haystack = Haystack(text, loose=True)
            fields[index] = (path, text, haystack)
        return haystack

    def records(self) -> list[tuple[str, str]]:
        """The declared record fields of the result: ``(JSON path, text)``."""
        records = self._records
        if records is None:
            records = []
            value = self.result.value if self.record_paths else None
            if value is not None:
                for declared in self.record_paths:
                    steps = record_steps(declared)
                    if steps is not None:
                        records.extend(_at(value, steps, "$"))
            self._records = records
        return records


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


def _at(value: Any, steps: tuple[str | None, ...], path: str) -> Iterator[tuple[str, str]]:
    if not steps:
        if isinstance(value, list | tuple):
            for i, item in enumerate(value):  # a field holding a list of values
                if isinstance(item, str | int) and not isinstance(item, bool):
                    yield f"{path}[{i}]", str(item)
        elif isinstance(value, str | int) and not isinstance(value, bool):
            yield path, str(value)
        return
    step, rest = steps[0], steps[1:]
    if step is None:
        if isinstance(value, list | tuple):
            for i, item in enumerate(value):
                yield from _at(item, rest, f"{path}[{i}]")
    elif isinstance(value, dict) and step in value:
        yield from _at(value[step], rest, f"{path}.{step}")


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
        self._trusted: list[Haystack] = []
        self._trusted_dates: set[Date] = set()
        self._own: dict[str, str] = {}
        self._seen: list[Seen] = []
        self._declared: dict[str, tuple[str, ...]] = {}
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
            self._trusted.append(Haystack(text))
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
            for needle in needles(value, Sink.PARTY) + needles(value, Sink.URL):
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
        self._seen.append(Seen(execution.name, execution.call_id, execution.signal, result, paths))

    def asks_for(self, words: Iterable[str]) -> bool:
        """Whether trusted text uses one of ``words`` (case-insensitive, as the start of a
        word: ``delete`` matches "Delete", "deleting")."""
        for word in words:
            pattern = re.compile(r"\b" + r"\s+".join(map(re.escape, word.casefold().split())))
            if any(pattern.search(h.text.casefold()) for h in self._trusted):
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
        wanted = needles(value, kind)
        finding = ProvenanceFinding(argument, value, kind, Origin.UNSEEN)
        if not wanted:
            return finding
        own = next((self._own[n] for n in wanted if n in self._own), None)
        if own is not None:
            return ProvenanceFinding(argument, value, kind, Origin.OWN)
        dates = dates_in(value) if kind is Sink.DATE else set()
        if any(h.find(n) for h in self._trusted for n in wanted) or (
            dates and same_date(dates, self._trusted_dates)
        ):
            return ProvenanceFinding(argument, value, kind, Origin.REQUEST)
        batch = None if execution is None else execution.signal
        visible = [seen for seen in reversed(self._seen) if seen.batch is not batch]
        wanted_set = set(wanted)
        for seen in visible:
            for path, text in seen.records():
                if wanted_set.intersection(needles(text, kind)):
                    return ProvenanceFinding(
                        argument, value, kind, Origin.RECORD, seen.tool, seen.call_id, path
                    )
        for seen in visible:
            for index, (path, text, _) in enumerate(seen.fields()):
                haystack = seen.haystack(index)
                if any(haystack.find(n) for n in wanted) or (
                    dates and same_date(dates, dates_in(text))
                ):
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
