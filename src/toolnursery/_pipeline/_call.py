"""The record of one call: where it stands in the pipeline and in its batch.

One object per call (``__slots__``) carries everything the scheduler and the pipeline
keep about it. A body never sees it: each attempt gets an :class:`AttemptContext`, a
:class:`~toolnursery.ToolRunContext` holding the record privately. What only some calls
need is made when something first asks for it: the frozen
:class:`~toolnursery.ToolExecution` (and its token) when a hook or the body reads it,
the deferred-context list on the first ``defer_context``, and a derived signal when a
body under a deadline or a wrapper's replacement signal reads ``ctx.signal``.

Where a call stands, and what an abort or a deadline makes of it, is the call machine's
(:class:`toolnursery._core._lifecycle.CallMachine`, whose subclass the record is): its two
diagrams and their tables are there.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, Protocol

import msgspec
import trio

from .._core._content import HookContext, ToolCall, ToolExecutionResult, with_contexts
from .._core._decisions import ResourceKey
from .._core._execution import ToolExecution, ToolExecutionToken, ToolRunContext
from .._core._lifecycle import (
    FINAL,
    PENDING,
    RESOLVED,
    SLOT_MOVES,
    STATE_MOVES,
    CallMachine,
    CallState,
    Slot,
)
from .._core._scope import AgentScope
from .._core._signal import CancelSignal, link, unlink

if TYPE_CHECKING:
    from ._plan import ToolPlan

__all__ = [
    "FINAL",
    "PENDING",
    "RESOLVED",
    "SLOT_MOVES",
    "STATE_MOVES",
    "UNPARSED",
    "AttemptContext",
    "CallRecord",
    "CallState",
    "Gate",
    "Slot",
    "Waiting",
    "attempt_context",
]


_NEW: Final = Slot.NEW
_UNSET: Final = msgspec.UNSET


class _Unparsed:
    __slots__ = ()


UNPARSED: Final = _Unparsed()


class Gate(Protocol):
    """The scheduler's side of a call that waits for its tool's limit (internal).

    A pooled call holds a slot under its batch's ``max_parallel`` while it dispatches;
    it gives the slot back while it waits for a ``max_concurrency`` token, and takes
    one again (holding the token) before the body runs.
    """

    def leave(self, call: CallRecord) -> None:
        """Give the call's batch slot back: it is about to wait."""

    async def rejoin(self, call: CallRecord) -> None:
        """Wait for a batch slot for the call again."""


class Waiting(Protocol):
    """A batch's admission state of one call (``_machine._admission.Wait``), as the record
    types it: the pipeline layer names no type of the batch layer above it."""

    keys: Sequence[ResourceKey]
    blockers: int  # unfinished earlier calls this one conflicts with
    dependents: list[CallRecord]  # later calls that wait for this one
    granted: Any  # the driver's event, set when the call gets its slot
    running: bool  # holds a slot under the cap
    done: bool  # its dispatch has ended (or was cancelled)


