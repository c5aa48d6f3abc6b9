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
import threading
from collections.abc import Callable, Iterable
from itertools import repeat
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
    needles,
    plain_address,
    prepared,
    same_date,
    same_identifier,
    skeletons,
)
from ._named import pointed_at, request_words
from ._seen import Seen, leaves

__all__ = ["ProvenanceLedger"]

_UNREAD: Any = object()
_APART: Final = "\x00"
# the answers the named check gave (for a party or link): they hold for the asking
# call's tool and argument only, so they are not kept for the batch's other calls
_BY_CALL: Final = frozenset({Origin.NAMED, Origin.FRAGMENT})
_NO_TEXTS: Final[dict[str, tuple[Any, Any]]] = {}


class ProvenanceLedger:
    """Where the values of an agent run came from: its trusted text, the user's own
    identifiers, and every result the run's calls committed.

    Get a scope's ledger as ``scope.provenance``: it records from the moment it is
    first read, so read it when the agent run starts (the provenance guard does).
    A hook or guard asks about one argument of a call with
    ``execution.provenance("to")``, or about any value with :meth:`origin`.

    It keeps at most :attr:`max_results` results (default 5000, per run): past that the
    oldest tenth is dropped at once and counted in :attr:`dropped`. A value seen only
    in a dropped result is then "unseen" (asked about, never trusted): dropping can
    cost a question, never let a value through.
    """

    DEFAULT_MAX_RESULTS: Final = 5000
    """:attr:`max_results` of a new ledger."""

    def __init__(
        self,
        on_result: Callable[[Callable[[ToolExecution, ToolExecutionResult], None]], object],
        definition: Callable[[ToolExecution], ToolDefinition | None],
    ) -> None:
        self._definition = definition
        self._lock = threading.RLock()  # one at a time: calls may run in threads
        self._trusted: list[str] = []
        self._trusted_haystack: Haystack | None = None
        self._trusted_dates: set[Date] = set()
        self._request: tuple[str, frozenset[str]] | None = None  # folded, and its words
        self._action_words: dict[str, tuple[str, ...]] = {}  # declare_actions()
        self._own: dict[str, str] = {}
        self._seen: list[Seen] = []
        self._count = 0  # results observed, dropped ones included
        self._max = self.DEFAULT_MAX_RESULTS
        self.dropped: int = 0
        """How many of the oldest results were dropped to keep :attr:`max_results`."""
        # answers no result can change (the request, the user's own): across batches
        self._stable: dict[tuple[str, Sink], ProvenanceFinding] = {}
        # The declared record fields of the results, indexed when first needed, across
        # results (dict lookups, not a scan per result): by the field's text, case-folded
        # (the results a call may see are read at the first question after they
        # commit), then by each field's skeletons (once a value is not a verbatim copy). A key
        # keeps two results (what every question needs): the latest that holds it, and
        # the latest of a batch other than that one's. Reading the same records again
        # (a contact list read every turn) replaces them: it adds nothing.
        self._unread: list[Seen] = []
        # the batch whose calls have every unread result they may see read: a result
        # of that batch does not change it (its calls do not see it)
        self._read_for: object = _UNREAD
        self._unsplit: list[tuple[Seen, list[str]]] = []
        self._exact: dict[str, Seen] = {}  # the latest result with the text
        self._exact_other: dict[str, Seen] = {}  # the latest of another batch than that
        # by needle, then by the field's text: (the latest result, the latest of another
        # batch than that or None)
        self._skeletons: dict[str, dict[str, tuple[Seen, Seen | None]]] = {}
        self._records_of: dict[int, tuple[object, tuple[tuple[str | None, ...], ...]]] = {}
        self._declared: dict[str, tuple[str, ...]] = {}
        # origin()'s answers for the calls of one batch, by (value, kind): results of
        # that batch do not change them (its calls do not see them); anything else does
        self._answers: dict[tuple[str, Sink], ProvenanceFinding] = {}
        self._answers_for: object = _UNREAD
        self.turns: dict[str, object] = {}
        """Calls of one model turn run as separate batches (smolagents' parallel calls):
        call id → the turn's key, set by a bridge while the call runs. A listed call's
        batch is its turn's key instead of its signal, so its siblings' results are not
        visible to it (nor its to them)."""
        # an answer as a content argument's finding, by the answer (kept: its id is its own)
        self._as_content: dict[int, tuple[ProvenanceFinding, ProvenanceFinding]] = {}
        on_result(self.observe)

    # -- what the host tells it ---------------------------------------------------------

    def trust(self, *texts: str) -> None:
        """Add text the host trusts: the user's messages, a system prompt, a form the
        user filled in. A sink value found in it has the origin ``request``.

        Raises:
            TypeError: a text is not a str.
        """
        with self._lock:
            for text in texts:
                if not isinstance(text, str):
                    raise TypeError(f"trust() takes text (str), not {type(text).__name__}")
                self._answers.clear()
                self._stable.clear()
                self._trusted.append(text)
                self._trusted_haystack = None
                self._request = None
                self._trusted_dates |= dates_in(text)

    def own(self, *values: str) -> None:
        """Add the user's own identifiers (their email, account number, phone): a sink
        value equal to one has the origin ``own``.

        Raises:
            TypeError: a value is not a str.
        """
        with self._lock:
            for value in values:
                if not isinstance(value, str):
                    raise TypeError(f"own() takes identifiers (str), not {type(value).__name__}")
                self._answers.clear()
                self._stable.clear()
                for needle in needles(value, Sink.PARTY):
                    self._own.setdefault(needle, value)

    def declare_records(self, tool: str, *paths: str) -> None:
        """Declare record fields of ``tool``'s results here, for a tool whose definition
        cannot carry ``records=`` (a mounted MCP tool); adds to what it declares.

        Raises:
            ValueError: a path is not a record path (``contacts[].email``).
        """
        with self._lock:
            for path in paths:
                if not isinstance(path, str) or record_steps(path) is None:
                    raise ValueError(f"{path!r} is not a record path (like contacts[].email)")
            self._answers.clear()
            self._records_of.clear()
            self._declared[tool] = (*self._declared.get(tool, ()), *paths)

    def declare_actions(self, tool: str, *words: str) -> None:
        """Set the words a request uses for ``tool``'s action (default: from the verb
        its name starts with: ``send_money`` → send, pay, transfer, …). A value inside
        the text of a source the request names counts as named for this tool only when
        the request uses one of them."""
        with self._lock:
            self._answers.clear()
            self._action_words[tool] = tuple(w.casefold() for w in words if w.strip())

        # -- what the pipeline tells it -----------------------------------------------------

    def observe(self, execution: ToolExecution, result: ToolExecutionResult) -> None:
        """Keep one committed result (the ledger's result observer; a host that runs
        calls outside the pipeline may feed it the same way)."""
        with self._lock:
            definition = self._definition(execution)
            known = self._records_of.get(id(definition))
            if known is not None and known[0] is definition:
                steps = known[1]
            else:  # once per definition (a new one when a tool is registered again)
                steps = self._steps_of(definition, execution.name)
            batch: object = execution.signal
            if self.turns:
                batch = self.turns.get(execution.call_id, batch)
            if batch is not self._answers_for:
                self._answers.clear()
            seen = Seen(
                execution.name,
                execution.call_id,
                batch,
                result,
                steps,
                self._count,
                execution.arguments,
            )
            self._count += 1
            kept = self._seen
            kept.append(seen)
            if len(kept) > self._max:
                self._drop(len(kept) - (self._max - self._max // 10))
            if steps and not result.is_error:  # its records read at the next question
                self._unread.append(seen)
                if batch is not self._read_for:
                    self._read_for = _UNREAD

    def _steps_of(
        self, definition: ToolDefinition | None, name: str
    ) -> tuple[tuple[str | None, ...], ...]:
        """The parsed record paths of a tool's results: its definition's and those
        declared here."""
        paths = () if definition is None else definition.records
        extra = self._declared.get(name)
        if extra:
            paths = (*paths, *extra)
        steps = tuple(step for step in map(record_steps, paths) if step is not None)
        if definition is not None:
            if len(self._records_of) > 256:
                self._records_of.clear()
            self._records_of[id(definition)] = (definition, steps)
        return steps

    def _read(self, batch: object) -> None:
        """Index the records of every unread result a call of ``batch`` may see."""
        waiting: list[Seen] = []
        index = self._exact
        for seen in self._unread:
            if seen.batch is batch:
                waiting.append(seen)
                continue
            exact = seen.records()
            if index.keys().isdisjoint(exact):  # (a dict view's test: no set made)
                index.update(zip(exact, repeat(seen)))
            else:  # records read again (or read before): keep the two that count
                clash = index.keys() & exact
                other = self._exact_other
                for text in clash:
                    now = index[text]
                    if seen.index > now.index:
                        index[text] = seen
                        if now.batch is not seen.batch:
                            other[text] = now
                    elif seen.batch is not now.batch:
                        before = other.get(text)
                        if before is None or seen.index > before.index:
                            other[text] = seen
                index.update((text, seen) for text in exact if text not in clash)
            self._unsplit.append((seen, exact))
        self._unread = waiting
        self._read_for = batch

    def _split(self, batch: object) -> None:
        """Index by skeleton the read records a call of ``batch`` may see."""
        if self._read_for is not batch:
            self._read(batch)
        waiting: list[tuple[Seen, list[str]]] = []
        index = self._skeletons
        for seen, exact in self._unsplit:
            if seen.batch is batch:
                waiting.append((seen, exact))
                continue
            for needle, text in skeletons(exact).items():
                by_text = index.get(needle)
                if by_text is None:
                    index[needle] = {text: (seen, None)}
                else:
                    known = by_text.get(text)
                    by_text[text] = (seen, None) if known is None else _again(known, seen)
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

    @property
    def max_results(self) -> int:
        """The most results the ledger keeps (per run); the oldest go first."""
        return self._max

    @max_results.setter
    def max_results(self, value: int) -> None:
        if type(value) is not int or value < 1:
            raise ValueError(f"max_results must be a positive int, not {value!r}")
        with self._lock:
            self._max = value
            if len(self._seen) > value:
                self._drop(len(self._seen) - (value - value // 10))

    def _drop(self, count: int) -> None:
        """Forget the ``count`` oldest results, and every index entry that names one."""
        count = min(count, len(self._seen))
        if count <= 0:
            return
        self.dropped += count
        self._seen = self._seen[count:]
        floor = self._seen[0].index if self._seen else self._count
        self._unread = [seen for seen in self._unread if seen.index >= floor]
        self._unsplit = [entry for entry in self._unsplit if entry[0].index >= floor]
        # a key's other result is older than its latest: the latest goes first
        exact: dict[str, Seen] = {}
        other: dict[str, Seen] = {}
        for text, latest in self._exact.items():
            if latest.index >= floor:
                exact[text] = latest
                before = self._exact_other.get(text)
                if before is not None and before.index >= floor:
                    other[text] = before
        self._exact, self._exact_other = exact, other
        skeletons: dict[str, dict[str, tuple[Seen, Seen | None]]] = {}
        for needle, by_text in self._skeletons.items():
            kept = {
                text: (latest, None if before is None or before.index < floor else before)
                for text, (latest, before) in by_text.items()
                if latest.index >= floor
            }
            if kept:
                skeletons[needle] = kept
        self._skeletons = skeletons
        self._answers.clear()

    # -- what hooks ask -----------------------------------------------------------------

    def origin(
        self,
        value: str,
        kind: Sink = Sink.PARTY,
        *,
        execution: ToolExecution | None = None,
        argument: str = "",
        inside: bool = False,
    ) -> ProvenanceFinding:
        """Where ``value`` was seen, as a finding (its ``reason`` is ``None``).

        Args:
            value: the value, as the call passes it.
            kind: how to compare it (links drop their scheme; dates compare as dates).
            execution: the call asking: only results of earlier batches count (the
                model had not read its own batch's); ``None``: every result counts.
            argument: the argument's name, for the finding.
            inside: ``value`` is an identifier inside a body of text (a ``content``
                argument): one inside a document's text (a file, a page) is then
                never ``named``; one inside an item's text (a message) may be.
        """
        with self._lock:
            if type(kind) is not Sink:
                kind = sink_kind(kind)
            batch: object = None if execution is None else execution.signal
            if self.turns and execution is not None:
                batch = self.turns.get(execution.call_id, batch)
            answers = self._answers
            if batch is not self._answers_for:
                answers.clear()
                self._answers_for = batch
            known = answers.get((value, kind))
            kept = answers
            if known is None:
                known = self._stable.get((value, kind))
                kept = self._stable
            if known is not None:
                if known.argument != argument:  # kept by this name: the next call asks so too
                    known = kept[value, kind] = _named(known, argument)
                return known
            tool = None if execution is None else execution.name
            finding = self._origin(value, kind, batch, argument, tool, inside)
            if finding.origin in _BY_CALL and (kind is Sink.PARTY or kind is Sink.URL):
                return finding  # for this call's tool and argument only: not kept
            if finding.origin is Origin.REQUEST or finding.origin is Origin.OWN:
                answers = self._stable  # no result changes it: kept across batches
            if len(answers) > 4096:
                answers.clear()
            answers[value, kind] = finding
            return finding

    def _origin(
        self,
        given: str,
        kind: Sink,
        batch: object,
        argument: str,
        tool: str | None = None,
        inside: bool = False,
    ) -> ProvenanceFinding:
        value = plain_address(given)  # "Alice <alice@x.io>" is looked up as alice@x.io
        wanted, key, address = prepared(value, kind)
        if not wanted:
            return ProvenanceFinding(argument, given, kind, Origin.UNSEEN)
        own = next((self._own[n] for n in wanted if n in self._own), None)
        if own is not None and same_identifier(value, own):
            return ProvenanceFinding(argument, given, kind, Origin.OWN)
        dates = dates_in(value) if kind is Sink.DATE else set()
        trusted = self._trusted_haystack
        if trusted is None:
            trusted = self._trusted_haystack = Haystack(self._trusted)
        whole = address or wanted[0].isdigit()  # an address or a number, not a part of one
        if any(
            same_identifier(value, span) for n in wanted for span in trusted.spans(n, whole=whole)
        ) or (dates and same_date(dates, self._trusted_dates)):
            return ProvenanceFinding(argument, given, kind, Origin.REQUEST)
        if self._read_for is not batch and self._unread:
            self._read(batch)
        verbatim = self._exact.get(key)  # the latest result the call could see
        if verbatim is not None and verbatim.batch is batch:
            verbatim = self._exact_other.get(key)
        if verbatim is not None:  # a copy of a record field, verbatim: the usual case
            return ProvenanceFinding(
                argument,
                given,
                kind,
                Origin.RECORD,
                verbatim.tool,
                verbatim.call_id,
                verbatim.path_of(key),
            )
        if self._unread or self._unsplit:
            self._split(batch)
        best: tuple[Seen, str] | None = None
        for needle in wanted:  # the latest result; at one result, the first needle
            for text, (latest, before) in self._skeletons.get(needle, _NO_TEXTS).items():
                seen = latest if latest.batch is not batch else before
                if seen is None or (best is not None and seen.index <= best[0].index):
                    continue
                if same_identifier(value, text):
                    best = (seen, text)
        if best is not None:
            seen, text = best
            return ProvenanceFinding(
                argument, given, kind, Origin.RECORD, seen.tool, seen.call_id, seen.path_of(text)
            )
        visible = [seen for seen in reversed(self._seen) if seen.batch is not batch]
        lifted: ProvenanceFinding | None = None
        for seen in visible:
            path = seen.fragment(wanted, dates)
            if path is not None:
                if kind is Sink.PARTY or kind is Sink.URL:
                    named = pointed_at(
                        seen,
                        value,
                        kind,
                        request=self._request_words(),
                        tool=tool,
                        actions=self._action_words,
                        inside=inside,
                        trusted=trusted,
                        own=self._own,
                        records=visible,
                    )
                    if named is not None:
                        return ProvenanceFinding(
                            argument, given, kind, Origin.NAMED, seen.tool, seen.call_id, named
                        )
                if lifted is None:
                    lifted = ProvenanceFinding(
                        argument, given, kind, Origin.FRAGMENT, seen.tool, seen.call_id, path
                    )
        return lifted or ProvenanceFinding(argument, given, kind, Origin.UNSEEN)

    def _request_words(self) -> tuple[str, frozenset[str]]:
        """The trusted text, folded and joined, and the words that can describe an item."""
        request = self._request
        if request is None:
            folded = _APART.join(fold(text) for text in self._trusted)
            request = self._request = (folded, request_words(folded))
        return request

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
        with self._lock:
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
                texts = ((argument, value),) if type(value) is str else leaves(value, argument)
                for place, text in texts:
                    if each is Sink.CONTENT:
                        for identifier, like in identifiers_in(text):
                            one = self.origin(
                                identifier, like, execution=execution, argument=place, inside=True
                            )
                            found.append(_as(one, Sink.CONTENT))
                    elif each is not Sink.INTENT or text:
                        found.append(self.origin(text, each, execution=execution, argument=place))
            return tuple(found)

    def suspect(
        self, execution: ToolExecution, argument: str, kind: Sink
    ) -> tuple[ProvenanceFinding, ...]:
        """:meth:`explain` for a policy that trusts records: the findings of the values of
        one argument, leaving out each value that is, verbatim (case aside), a declared
        record field of a result the call could see. Those need no finding (the usual,
        cheap case: a recipient copied from the contact list); a secret is always given.

        Raises:
            KeyError: the call has no such argument.
        """
        with self._lock:
            arguments = execution.arguments
            if not isinstance(arguments, dict) or argument not in arguments:
                raise KeyError(f'the call of "{execution.name}" has no argument "{argument}"')
            value = arguments[argument]
            batch: object = execution.signal
            if self.turns:
                batch = self.turns.get(execution.call_id, batch)
            record = self.is_record
            found: list[ProvenanceFinding] = []
            texts = ((argument, value),) if type(value) is str else leaves(value, argument)
            for place, text in texts:
                if kind is Sink.CONTENT:
                    for identifier, like in identifiers_in(text):
                        if not record(identifier, batch):
                            one = self.origin(
                                identifier, like, execution=execution, argument=place, inside=True
                            )
                            known = self._as_content.get(id(one))  # one answer, one content finding
                            if known is None or known[0] is not one:
                                if len(self._as_content) > 4096:
                                    self._as_content.clear()
                                known = self._as_content[id(one)] = (one, _as(one, Sink.CONTENT))
                            found.append(known[1])
                elif kind is Sink.SECRET or not (
                    record(text, batch) or (kind is Sink.INTENT and not text)
                ):
                    found.append(self.origin(text, kind, execution=execution, argument=place))
            return tuple(found)

    def is_record(self, value: str, batch: object = None) -> bool:
        """Whether ``value`` is, verbatim (case aside), a declared record field of a
        result a call of ``batch`` (its :attr:`ToolExecution.signal`) could see: a
        result of another batch. One dictionary lookup once the records are indexed."""
        with self._lock:
            if "<" in value:
                value = plain_address(value)
            key = value.casefold()
            if self._read_for is not batch and self._unread:
                self._read(batch)
            latest = self._exact.get(key)
            if latest is None:
                return False
            return latest.batch is not batch or key in self._exact_other


def _again(known: tuple[Seen, Seen | None], seen: Seen) -> tuple[Seen, Seen | None]:
    """A key's (latest, latest of another batch) once ``seen`` holds it too."""
    latest, other = known
    if seen.index > latest.index:
        return seen, (latest if latest.batch is not seen.batch else other)
    if seen.batch is not latest.batch and (other is None or seen.index > other.index):
        return latest, seen
    return known


def _named(finding: ProvenanceFinding, argument: str) -> ProvenanceFinding:
    return msgspec.structs.replace(finding, argument=argument)


def _as(finding: ProvenanceFinding, kind: Sink) -> ProvenanceFinding:
    return msgspec.structs.replace(finding, kind=kind)
