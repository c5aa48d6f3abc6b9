"""The provenance guard: stop prompt-injected values where they land, with no model.

:func:`install_provenance_guard` puts a pre-execute listener on a scope. For each call
of a tool with sink parameters it asks the scope's ledger where every sink value came
from (:meth:`ProvenanceLedger.explain`) and objects to

* a party, link, content identifier or destructive target lifted out of result text, or
  seen nowhere (it may be paraphrased, computed or made up: never trusted), unless it
  is the one value of its kind in a source the request names (``named``);
* a date lifted out of result text (a date seen nowhere is one the model computed);
* a secret from anywhere but the user's request (always denied, never asked);
* a destructive tool (an ``intent`` sink) the request never asked for by name.

An objection is an ``Ask`` carrying the findings (the approval service receives them as
:attr:`ApprovalRequest.provenance`), or a ``Deny`` for an unattended agent.
A batch with a recorder keeps each question and answer in its log (``approval`` events),
so a batch resumed from it re-asks nothing; :class:`RecordedApprovals` keeps answers in a
file of their own for calls outside a recorded batch.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Final

import msgspec

from .._core._decisions import Ask, Deny, PreToolDecision
from .._core._execution import ApprovalOutcome, ApprovalRequest, ApprovalService, ToolExecution
from .._core._provenance import Origin, ProvenanceFinding, Sink, sink_kind
from .._tools._definition import ToolDefinition
from .._tools._sinks import sinks_of
from ._named import verb_of
from ._registry import Disposer, ToolScope

__all__ = ["RecordedApprovals", "install_provenance_guard"]

_TRUSTED: Final = frozenset({Origin.REQUEST, Origin.OWN, Origin.RECORD, Origin.NAMED})
_DATE_TRUSTED: Final = _TRUSTED | {Origin.UNSEEN}
# the kinds whose value suspect() leaves out when it is a record field (not a body's
# identifiers, not a secret)
_PLAIN: Final = frozenset(Sink) - {Sink.CONTENT, Sink.SECRET}

# The words a request uses for a destructive action, by the verb a tool's name starts with.
_INTENT_WORDS: Final[dict[str, tuple[str, ...]]] = {
    "delete": ("delete", "remove", "erase", "trash", "get rid of", "clear", "wipe"),
    "remove": ("remove", "delete", "erase", "kick", "get rid of", "take off", "clear"),
    "erase": ("erase", "delete", "remove", "wipe"),
    "drop": ("drop", "delete", "remove"),
    "cancel": ("cancel", "call off", "delete", "remove"),
    "revoke": ("revoke", "remove", "cancel"),
    "reset": ("reset", "change", "update"),
    "change": ("change", "update", "reset", "set"),
    "update": ("update", "change", "set", "edit", "modify", "reset"),
    "transfer": ("transfer", "move", "give"),
}


def _intent_words(tool: str) -> tuple[str, ...]:
    verb = verb_of(tool)
    return _INTENT_WORDS.get(verb, (verb,)) if verb else ()


def _objection(finding: ProvenanceFinding) -> str | None:
    kind = finding.kind
    origin = finding.origin
    if kind is Sink.SECRET:
        return None if origin is Origin.REQUEST else "a secret not given in the user's request"
    trusted = _DATE_TRUSTED if kind is Sink.DATE else _TRUSTED
    if origin in trusted:
        return None
    if origin is Origin.FRAGMENT:
        return f"lifted out of the text of {finding.source_tool} ({finding.source_call})"
    return "seen nowhere in the user's request or in a record the model read"


_Sinks = tuple[tuple[tuple[str, tuple[Sink, ...]], ...], bool]
# A definition's sink arguments and whether one is an intent, by definition (identity
# kept: an id is reused only once its definition is gone): worked out once per
# definition, for every guard (definitions outlive agent runs).
_SINKS: dict[int, tuple[object, _Sinks]] = {}


def _sinks_of(definition: ToolDefinition | None) -> _Sinks:
    known = _SINKS.get(id(definition))
    if known is not None and known[0] is definition:
        return known[1]
    items = tuple(sinks_of(definition).items())
    facts = (items, any(Sink.INTENT in kinds for _, kinds in items))
    if definition is not None:
        if len(_SINKS) > 1024:
            _SINKS.clear()
        _SINKS[id(definition)] = (definition, facts)
    return facts


def install_provenance_guard(
    scope: ToolScope,
    *,
    request: str | Iterable[str] = (),
    own: Iterable[str] = (),
    unattended: bool = False,
    sinks: Mapping[str, Mapping[str, Sink | str | Sequence[Sink | str]]] | None = None,
    records: Mapping[str, Iterable[str]] | None = None,
    intents: Mapping[str, Iterable[str]] | None = None,
    max_results: int | None = None,
) -> Disposer:
    """Check every sink argument of the scope's calls against the run's provenance ledger.

    The ledger (``scope.provenance``) is made now if it was not, so it sees every
    result from here on. A call whose sink values all come from the user's request,
    their own identifiers or a declared record field runs as usual (the rest of the
    pre-execute waterfall decides); otherwise it gets ``Ask`` with the findings
    (:attr:`ApprovalRequest.provenance`), or ``Deny`` when ``unattended``. A secret
    not given in the request is always denied.

    Args:
        scope: the agent run's scope.
        request: trusted text to add now (the user's request; add later messages with
            ``scope.provenance.trust(...)``).
        own: the user's own identifiers (email, account, phone).
        unattended: nobody can answer: deny instead of asking.
        sinks: sink kinds for tools whose definitions carry none (a mounted MCP tool):
            ``{"send_email": {"to": Sink.PARTY}}``; they add to a definition's own.
        records: record fields for tools whose definitions declare none:
            ``{"search_contacts": ["[].email"]}``.
        intents: the words a request uses for a tool's action, per tool: a destructive
            tool (one with an ``intent`` sink) runs only when the request uses one, and
            any tool takes a value out of the text of a source the request names only
            then (default: from the verb its name starts with, ``delete_file`` →
            delete, remove, erase, …; ``send_money`` → send, pay, transfer, …).
        max_results: the most results the run's ledger keeps (default
            :attr:`ProvenanceLedger.DEFAULT_MAX_RESULTS`, 5000); past it the oldest are
            dropped (:attr:`ProvenanceLedger.dropped`), and a value seen only in them
            is asked about again.

    Returns:
        A :class:`Disposer` that removes the check (the ledger stays).

    Raises:
        ValueError: a sink kind or a record path is unknown, or ``max_results`` is not
            a positive int.
        RegistrationError: the scope is closed.
    """
    ledger = scope.provenance
    if max_results is not None:
        ledger.max_results = max_results
    ledger.trust(*((request,) if isinstance(request, str) else tuple(request)))
    ledger.own(*own)
    for tool, paths in (records or {}).items():
        ledger.declare_records(tool, *paths)
    extra: dict[str, dict[str, tuple[Sink, ...]]] = {}
    for tool, by_argument in (sinks or {}).items():
        extra[tool] = {
            argument: tuple(
                sink_kind(k) for k in (kinds if isinstance(kinds, list | tuple) else (kinds,))
            )
            for argument, kinds in by_argument.items()
        }
    words = {tool: tuple(w.casefold() for w in given) for tool, given in (intents or {}).items()}
    for tool, given in words.items():
        ledger.declare_actions(tool, *given)
    registry = scope.registry

    # per tool name and scope, until the registry changes (a tool registered,
    # unregistered, restricted): what a name resolves to changes only then
    by_name: dict[tuple[str, object], tuple[tuple[tuple[str, tuple[Sink, ...]], ...], bool]] = {}
    stop_watching = registry.on_change(by_name.clear)

    def sinks_for(
        execution: ToolExecution,
    ) -> tuple[tuple[tuple[str, tuple[Sink, ...]], ...], bool]:
        items, intent = _sinks_of(registry.get(execution.name, execution.agent))
        more = extra.get(execution.name)
        if more:  # the guard's own sinks for this tool, after the definition's
            merged = dict(items)
            for argument, kinds in more.items():
                merged[argument] = (*merged.get(argument, ()), *kinds)
            items = tuple(merged.items())
            intent = any(Sink.INTENT in kinds for _, kinds in items)
        return items, intent

    suspect = ledger.suspect
    is_record = ledger.is_record

    # A plain function handing on next()'s awaitable (no coroutine of its own per call:
    # most calls pass); an objection is a decided awaitable.
    def provenance_guard(
        execution: ToolExecution, next: Callable[[], Awaitable[PreToolDecision]]
    ) -> Awaitable[PreToolDecision]:
        key = (execution.name, execution.agent)
        known = by_name.get(key)
        if known is None:
            if len(by_name) > 1024:
                by_name.clear()
            known = by_name[key] = sinks_for(execution)
        declared, intent = known
        if not declared:
            return next()
        arguments = execution.arguments
        if not isinstance(arguments, dict):
            return next()
        objections: list[ProvenanceFinding] = []
        secret = False
        batch = execution.signal
        for argument, kinds in declared:
            if argument not in arguments:
                continue
            value = arguments[argument]
            for kind in kinds:
                if type(value) is str and kind in _PLAIN and is_record(value, batch):
                    continue  # a verbatim record field (what suspect() leaves out), at once
                for finding in suspect(execution, argument, kind):
                    why = _objection(finding)
                    if why is not None:
                        objections.append(msgspec.structs.replace(finding, reason=why))
                        secret = secret or kind is Sink.SECRET
        if intent:
            asked = words.get(execution.name) or _intent_words(execution.name)
            if not ledger.asks_for(asked):
                objections.append(
                    ProvenanceFinding(
                        "",
                        execution.name,
                        Sink.INTENT,
                        Origin.UNSEEN,
                        reason=f"the user's request never asks to {asked[0] if asked else 'do this'}",
                    )
                )
        if not objections:
            return next()
        reason = f'tool "{execution.name}": ' + "; ".join(
            f"{f.argument or 'the call'}={f.value!r}: {f.reason}" for f in objections
        )
        if secret or unattended:
            return _decided(Deny(reason))
        return _decided(Ask(reason, provenance=tuple(objections)))

    stop_checking = scope.on_pre_execute(provenance_guard)

    def dispose() -> None:
        stop_checking()
        stop_watching()

    return Disposer(dispose)


async def _decided(decision: PreToolDecision) -> PreToolDecision:
    return decision


# -- durable answers -------------------------------------------------------------------


class _Answer(msgspec.Struct, frozen=True, omit_defaults=True):
    tool: str
    call: str
    outcome: str
    reason: str | None = None
    values: tuple[tuple[str, str], ...] = ()


def _key(request: ApprovalRequest) -> tuple[object, ...]:
    values = tuple((f.argument, f.value) for f in request.provenance)
    return (request.tool_name, request.call_id, request.reason, values)


class RecordedApprovals:
    """An :class:`ApprovalService` that keeps every final answer in a JSON-lines file.

    A batch given a recorder needs none of this: its log records every question and
    answer (``approval`` events) before the call goes on, and ``resume_from=`` answers
    from it. This file is for answers the batch log cannot hold or give back: calls run
    with :meth:`ToolRegistry.execute` or in a batch without a recorder, and an agent loop
    that sends the same calls again in a new batch rather than resuming the old one.

    Each ``allowed-once`` or ``rejected`` answer of ``service`` is appended to ``path``
    (one line, flushed before the call goes on) with the tool, the call id, the reason and
    the findings' values. A later run made with the same file (a resumed batch) answers a
    request with the same tool, call id, reason and values from the file, without asking.
    ``cancelled`` and ``unavailable`` are not kept: they are asked again. A torn last
    line (a crash mid-write) is skipped.

    Args:
        service: who answers requests the file does not.
        path: the file (created if missing, appended to otherwise).
        fsync: also flush each answer to the storage device.
    """

    def __init__(
        self, service: ApprovalService, path: str | os.PathLike[str], *, fsync: bool = False
    ) -> None:
        self.service = service
        self.path: Path = Path(path)
        self._fsync = fsync
        self._answers: dict[tuple[object, ...], ApprovalOutcome] = {}
        if self.path.exists():
            decoder = msgspec.json.Decoder(_Answer)
            for line in self.path.read_bytes().splitlines():
                try:
                    answer = decoder.decode(line)
                except msgspec.DecodeError:
                    continue
                if answer.outcome in ("allowed-once", "rejected"):
                    key = (answer.tool, answer.call, answer.reason, answer.values)
                    self._answers[key] = answer.outcome  # type: ignore[assignment]

    @property
    def answered(self) -> int:
        """How many answers the file holds."""
        return len(self._answers)

    async def request(self, request: ApprovalRequest, /) -> ApprovalOutcome:
        """The recorded answer for this request, else ``service``'s (then recorded)."""
        key = _key(request)
        known = self._answers.get(key)
        if known is not None:
            return known
        outcome = await self.service.request(request)
        if outcome in ("allowed-once", "rejected"):
            self._keep(key, request, outcome)
        return outcome

    def _keep(
        self, key: tuple[object, ...], request: ApprovalRequest, outcome: ApprovalOutcome
    ) -> None:
        # One short append, as the batch's own recorder writes: synchronous, in order.
        values = tuple((f.argument, f.value) for f in request.provenance)
        line = msgspec.json.encode(
            _Answer(request.tool_name, request.call_id, outcome, request.reason, values)
        )
        with open(self.path, "ab") as file:
            file.write(b"\n" + line + b"\n")
            file.flush()
            if self._fsync:
                os.fsync(file.fileno())
        self._answers[key] = outcome