class CallRecord(CallMachine):
    """One call (internal): its machine (state, slot, how it ended) and what the pipeline
    and the scheduler keep about it.

    Only the pipeline and the scheduler read it; the body gets an :class:`AttemptContext`.
    """

    __slots__ = (
        "_execution",
        "agent",
        "args",
        "arguments_json",
        "attempt_starts",
        "batch_id",
        "call_id",
        "caller",
        "deadline",
        "deferrals",
        "deps",
        "derived",
        "frozen",
        "gate",
        "index",
        "name",
        "parent",
        "plan",
        "timings",
        "tool_call",
        "view_signal",
    )

    def __init__(
        self,
        *,
        call_id: str,
        name: str,
        signal: CancelSignal,
        agent: AgentScope | None,
        parent: ToolExecutionToken | None = None,
        index: int = 0,
        tool_call: ToolCall | None = None,
        batch_id: str | None = None,
        deps: Any = None,
    ) -> None:
        self.call_id: str = call_id
        self.name: str = name
        self.caller: CancelSignal = signal  # the caller's (or the batch's) signal
        self.agent: AgentScope | None = agent
        self.parent: ToolExecutionToken | None = parent  # the enclosing execution's token
        self.index: int = index
        self.tool_call: ToolCall | None = tool_call
        self.batch_id: str | None = batch_id  # None under registry.execute()
        self.deps: Any = deps  # what the run's bodies read as ctx.deps
        self.args: Any = UNPARSED  # the frozen snapshot (or UNSET: not lossless JSON)
        self.arguments_json: bool = True
        self.frozen: bool = False
        # The call machine's fields (CallMachine.__init__, without its call):
        self.fixed: ToolExecutionResult | None = None  # decided without the registry
        self.slot = _NEW
        self.wait: Waiting | None = None
        self.state = PENDING
        self.result: ToolExecutionResult | None = None
        self.clean: ToolExecutionResult | None = None  # a result known final as it is
        self.invoked = False  # the body was invoked (at any attempt)
        self.timed_out: float | None = None  # the budget whose deadline ended the call
        self.plan: ToolPlan | None = None
        self.gate: Gate | None = None
        self.deadline: float | None = None  # the innermost deadline now in force
        self.view_signal: CancelSignal = signal  # the signal the current attempt runs under
        self.derived: _BodySignal | None = None
        self.timings: bool = False
        self.attempt_starts: list[float] | None = None  # a retried call's, on trio's clock
        self.deferrals: list[HookContext] | None = None
        self._execution: ToolExecution | None = None

    def current_plan(self) -> ToolPlan:
        """The call's plan, recompiled if the registry changed since (:meth:`ToolPlan.current`).

        Each stage starts with it, so a listener registered during one phase joins the
        next phases of the same call, and dispatch resolves the definition current when
        it starts.
        """
        plan = self.plan
        assert plan is not None
        if plan.version != plan.versions.value:  # ToolPlan.current(), without its call
            plan = self.plan = plan.rebuild(plan.name, plan.agent)
        return plan

    # -- what the run context shows -----------------------------------------------------

    @property
    def execution(self) -> ToolExecution:
        """The frozen execution this call runs as (made on first use)."""
        execution = self._execution
        if execution is None:
            execution = self._execution = ToolExecution(
                self.call_id,
                self.name,
                self.args if self.arguments_json else _UNSET,
                self.caller,
                self.agent,
                self.parent,
                ToolExecutionToken(),
            )
        return execution

    @property
    def signal(self) -> CancelSignal:
        """The signal the body runs under (read-only; poll it from a sync body)."""
        view = self.view_signal
        caller = self.caller
        if self.deadline is None and view is caller:
            return caller
        derived = self.derived
        if derived is None:
            sources = (caller,) if view is caller else (caller, view)
            derived = self.derived = _BodySignal(sources, self.deadline)
        return derived

    @property
    def arguments(self) -> Any:
        """The frozen argument snapshot."""
        return self.args if self.arguments_json else _UNSET

    @property
    def token(self) -> ToolExecutionToken:
        """This execution's token (pass it as ``parent`` to nested dispatches)."""
        return self.execution.token

    @property
    def deferred(self) -> list[HookContext]:
        """The contexts the body deferred (made on first use)."""
        deferred = self.deferrals
        if deferred is None:
            deferred = self.deferrals = []
        return deferred

    def defer_context(self, context: HookContext) -> None:
        """Attach ``context`` to this call's result (see :class:`ToolRunContext`)."""
        if not isinstance(context, HookContext):
            raise TypeError(f"defer_context() takes a HookContext, not {type(context).__name__}")
        self.deferred.append(context)

    def end_attempt(self) -> None:
        """Detach a derived signal made for the attempt that just ended."""
        derived = self.derived
        if derived is not None:
            self.derived = None
            derived.close()

    # -- results ----------------------------------------------------------------------

    def with_deferred(self, result: ToolExecutionResult) -> ToolExecutionResult:
        """``result`` with the body-deferred contexts in front of its own."""
        deferred = self.deferrals
        if not deferred:
            return result
        return with_contexts(result, (*deferred, *result.additional_contexts))


