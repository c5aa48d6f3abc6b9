"""One call's life, as a state machine: its states, the transition tables, and the one place
that decides what an abort or a deadline makes of a call.

Where a call stands is two enums, each asserted where it changes.

:class:`CallState`, in the pipeline (:mod:`toolnursery._pipeline._stages`)::

    PENDING ──dispatch ends, a denial, a pre-phase abort──▶ RESOLVED
       │                                                       │ post-execute ran
       └──argument failure, pre-aborted, a hook raised──▶ FINAL ◀┘ (and FINAL → FINAL:
                                                                    conclude ends it)

:class:`Slot`, in a batch (:mod:`toolnursery._machine._batch` and its driver)::

    NEW ──placed in the pool──▶ QUEUED ──a worker or its group runs it──▶ RUNNING
     │ │                          │                                        ▲   │
     │ └──────────────────────────┼─────────run in the driver──────────────┘   │
     │                            │ aborted while it waited,                   │ dispatch ended, or
     │                            │ or the pool closed first                   │ an abort unwound it
     │                            ▼                                            │
     ├──decided, no dispatch──▶ SETTLED ◀──────────────────────────────────────┘
     │                            │ committed, in model order
     └──never started (abort)─▶ COMMITTED

The tables :data:`STATE_MOVES` and :data:`SLOT_MOVES` are these diagrams.

**Precedence.** What an abort or a deadline makes of a call is decided here and nowhere
else: :func:`cut_short` (a call an abort or a deadline ended before it had a result of its
own: ``TOOL_TIMEOUT`` when its own deadline had passed first, else ``ABORTED`` when its
body ran at any attempt, else ``ABORTED_BEFORE_DISPATCH``) and :func:`after_abort` (a
result the call reached although the caller's abort came first: an error stays as it is;
a success becomes ``ABORTED`` or, when no body ran, ``ABORTED_BEFORE_DISPATCH``, keeping
its contexts). The pipeline and the drivers call these two and :class:`CallMachine`'s
methods built on them.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, Final

import msgspec

from .._core._content import ToolExecutionResult
from .._core._errors import ToolTimeoutError
from .._core._outcomes import ABORTED_BEFORE_DISPATCH_RESULT, ABORTED_RESULT, failure_result

__all__ = [
    "FINAL",
    "PENDING",
    "RESOLVED",
    "SLOT_MOVES",
    "STATE_MOVES",
    "CallMachine",
    "CallState",
    "Slot",
    "aborted_as",
    "after_abort",
    "cut_short",
]


class CallState(enum.Enum):
    """Where a call stands in the pipeline (the diagram is in the module docstring)."""

    # Dispatch is still due (the call is being prepared, or was, and passed).
    PENDING = "pending"
    # A result exists that still passes post-execute: a dispatch ended, a denial, a
    # pre-phase abort.
    RESOLVED = "resolved"
    # A result exists that skips post-execute (argument failures, pre-aborted calls,
    # raising policy hooks), or post-execute ran.
    FINAL = "final"


class Slot(enum.Enum):
    """Where a call stands in its batch (the diagram is in the module docstring)."""

    # Submitted; not placed yet (the driver classifies and prepares it meanwhile).
    NEW = "new"
    # Placed in the pool: waiting for a worker, its deadline group, or its turn.
    QUEUED = "queued"
    # Its dispatch runs (in a worker, a deadline group, or the driver).
    RUNNING = "running"
    # It has its result; waits for the earlier calls to commit (model order).
    SETTLED = "settled"
    # Its result is final and published (recorded, handed to the reader).
    COMMITTED = "committed"


PENDING: Final = CallState.PENDING
RESOLVED: Final = CallState.RESOLVED
FINAL: Final = CallState.FINAL

STATE_MOVES: Final[Mapping[CallState, tuple[CallState, ...]]] = {
    PENDING: (RESOLVED, FINAL),
    RESOLVED: (FINAL,),
    FINAL: (FINAL,),  # conclude() ends a call that post-execute already made FINAL
}
"""The pipeline's diagram: the states each state may move to."""

