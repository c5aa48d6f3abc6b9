"""A batch's life, as a machine: records, classification, admission, the commit cursor and
the statistics; it returns the next step to its driver instead of awaiting it.

The driver (:mod:`toolnursery._batch._driver` on trio) walks the calls in model order and
asks the machine, for each: :meth:`BatchMachine.classify` (a barrier, beside anything, or
beside all but conflicting keys), :meth:`~BatchMachine.start` (recorded, begun, the policy
hooks run by hand up to their first suspension) and :meth:`~BatchMachine.place` (admitted:
dispatched in place, or handed to a worker). A policy or post-execute hook that suspends
comes back as an awaitable for the driver to await; every other step is a plain method
call. Whoever settles a call (a worker, the driver) calls :meth:`~BatchMachine.commit_now`,
which commits the settled model-order prefix (post-execute, observers, the durable result)
as far as nothing awaits. The clock and the event type are the driver's (``clock``,
``new_latch``): nothing here imports an event loop.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Final

import msgspec

from .._core._content import ToolCall, ToolExecutionResult
from .._core._decisions import PARALLEL, ResourceKey
from .._core._lifecycle import FINAL, PENDING, RESOLVED, Slot
from .._core._outcomes import ABORTED_BEFORE_DISPATCH_RESULT
from .._core._signal import CancelSignal
from .._core._statistics import Counters
from .._core._statistics import now as _now
from .._pipeline._call import UNPARSED, CallRecord
from .._pipeline._classify import classify
from .._pipeline._stages import conclude, finalize_now, policy_now
from .._pipeline._stages import start as begin_call
from . import _intake
from ._admission import Admission, Flag, Latch
from ._events import (
    CallMode,
    ToolCallEvent,
    ToolCallRecorder,
    ToolResultEvent,
)
from ._log import BatchLog

if TYPE_CHECKING:
    from .._pipeline._plan import ToolPlan
    from .._pipeline._registry import ToolRegistry, ToolScope

__all__ = ["BARRIER", "DONE", "HAND_OFF_MAX", "HOLD", "INLINE", "POOL", "BatchMachine"]

DONE: Final = 0
"""A step of :meth:`BatchMachine.start` / :meth:`~BatchMachine.place`: the call is settled
(or will be by whoever runs it): nothing for the driver to run."""
INLINE: Final = 1
"""Dispatch the call in the driver, now (it runs alone, or cannot suspend)."""
POOL: Final = 2
"""The call is admitted (``QUEUED``): hand it to a worker."""
BARRIER: Final = 3
"""The call is exclusive: the driver drains the batch, then starts it alone."""
HOLD: Final = 4
"""(:meth:`~BatchMachine.step` while ``hold`` is set.) Classified (keys in ``keys``), with
policy hooks that may suspend: :meth:`~BatchMachine.start` it where they may be awaited."""

HAND_OFF_MAX: Final = 16
"""The most dispatches in flight for which a driver leaves the commits to its workers
once every call has started: it saves the driver a wake-up per batch and costs each
commit about a third of a µs more."""

_new: Final = object.__new__
_NEW: Final = Slot.NEW
_QUEUED: Final = Slot.QUEUED
_RUNNING: Final = Slot.RUNNING
_SETTLED: Final = Slot.SETTLED
_COMMITTED: Final = Slot.COMMITTED


def _no_time() -> float:
    return 0.0


class BatchMachine(BatchLog):
    """One batch's state (see the module docstring); its driver runs it.

    Args:
        registry: the registry whose pipeline every call passes.
        signal: the batch's own signal.
        agent: the scope the calls run for.
        max_parallel: the most bodies in flight at once.
        recorder: receives the durable events, or ``None``.
        batch_id: the batch's id (a fresh one when ``None``).
        grace: seconds the policy hooks may still run after an abort (``None``: the
            registry's).
        deps: what the batch's bodies read as ``ctx.deps``.
        wake: called when the driver may go on (a waiting call got its slot).
        clock: the driver's monotonic clock in seconds (event times).
        new_latch: the driver's event type (what waiting calls wait on).
    """

    __slots__ = (
        "admission",
        "agent",
        "calls",
        "clock",
        "closed",
        "cursor",
        "deps",
        "failure",
        "finalized",
        "grace",
        "hold",
        "id",
        "ids",
        "keys",
        "last",
        "reader",
        "recorder",
        "registry",
        "report_index",
        "results",
        "signal",
        "stamps",
        "started",
        "stats",
        "t0",
        "timings",
        "wall",
    )

    def __init__(
        self,
        registry: ToolRegistry,
        signal: CancelSignal,
        agent: ToolScope | None,
        max_parallel: int,
        recorder: ToolCallRecorder | None,
        batch_id: str | None = None,
        grace: float | None = None,
        deps: Any = None,
        *,
        wake: Callable[[], None] = lambda: None,
        clock: Callable[[], float] = _no_time,
        new_latch: Callable[[], Latch] = Flag,
        wall: float = 0.0,
    ) -> None:
        self.registry: ToolRegistry = registry
        self.signal: CancelSignal = signal
        self.agent: ToolScope | None = agent
        self.recorder: ToolCallRecorder | None = recorder
        self.id: str = _intake.new_batch_id() if batch_id is None else batch_id
        self.deps: Any = deps
        self.timings: bool = registry.phase_timings
        self.grace: float = registry.hook_abort_grace if grace is None else grace
        self.calls: list[CallRecord] = []
        self.ids: set[str] = set()
        self.closed: bool = False
        self.keys: tuple[ResourceKey, ...] = ()  # the keys of the call step() started last
        self.hold: bool = False  # step() returns HOLD for a call with policy hooks
        self.last: ToolPlan | None = None  # the plan step() looked up last
        self.admission: Admission = Admission(max_parallel, wake, new_latch)
        self.stats: Counters = Counters()  # phase times and abandoned calls of this batch
        self.started: int = 0  # calls started, a model-order prefix
        self.cursor: int = 0  # calls committed, a model-order prefix
        self.finalized: bool = False  # the call at the cursor passed finalize, then failed
        self.results: list[ToolExecutionResult] = []
        self.failure: Exception | None = None  # the first internal failure
        self.reader: Latch | None = None  # set when a result commits (a waiting reader)
        self.clock: Callable[[], float] = clock
        self.report_index: dict[str, int] = {}  # call id -> index, for progress events
        # With a recorder, events carry times: the run's start on the driver's clock and
        # the wall clock, and per pooled call [admitted, began, ended].
        self.stamps: dict[int, list[float | None]] | None = None
        self.t0: float = 0.0
        self.wall: float = wall
        if recorder is not None:
            self.stamps = {}
            self.t0 = clock()

    # -- intake ------------------------------------------------------------------------

    def add(self, call: ToolCall) -> int:
        """Take the next call (model order); returns its index.

        Raises:
            TypeError: ``call`` is not a :class:`ToolCall`.
        """
        if type(call) is not ToolCall and not isinstance(call, ToolCall):
            raise TypeError(f"a batch takes ToolCall values, not {type(call).__name__}")
        calls = self.calls
        # CallRecord(...), without type.__call__ packing the keywords in a dict per call.
        record = _new(CallRecord)
        CallRecord.__init__(
            record,
            call_id=call.id,
            name=call.name,
            signal=self.signal,
            agent=self.agent,
            index=len(calls),
            tool_call=call,
            batch_id=self.id,
            deps=self.deps,
        )
        record.timings = self.timings
        ids = self.ids
        if call.id in ids:
            record.fixed = _intake.duplicate(call.id)
        else:
            ids.add(call.id)
        calls.append(record)
        return record.index

    def classify(self, call: CallRecord) -> tuple[ResourceKey, ...] | None:
        """How the call may run now, with the current registry.

        ``None``: exclusive (a barrier); ``()``: beside anything in the pool; keys:
        beside everything but the earlier unfinished calls it conflicts with.
        """
        if call.fixed is not None:
            return ()  # runs nothing, so it never needs to be a barrier
        arguments = _intake.arguments(call)
        if call.fixed is not None:
            return ()
        plan = call.plan = self.registry._plan(call.name, self.agent)
        definition = plan.definition
        if definition is None:
            return None
        mode = classify(definition, arguments)
        if mode is PARALLEL:
            return ()
        if mode.kind == "keyed":
            return mode.keys
        return None

    # -- starting ------------------------------------------------------------------------

    def start(
        self, call: CallRecord, keys: tuple[ResourceKey, ...], inline: bool, barrier: bool
    ) -> int | Coroutine[Any, Any, None]:
        """Record the call and begin it, its policy hooks run by hand.

        Returns the rest of the policy (a coroutine the driver awaits, then
        :meth:`place`) when a hook suspended, else what :meth:`place` returns.
        """
        if self.failure is not None:
            raise self.failure
        self.started += 1
        if call.fixed is None and call.args is UNPARSED:  # else classified already
            _intake.arguments(call)
        recorder = self.recorder
        if recorder is not None:
            tool_call = call.tool_call
            assert tool_call is not None
            logged = tool_call if call.fixed is None else _intake.loggable(tool_call)
            try:
                mode: CallMode = "exclusive" if barrier else "keyed" if keys else "parallel"
                recorder.record(
                    ToolCallEvent(self.id, call.index, logged, self.wall, self.offset(), mode, keys)
                )
            except Exception:
                call.plan = None  # it never reached the registry: not its to abandon
                raise
        if call.fixed is not None:
            call.settle_fixed()
            return DONE
        plan = call.plan
        assert plan is not None
        begin_call(call, plan, call.args, frozen=call.frozen)
        if call.state is PENDING and plan.hooks.any_prepare:
            # The policy hooks, run by hand up to their first suspension (most never
            # suspend): only a policy that does suspend costs a coroutine of ours.
            if self.timings:
                begun = _now()
                rest = policy_now(call, self.grace)
                self.stats.prepare += _now() - begun
            else:
                rest = policy_now(call, self.grace)
            if rest is not None:
                return rest
        return self.place(call, keys, inline)

    def step(self, call: CallRecord, alone: bool) -> int | Coroutine[Any, Any, None]:
        """The next call, in one step: classified, then (unless it is a barrier, which
        the driver starts with :meth:`start` once the batch has drained) started and
        placed. ``alone``: it would run with nothing beside it (dispatched in place).

        Returns ``BARRIER``, or what :meth:`start` returns.
        """
        # self.classify(call), inlined (the hot path):
        if call.fixed is not None:
            keys: tuple[ResourceKey, ...] = ()
        else:
            arguments = call.args
            if arguments is UNPARSED:
                arguments = _intake.arguments(call)
            if call.fixed is not None:
                keys = ()
            else:
                # The plan of the previous call when it is the same tool's, still current
                # (a model's calls often repeat one tool): else the registry's.
                last = self.last
                if (
                    last is None
                    or last.name != call.name
                    or last.version != last.versions.value
                    or last.definition is None
                ):
                    last = self.last = self.registry._plan(call.name, self.agent)
                call.plan = last
                definition = last.definition
                if definition is None:
                    return BARRIER
                mode = classify(definition, arguments)
                if mode is PARALLEL:
                    keys = ()
                elif mode.kind == "keyed":
                    keys = mode.keys
                else:
                    return BARRIER
        self.keys = keys  # the placement's, should the policy suspend (see place)
        if self.hold and call.fixed is None and call.plan.hooks.any_prepare:  # type: ignore[union-attr]
            return HOLD
        if keys or self.recorder is not None or self.failure is not None or call.fixed:
            return self.start(call, keys, alone, False)
        # self.start(call, (), alone, False), inlined for the common case (no recorder,
        # no keys, no policy hook), and self.place() with it:
        self.started += 1
        plan: ToolPlan = call.plan  # type: ignore[assignment]
        if call.frozen and not call.caller.cancelled:
            plan.stats.started += 1  # begin_call(call, plan, call.args, frozen=True), inlined
        else:
            begin_call(call, plan, call.args, frozen=call.frozen)
            if call.state is not PENDING:
                call.slot = _SETTLED
                return DONE
        if plan.hooks.any_prepare:
            if self.timings:
                begun = _now()
                rest = policy_now(call, self.grace)
                self.stats.prepare += _now() - begun
            else:
                rest = policy_now(call, self.grace)
            if rest is not None:
                return rest
            return self.place(call, (), alone)
        if plan.version != plan.versions.value:
            plan = plan.current()
        if alone or (plan.bare and not plan.route.suspends):
            return INLINE
        call.slot = _QUEUED
        admission = self.admission
        if admission.running < admission.cap:
            # admission.admit(call, ()), inlined: it runs now.
            admission.admitted += 1
            admission.running += 1
        else:
            admission.admit(call, ())
        return POOL

    def place(self, call: CallRecord, keys: tuple[ResourceKey, ...], inline: bool) -> int:
        """Settle a decided call, or admit a pending one: ``INLINE`` (dispatch it in the
        driver, now), ``POOL`` (a worker's, ``QUEUED``) or ``DONE``."""
        assert call.slot is _NEW
        if call.state is not PENDING:
            call.slot = _SETTLED
            return DONE
        plan = call.plan
        assert plan is not None
        if not inline and not keys and plan.version != plan.versions.value:
            plan = plan.current()
        if inline or (not keys and plan.bare and not plan.route.suspends):
            # Runs alone, or cannot suspend (so it could overlap nothing): no task.
            return INLINE
        call.slot = _QUEUED
        admission = self.admission
        if not keys and admission.running < admission.cap:
            # admission.admit(call, ()), inlined: it runs now.
            admission.admitted += 1
            admission.running += 1
        else:
            admission.admit(call, keys)
        return POOL

    def full(self) -> bool:
        """Whether the driver must wait before it starts another call."""
        return self.admission.full()

    def in_flight(self) -> int:
        return self.admission.admitted  # dispatches admitted and not settled

    def settled(self, call: CallRecord) -> None:
        """A pooled dispatch ended (or was unwound): its slot and keys are free."""
        self.admission.settle(call)

    def failed(self, exc: Exception) -> None:
        """A dispatch or a commit failed internally: the driver re-raises the first."""
        if self.failure is None:
            self.failure = exc

    def raise_failure(self) -> None:
        if self.failure is not None:
            raise self.failure  # the first internal failure

    # -- committing ----------------------------------------------------------------------

    def drained(self) -> bool:
        """Nothing in flight, and every started call committed."""
        return not self.admission.admitted and self.cursor >= self.started

    def post_due(self) -> bool:
        """Whether a call still to commit has a post-execute hook."""
        return any(c.plan is not None and c.plan.hooks.post for c in self.calls[self.cursor :])

    def commit_now(
        self, *, post: bool = True
    ) -> tuple[CallRecord, Coroutine[Any, Any, ToolExecutionResult], int] | None:
        """Commit the settled model-order prefix as far as no commit awaits.

        Returns the call at the cursor whose post-execute suspended, with the rest of it
        to await and when its finalize began (the driver awaits it, then
        :meth:`finish_commit`), or ``None``. ``post=False`` (a worker): stop at a call
        whose post-execute is due instead of running it.
        """
        calls = self.calls
        timings = self.timings
        recorder = self.recorder
        results = self.results
        if not timings and recorder is None and self.failure is None:
            return self.commit_plain(post)
        while self.cursor < len(calls):
            call = calls[self.cursor]
            if call.slot is not _SETTLED:
                return None
            if call.plan is None or call.fixed is not None:
                result = call.fixed
                assert result is not None
                passed = False
            else:
                passed = True
                plan = call.plan
                if plan.version != plan.versions.value:  # call.current_plan(), inline
                    plan = call.current_plan()  # a listener added meanwhile runs
                hooks = plan.hooks
                due = hooks.post and call.state is RESOLVED
                if due and not post:
                    return None
                if timings and hooks.any_finalize:
                    begun = _now()
                    done = finalize_now(call, self.grace) if due else conclude(call, plan)
                    if type(done) is not ToolExecutionResult:
                        return call, done, begun  # type: ignore[return-value]
                    result = done
                    self.stats.finalize += _now() - begun
                elif due:
                    # Post-execute run by hand up to its first suspension: a coroutine
                    # of ours only when it does suspend.
                    done = finalize_now(call, self.grace)
                    if type(done) is not ToolExecutionResult:
                        return call, done, 0  # type: ignore[return-value]
                    result = done
                else:
                    result = conclude(call, plan)  # no post-execute due: no coroutine
            if self.failure is not None or recorder is not None:
                self.commit(call, result, passed)
                continue
            # self.commit(call, result, passed), inlined (the hot path):
            call.slot = _COMMITTED
            results.append(result)
            self.cursor += 1
            reader = self.reader
            if reader is not None:
                reader.set()
        return None

    def commit_plain(
        self, post: bool
    ) -> tuple[CallRecord, Coroutine[Any, Any, ToolExecutionResult], int] | None:
        """:meth:`commit_now` without phase timings, a recorder or a failure (the hot
        path): the same commits, in fewer steps."""
        calls = self.calls
        count = len(calls)
        cursor = self.cursor
        results = self.results
        reader = self.reader
        while cursor < count:
            call = calls[cursor]
            if call.slot is not _SETTLED:
                return None
            plan = call.plan
            if plan is None or call.fixed is not None:
                result = call.fixed
                assert result is not None
            else:
                if plan.version != plan.versions.value:  # call.current_plan(), inline
                    plan = call.current_plan()  # a listener added meanwhile runs
                hooks = plan.hooks
                result = call.result
                if call.state is RESOLVED and hooks.post:
                    if not post:
                        return None
                    # Post-execute run by hand up to its first suspension: a coroutine
                    # of ours only when it does suspend.
                    done = finalize_now(call, self.grace)
                    if type(done) is not ToolExecutionResult:
                        return call, done, 0  # type: ignore[return-value]
                    result = done
                elif result is call.clean and not hooks.result and not call.caller.cancelled:
                    # conclude(call, plan), inlined for a clean success nothing observes.
                    call.state = FINAL
                    plan.stats.ok += 1
                else:
                    result = conclude(call, plan)  # no post-execute due: no coroutine
                if self.failure is not None:  # an observer's failure, say: stop here
                    self.commit(call, result, True)  # type: ignore[arg-type]
                    continue
            call.slot = _COMMITTED
            results.append(result)  # type: ignore[arg-type]
            cursor += 1
            self.cursor = cursor
            if reader is not None:
                reader.set()
        return None

    def finish_commit(self, call: CallRecord, result: ToolExecutionResult, begun: int) -> None:
        """Commit the call whose post-execute suspended (:meth:`commit_now`), once done."""
        if self.timings:
            self.stats.finalize += _now() - begun
        self.commit(call, result, True)

    def commit(self, call: CallRecord, result: ToolExecutionResult, passed: bool) -> None:
        """Record and publish the finalized call at the cursor (``passed``: it passed the
        registry's finalize)."""
        # A failure from here on leaves a call that passed finalize (its observers ran)
        # uncommitted: the registry counted it committed, not abandoned.
        if self.failure is not None:
            self.finalized = passed
            raise self.failure
        recorder = self.recorder
        if recorder is not None:
            # Contexts are recorded once, as context events after all results.
            recorded = (
                msgspec.structs.replace(result, additional_contexts=())
                if result.additional_contexts
                else result
            )
            try:
                recorder.record(self.result_event(call, recorded))
            except Exception:
                self.finalized = passed
                raise
        call.slot = _COMMITTED
        self.results.append(result)
        self.cursor += 1
        reader = self.reader
        if reader is not None:
            reader.set()

    def finish_unstarted(self) -> None:
        """Give every call that never started (abort) a synthetic result, in model order.

        These bypass the registry entirely: no policy, no observers.
        """
        calls = self.calls
        recorder = self.recorder
        while self.cursor < len(calls):
            call = calls[self.cursor]
            call.plan = None  # classified maybe, never started: not the registry's call
            self.started += 1
            if recorder is not None:
                tool_call = call.tool_call
                assert tool_call is not None
                now = self.offset()
                logged = _intake.loggable(tool_call)
                recorder.record(ToolCallEvent(self.id, call.index, logged, self.wall, now))
                recorder.record(
                    ToolResultEvent(
                        self.id, call.index, call.call_id, ABORTED_BEFORE_DISPATCH_RESULT, now
                    )
                )
            assert call.slot is _NEW
            call.slot = _COMMITTED
            self.results.append(ABORTED_BEFORE_DISPATCH_RESULT)
            self.cursor += 1
            reader = self.reader
            if reader is not None:
                reader.set()