class AttemptContext(ToolRunContext[Any]):
    """The run context of one attempt of a body: the call, and nothing of its record.

    Made per attempt by :func:`~toolnursery._pipeline._dispatch.invoke` (a retry's next
    attempt gets a fresh one over the same record): one slot, one small allocation.
    """

    __slots__ = ("_record",)

    _record: CallRecord

    @property
    def execution(self) -> ToolExecution:
        return self._record.execution

    @property
    def signal(self) -> CancelSignal:
        return self._record.signal

    @property
    def call_id(self) -> str:
        return self._record.call_id

    @property
    def name(self) -> str:
        return self._record.name

    @property
    def arguments(self) -> Any:
        return self._record.arguments

    @property
    def agent(self) -> AgentScope | None:
        return self._record.agent

    @property
    def parent(self) -> ToolExecutionToken | None:
        return self._record.parent

    @property
    def token(self) -> ToolExecutionToken:
        return self._record.token

    @property
    def batch_id(self) -> str | None:
        return self._record.batch_id

    @property
    def deps(self) -> Any:
        return self._record.deps

    def defer_context(self, context: HookContext) -> None:
        self._record.defer_context(context)


def attempt_context(call: CallRecord) -> AttemptContext:
    """A fresh run context for one attempt of ``call``'s body (one small allocation)."""
    context: AttemptContext = _new(AttemptContext)  # without ToolRunContext.__new__
    context._record = call
    return context


_new: Final = object.__new__


class _BodySignal(CancelSignal):
    """The signal a body sees under a deadline or a replacement: fires with any source.

    Under a deadline it reads as fired (with the deadline's reason) once trio's clock
    has passed it — polled, from the trio thread or a worker thread; nothing calls
    back at the deadline itself (the body's deadline scope is what interrupts it).
    """

    __slots__ = ("_clock", "_deadline", "_latched", "_sources")

    def __init__(self, sources: tuple[CancelSignal, ...], deadline: float | None) -> None:
        self._latched = False
        super().__init__()
        self._sources = sources
        self._deadline = deadline
        self._clock = _clock() if deadline is not None else None
        for source in sources:
            if source.cancelled:
                self._fire(source.reason)
                return
        for source in sources:
            link(source, self._from_source)

    @property
    def cancelled(self) -> bool:
        if self._latched:
            return True
        deadline = self._deadline
        if deadline is not None:
            clock = self._clock
            assert clock is not None
            if clock() >= deadline:
                self._fire(_DeadlineReason(deadline))
                return True
        return False

    @cancelled.setter
    def cancelled(self, value: bool) -> None:
        self._latched = value

    def cancel(self, reason: Any = None) -> None:
        if not self._latched:
            self._fire(reason)

    def _from_source(self, source: CancelSignal) -> None:
        if not self._latched:
            self._fire(source.reason)

    def close(self) -> None:
        for source in self._sources:
            unlink(source, self._from_source)

    async def wait(self) -> None:
        deadline = self._deadline
        if deadline is None:
            await super().wait()
            return
        if trio.lowlevel.in_trio_run():
            with trio.move_on_at(deadline):
                await super().wait()
        else:  # a body of the asyncio driver's deadline group
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout_at(deadline):
                    await super().wait()
        self.cancelled  # noqa: B018  (latches the deadline when it has passed)


def _clock() -> Callable[[], float]:
    """The running loop's clock: trio's in a trio run, else the asyncio loop's."""
    if trio.lowlevel.in_trio_run():
        return trio.lowlevel.current_clock().current_time
    return asyncio.get_running_loop().time


class _DeadlineReason:
    """The reason a body signal reports once its deadline has passed."""

    __slots__ = ("deadline",)

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline

    def __repr__(self) -> str:
        return "<deadline passed>"