SLOT_MOVES: Final[Mapping[Slot, tuple[Slot, ...]]] = {
    Slot.NEW: (Slot.QUEUED, Slot.RUNNING, Slot.SETTLED, Slot.COMMITTED),
    Slot.QUEUED: (Slot.RUNNING, Slot.SETTLED),
    Slot.RUNNING: (Slot.SETTLED,),
    Slot.SETTLED: (Slot.COMMITTED,),
    Slot.COMMITTED: (),
}
"""The batch's diagram: the slots each slot may move to."""

_NEW: Final = Slot.NEW
_QUEUED: Final = Slot.QUEUED
_RUNNING: Final = Slot.RUNNING
_SETTLED: Final = Slot.SETTLED


def cut_short(invoked: bool, timed_out: float | None = None) -> ToolExecutionResult:
    """The result of a call an abort or a deadline ended before it had one of its own.

    ``timed_out``: the budget (ms) whose deadline passed before the abort reached the
    call (it wins); ``invoked``: whether its body ran at any attempt.
    """
    if timed_out is not None:
        return failure_result(ToolTimeoutError(timed_out))
    return ABORTED_RESULT if invoked else ABORTED_BEFORE_DISPATCH_RESULT


def after_abort(result: ToolExecutionResult, invoked: bool) -> ToolExecutionResult:
    """What ``result`` becomes when the caller's abort came first: an error stays; a
    success is :func:`aborted_as`."""
    return result if result.is_error else aborted_as(result, invoked)


def aborted_as(result: ToolExecutionResult, invoked: bool) -> ToolExecutionResult:
    """The abort's result (by whether a body ran) in place of ``result``, with its contexts."""
    base = ABORTED_RESULT if invoked else ABORTED_BEFORE_DISPATCH_RESULT
    contexts = result.additional_contexts
    return msgspec.structs.replace(base, additional_contexts=contexts) if contexts else base


class CallMachine:
    """One call's life: its pipeline state, its batch slot, and what decides both.

    :class:`~toolnursery._pipeline._call.CallRecord` is this machine with what the
    pipeline keeps about the call beside it (its plan, signal, arguments, views).
    """

    __slots__ = ("clean", "fixed", "invoked", "result", "slot", "state", "timed_out", "wait")

    def __init__(self) -> None:
        self.state: CallState = PENDING
        self.slot: Slot = _NEW
        self.result: ToolExecutionResult | None = None
        self.fixed: ToolExecutionResult | None = None  # decided without the registry
        self.clean: ToolExecutionResult | None = None  # a result known final as it is
        self.invoked: bool = False  # the body was invoked (at any attempt)
        self.timed_out: float | None = None  # the budget whose deadline ended the call
        self.wait: Any = None  # the batch's admission state of the call (a Wait)

    def resolve(self, result: ToolExecutionResult, state: CallState) -> CallMachine:
        """Give the pending call its result; ``state`` says whether post-execute is due."""
        assert self.state is PENDING, f"{self.state.name} -> {state.name}"
        self.result = result
        self.state = state
        return self

    def with_deferred(self, result: ToolExecutionResult) -> ToolExecutionResult:
        """``result`` with whatever the call's body deferred (the record adds its own)."""
        return result

    def aborted(self) -> ToolExecutionResult:
        """The result of a call an abort unwound (:func:`cut_short`, with its deferred
        contexts)."""
        return self.with_deferred(cut_short(self.invoked, self.timed_out))

    def unwind(self) -> None:
        """An abort unwound the call (running, or queued and never run): resolved as
        :meth:`aborted` says, and settled."""
        assert self.slot is _QUEUED or self.slot is _RUNNING, self.slot
        self.resolve(self.aborted(), RESOLVED)
        self.slot = _SETTLED

    def settle_fixed(self) -> None:
        """A call decided without a dispatch (no registry, or no dispatch due) settles."""
        assert self.slot is _NEW, self.slot
        self.slot = _SETTLED
