"""Provenance values: sink kinds, origins, and one finding about one argument value.

These are the values that cross layers: a tool definition declares :class:`Sink` kinds on
its parameters, a policy reports a :class:`ProvenanceFinding` in its ``Ask``, and the
approval service receives the findings on its :class:`ApprovalRequest`.
"""

from __future__ import annotations

import enum
import functools
import re
from typing import Final

import msgspec

__all__ = ["Origin", "ProvenanceFinding", "Sink", "record_steps", "sink_kind"]


class Sink(enum.StrEnum):
    """What an outbound parameter of a tool is, for provenance policies.

    A parameter marked with a sink kind is where a value copied out of a tool result
    (a prompt-injected recipient, link or secret) would land. Mark it in ``@tool`` with
    ``Annotated[str, Sink.PARTY]``, in :func:`define_tool` and on a raw
    :class:`ToolDefinition` with ``sinks={"to": Sink.PARTY}``. The marker is kept on
    the definition (``definition.sinks``); it is never part of the schema the model sees.

    Members:
        PARTY: a recipient, account, invitee, channel member: who receives something.
        URL: a link the tool opens or sends.
        SECRET: a password, token or code: only ever from the user's own request.
        DATE: a date or time the tool acts on.
        CONTENT: a body of text (a message, a post): the identifiers inside it (emails,
            links, account numbers, phone numbers) are checked as parties and links.
        INTENT: the target of a destructive action (delete, remove, change a
            password): the user's request must ask for that action.
    """

    PARTY = "party"
    URL = "url"
    SECRET = "secret"
    DATE = "date"
    CONTENT = "content"
    INTENT = "intent"


def sink_kind(value: object) -> Sink:
    """``value`` as a :class:`Sink` (a member, or a member's string value).

    Raises:
        ValueError: ``value`` names no sink kind (the message lists the kinds).
    """
    if isinstance(value, Sink):
        return value
    if isinstance(value, str):
        try:
            return Sink(value)
        except ValueError:
            pass
    known = ", ".join(kind.value for kind in Sink)
    raise ValueError(f"unknown sink kind {value!r} (known: {known})")


class Origin(enum.StrEnum):
    """Where a value an agent passes to a sink was seen before the call.

    Members:
        REQUEST: in text the host trusts (the user's messages, a system prompt).
        OWN: one of the user's own identifiers (their email, account, phone).
        RECORD: the whole value of a record field a tool declares trusted
            (``contacts[].email``), in a result the model could read.
        NAMED: the one value of its kind in a source the user's request names: the
            sender of the email it describes, the account in the bill it points to.
            Where the source holds two (an injected one beside the real one), neither
            is named.
        FRAGMENT: inside other result text (an email body, a web page, a note): what an
            injected instruction would make the model copy.
        UNSEEN: nowhere: computed, paraphrased, or made up. Never trusted.
    """

    REQUEST = "request"
    OWN = "own"
    RECORD = "record"
    NAMED = "named"
    FRAGMENT = "fragment"
    UNSEEN = "unseen"


class ProvenanceFinding(msgspec.Struct, frozen=True, omit_defaults=True):
    """The provenance of one value of one sink argument of a call.

    Attributes:
        argument: the parameter (``"to"``; a nested value reads ``"to[1]"``).
        value: the value the call passes (for a ``content`` sink, the identifier
            found inside the text).
        kind: the parameter's sink kind.
        origin: where the value was seen (:class:`Origin`).
        source_tool: the tool whose result held it (record, named and fragment origins).
        source_call: that result's call id.
        source_path: where in that result, as a JSON path (``$.contacts[2].email``;
            ``$`` for a result's whole text).
        reason: why a policy objects to it (``None`` when it does not).
    """

    argument: str
    value: str
    kind: Sink
    origin: Origin
    source_tool: str | None = None
    source_call: str | None = None
    source_path: str | None = None
    reason: str | None = None

    def describe(self) -> str:
        """One line for a person: the argument, its value, and where it came from."""
        where = {
            Origin.REQUEST: "from the user's request",
            Origin.OWN: "the user's own identifier",
            Origin.UNSEEN: "seen nowhere in the request or in any result",
        }.get(self.origin)
        if where is None:
            what = {
                Origin.RECORD: "a record field of",
                Origin.NAMED: "the only one of its kind in a source the request names,",
            }.get(self.origin, "text inside of")
            where = f"{what} {self.source_tool} ({self.source_call}) at {self.source_path}"
        return f"{self.argument}={self.value!r}: {where}"


_STEP: Final = re.compile(r"\[\]|[A-Za-z_][\w-]*")


@functools.lru_cache(maxsize=1024)
def record_steps(path: str) -> tuple[str | None, ...] | None:
    """The steps of a record path: a field name, or ``None`` for "any item of a list".

    ``"contacts[].email"`` is ``("contacts", None, "email")``, ``"[].iban"`` is
    ``(None, "iban")``; ``None`` when ``path`` is not a record path.
    """
    steps: list[str | None] = []
    position = 0
    for match in _STEP.finditer(path):
        token = match.group()
        start = match.start()
        gap = path[position:start]
        if token == "[]":
            if gap:
                return None
            steps.append(None)
        else:
            if gap != ("." if steps else ""):
                return None
            steps.append(token)
        position = match.end()
    if position != len(path) or not steps:
        return None
    return tuple(steps)
