"""A batch's durable events: what the batch machine records, in durable order (data only).

Events arrive in durable order: each call's ``tool_call`` when it starts (before its
pre-execute), its ``approval`` events while its ``Ask`` is answered (before it is
dispatched or denied), its ``tool_result`` at commit (model order), and every ``context``
after all of the batch's results. Writing them somewhere is a recorder's business
(:mod:`toolnursery._batch._recorder`); this module does no I/O.
"""

from __future__ import annotations

from typing import Literal, Protocol, TypeAlias

import msgspec

from .._core._content import HookContext, ToolCall, ToolExecutionResult
from .._core._decisions import ResourceKey
from .._core._execution import ApprovalOutcome
from .._core._progress import CallReport
from .._core._provenance import ProvenanceFinding

__all__ = [
    "ApprovalEvent",
    "CallMode",
    "ContextEvent",
    "ProgressEvent",
    "RecorderEvent",
    "ToolCallEvent",
    "ToolCallRecorder",
    "ToolResultEvent",
]


CallMode: TypeAlias = Literal["parallel", "keyed", "exclusive"]
"""How the scheduler ran a call: beside others, beside all but conflicting keys, alone."""


class ToolCallEvent(
    msgspec.Struct,
    frozen=True,
    tag="tool_call",
    tag_field="event",
    rename="camel",
    omit_defaults=True,
):
    """A call started: recorded before its pre-execute runs (or when it is skipped).

    Attributes:
        batch: the batch's id.
        index: the call's position in the batch (model order).
        call: the call as the model sent it.
        wall: the wall-clock start of the batch run that started the call (Unix
            seconds); ``None`` in logs written before events carried times.
        t: when the call started, in seconds since ``wall`` (trio's clock).
        mode: how the scheduler ran it (``exclusive``: a barrier); ``None`` unknown.
        keys: a ``keyed`` call's resource keys.
    """

    batch: str
    index: int
    call: ToolCall
    wall: float | None = None
    t: float | None = None
    mode: CallMode | None = None
    keys: tuple[ResourceKey, ...] = ()


class ToolResultEvent(
    msgspec.Struct,
    frozen=True,
    tag="tool_result",
    tag_field="event",
    rename="camel",
    omit_defaults=True,
):
    """A call's result committed, in model order.

    The result's ``additional_contexts`` are not part of this event: each context is a
    :class:`ContextEvent` of its own, recorded after all of the batch's results.

    Times are seconds since the ``wall`` of the call's :class:`ToolCallEvent`, each
    ``None`` when unknown (an older log, a result decided without dispatch):

    Attributes:
        t: when the result committed.
        admitted: when the call was admitted to the batch's pool (before it waited for
            a conflicting call or a free slot); ``None`` for a call dispatched in place.
        began: when its dispatch began (its execute wrappers and body).
        ended: when its dispatch ended.
        attempts: when each attempt of a call the retry policy ran more than once
            began; ``()`` otherwise.
    """

    batch: str
    index: int
    call_id: str
    result: ToolExecutionResult
    t: float | None = None
    admitted: float | None = None
    began: float | None = None
    ended: float | None = None
    attempts: tuple[float, ...] = ()


class ContextEvent(msgspec.Struct, frozen=True, tag="context", tag_field="event", rename="camel"):
    """A context for the next request, recorded after all of the batch's results."""

    batch: str
    index: int
    call_id: str
    context: HookContext


class ProgressEvent(
    msgspec.Struct,
    frozen=True,
    tag="progress",
    tag_field="event",
    rename="camel",
    omit_defaults=True,
):
    """A progress or log report a call's body made while it ran (between its
    ``tool_call`` and its ``tool_result``), in the order it was made; ``t``: when,
    in seconds since the ``wall`` of the call's :class:`ToolCallEvent`."""

    batch: str
    index: int
    call_id: str
    report: CallReport
    t: float | None = None


class ApprovalEvent(
    msgspec.Struct,
    frozen=True,
    tag="approval",
    tag_field="event",
    rename="camel",
    omit_defaults=True,
):
    """A call's ``Ask`` went to the approval service (``outcome`` ``None``), or came back.

    Both are recorded before the call goes on: the question before the service is
    awaited, the answer before the call is dispatched or denied. So a call whose last
    line is its question, or an answer other than ``allowed-once``, was not dispatched.

    Attributes:
        batch, index, call_id: the call, as on its other events.
        tool: the tool.
        outcome: the answer (``allowed-once``, ``rejected``, ``cancelled``,
            ``unavailable``); ``None`` on the question, while it waits.
        reason: the ``Ask``'s reason.
        provenance: the findings the request carried (argument, value, origin, source).
        t: when, in seconds since the ``wall`` of the call's :class:`ToolCallEvent`.
    """

    batch: str
    index: int
    call_id: str
    tool: str
    outcome: ApprovalOutcome | None = None
    reason: str | None = None
    provenance: tuple[ProvenanceFinding, ...] = ()
    t: float | None = None


RecorderEvent: TypeAlias = (
    ToolCallEvent | ToolResultEvent | ContextEvent | ProgressEvent | ApprovalEvent
)
"""One durable event, tagged ``event: "tool_call" | "tool_result" | "context" |
"progress" | "approval"``."""


class ToolCallRecorder(Protocol):
    """Receives a batch's durable events, synchronously, in durable order.

    A recorder that raises is an internal failure of the batch: the scheduler starts
    nothing new, waits for the calls in flight, and re-raises the first failure.
    """

    def record(self, event: RecorderEvent, /) -> None:
        """Persist or forward one event."""
        ...
