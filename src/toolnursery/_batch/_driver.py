"""The batch driver: one model response's calls, run in model order.

See :mod:`toolnursery._batch._scheduler` for the rules; this is :class:`ToolBatch`, the driver.
It places each started call: in place (a barrier, a lone call, a dispatch that cannot
suspend) or in its :class:`~toolnursery._batch._pool.WorkerPool`.
"""

from __future__ import annotations

import time
from collections.abc import Coroutine
from contextvars import Token
from typing import Any

import trio

from .._core._content import ToolCall, ToolExecutionResult
from .._core._decisions import PARALLEL, ResourceKey
from .._core._progress import ReportSink, install_sink, remove_sink
from .._core._signal import CancelSignal, ScopeLink
from .._core._statistics import Counters, ToolStatistics, outcome
from .._core._statistics import now as _now
from .._pipeline._call import PENDING, RESOLVED, UNPARSED, CallRecord, Slot
from .._pipeline._classify import classify
from .._pipeline._dispatch import dispatch
from .._pipeline._registry import ToolRegistry, ToolScope
from .._pipeline._stages import policy_now, start
from . import _intake
from ._admission import Admission
from ._commit import BatchCommits
from ._pool import WorkerPool
from ._recorder import (
    CallMode,
    ToolCallEvent,
    ToolCallRecorder,
)

__all__ = ["ToolBatch"]


# What the driver must still await after ToolBatch._start (see there).
_QUEUED = 0
_PREPARE = 1
_INLINE = 2

_new = object.__new__
_NEW = Slot.NEW
_QUEUED_SLOT = Slot.QUEUED
_RUNNING = Slot.RUNNING
_SETTLED = Slot.SETTLED


class ToolBatch(BatchCommits):
    """A batch being run; made by :func:`open_tool_batch`.

    Submit calls as the model streams them, :meth:`close` when the response is
    complete, and iterate (``async for call, result in batch``) to receive the pairs
    in model order as they commit.
    """

    def __init__(
        self,
        registry: ToolRegistry,
        signal: CancelSignal,
        agent: ToolScope | None,
        max_parallel: int,
        recorder: ToolCallRecorder | None,
        batch_id: str | None = None,
        hook_abort_grace: float | None = None,
        *,
        deps: Any = None,
    ) -> None:
        self.registry = registry
        self.deps = deps  # what the batch's bodies read as ctx.deps
        self.signal = signal
        self.agent = agent
        self.max_parallel = max_parallel
        self.recorder = recorder
        self.id: str = _intake.new_batch_id() if batch_id is None else batch_id
        self._timings = registry.phase_timings
        # Seconds the policy hooks may still run after an abort (None: the registry's).
        self._grace = registry._hook_abort_grace if hook_abort_grace is None else hook_abort_grace
        self._calls: list[CallRecord] = []
        self._ids: set[str] = set()
        self._closed = False
        self._admission = Admission(max_parallel, self._wake)
        self._stats = Counters()  # phase times and abandoned calls of this batch
        self._started = 0  # calls started, a model-order prefix
        self._cursor = 0  # calls committed, a model-order prefix
        self._finalized = False  # the call at the cursor passed finalize, then failed
        self._results: list[ToolExecutionResult] = []
        self._nursery: trio.Nursery | None = None  # the batch nursery, set by _run
        self._scope: trio.CancelScope | None = None  # the driver's, inside the nursery
        self._policy_rest: Coroutine[Any, Any, None] | None = None  # see _start
        self._handed_off = False  # the workers commit (see _hand_off)
        self._reports: Token[ReportSink | None] | None = None  # the progress sink's
        self._pool: WorkerPool | None = None  # made on the first pooled dispatch
        self._wake_driver = trio.Event()
        self._wake_reader: trio.Event | None = None  # made when a reader first waits
        self._finished = False
        self._failure: Exception | None = None
        self._read = 0
        self._report_index: dict[str, int] = {}  # call id -> index, for progress events
        # With a recorder, events carry times: the run's start on trio's clock and the
        # wall clock, and per call in the pool [admitted, began, ended] (trio's clock).
        self._stamps: dict[int, list[float | None]] | None = None
        self._t0 = 0.0
        self._wall = 0.0
        if recorder is not None:
            self._stamps = {}
            self._t0 = trio.current_time()
            self._wall = round(time.time(), 6)

    # -- the caller's side ------------------------------------------------------------

    def submit(self, call: ToolCall) -> int:
        """Add the next call (model order); returns its index in the batch.

        A call whose id repeats an earlier call's id in this batch does not run: it
        gets the result ``Error: duplicate tool call id "<id>" in this batch`` with
        ``error={name: "DuplicateCallIdError", code: "DUPLICATE_CALL_ID"}``. A call
        whose arguments cannot be arguments (see :func:`parse_arguments`) does not run
        either: it gets ``Error: invalid arguments: <why>`` (code ``INVALID_ARGS``).

        Raises:
            TypeError: ``call`` is not a :class:`ToolCall`.
            RuntimeError: the batch is closed.
        """
        if self._closed:
            raise RuntimeError("this batch is closed; submit() takes calls only before close()")
        index = self._add(call)
        self._wake_driver.set()
        return index

    def _add(self, call: ToolCall) -> int:
        if type(call) is not ToolCall and not isinstance(call, ToolCall):
            raise TypeError(f"a batch takes ToolCall values, not {type(call).__name__}")
        calls = self._calls
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
        record.timings = self._timings
        ids = self._ids
        if call.id in ids:
            record.fixed = _intake.duplicate(call.id)
        else:
            ids.add(call.id)
        calls.append(record)
        return record.index

    def close(self) -> None:
        """End submission: the batch finishes once every submitted call has committed."""
        self._closed = True
        self._wake_driver.set()
        pool = self._pool
        if pool is not None and self._started >= len(self._calls):
            pool.close()  # nothing more to dispatch: parked workers end

    @property
    def results(self) -> list[ToolExecutionResult]:
        """The results committed so far, in model order."""
        return list(self._results)

    def statistics(self) -> ToolStatistics:
        """A frozen snapshot of this batch: its calls, their outcomes, phase times.

        ``started`` and ``committed`` count every call of the batch, the synthetic
        ``ABORTED_BEFORE_DISPATCH`` results and duplicate-id errors included; the
        registry's :meth:`~ToolRegistry.statistics` counts only what passed it.
        ``phase_seconds`` is filled when the registry's ``phase_timings`` was on as
        the batch opened.
        """
        codes: dict[str, int] = {}
        for result in self._results:
            key = outcome(result)
            codes[key] = codes.get(key, 0) + 1
        return self._stats.snapshot(self._started, self._cursor, codes, self._admission.waiting)

    def __aiter__(self) -> ToolBatch:
        return self

    async def __anext__(self) -> tuple[ToolCall, ToolExecutionResult]:
        while self._read >= len(self._results):
            if self._finished:
                raise StopAsyncIteration
            event = self._wake_reader
            if event is None or event.is_set():
                event = self._wake_reader = trio.Event()
            await event.wait()
        index = self._read
        self._read += 1
        tool_call = self._calls[index].tool_call
        assert tool_call is not None
        return tool_call, self._results[index]

    # -- the driver -------------------------------------------------------------------

    def _wake(self) -> None:
        self._wake_driver.set()

    async def _drive(self) -> None:
        """Open the batch nursery and drive the batch in it (the pool runs there too).

        An abort cancels the nursery's scope (every pooled call at once) and shields the
        driver's scope, so the driver still drains, commits and observes the calls that
        settle while the workers unwind, before the nursery's ``Cancelled`` ends there.
        """
        try:
            async with trio.open_nursery() as nursery:
                with trio.CancelScope() as scope:
                    self._scope = scope
                    await self._run(nursery)
        except BaseException:
            if self._handed_off:
                self._end(ended=False)
            raise
        if self._handed_off:
            await self._after_pool()

    async def _after_pool(self) -> None:
        """The end of a handed-off batch (see :meth:`_hand_off`), once its pool has ended:
        commit what the workers left (a post-execute that awaits, say)."""
        ended = False
        try:
            if self._failure is not None:
                raise self._failure
            await self._drain()  # every dispatch has settled: nothing to wait for
            self._record_contexts()
            ended = True
        finally:
            self._end(ended)

    async def _run(self, nursery: trio.Nursery | None) -> None:
        """Drive the batch to the end; the pool goes into ``nursery`` (``None``: a batch
        of at most one call, which runs inline and needs no pool)."""
        self._nursery = nursery
        # The batch signal is private to this batch, so the link dies with it.
        self.signal._link(self._on_abort)
        # The calls' progress reports become durable events (the tasks the batch
        # starts inherit this context, so pooled bodies report here too).
        if self.recorder is not None:
            self._reports = install_sink(self._record_report)
        ended = False
        try:
            await self._schedule()
            if nursery is not None and self._hand_off():
                return
            await self._drain()
            while True:
                self._finish_unstarted()
                if self._closed:
                    break
                await self._wait()
            self._record_contexts()
            ended = True
        except Exception as exc:
            # Internal failure: start nothing new, let in-flight dispatches settle,
            # re-raise the first failure.
            failure = self._failure
            if failure is None:
                self._failure = failure = exc
            while self._admission.admitted:
                await self._sleep()
            if failure is exc:
                raise
            raise failure  # noqa: B904 (the first failure, re-raised as itself)
        finally:
            if not self._handed_off:
                self._end(ended)

    def _end(self, ended: bool) -> None:
        """The batch has ended (``ended``: every call committed, nothing in flight)."""
        reports = self._reports
        if reports is not None:
            self._reports = None
            remove_sink(reports)
        pool = self._pool
        if pool is None:
            pass
        elif ended:
            # Every call committed and nothing is in flight: the parked workers end
            # and the pool closes, with no cancellation to deliver.
            pool.finish()
        else:
            pool.cancel()
        self._fold_statistics()
        self._finished = True
        self._wake_readers()

    def _on_abort(self, _: CancelSignal) -> None:
        pool = self._pool
        if pool is not None:
            self._abort_pool(pool)
        self._wake_driver.set()

    def _abort_pool(self, pool: WorkerPool) -> None:
        """Cancel the batch nursery (the pooled calls), the driver shielded from it."""
        scope = self._scope
        if scope is not None:
            scope.shield = True
        pool.cancel()

    async def _schedule(self) -> None:
        calls = self._calls
        signal = self.signal
        admission = self._admission
        i = 0
        while True:
            if i >= len(calls):
                if self._closed:
                    return
                await self._wait()
                continue
            if signal._cancelled:
                return
            keys = self._classify(calls[i])
            if keys is None:
                # Exclusive: a barrier. The previous group has drained already.
                call = calls[i]
                step = self._start(call, (), inline=True, barrier=True)
                if step:
                    await self._proceed(call, (), step, inline=True)
                i += 1
                await self._drain()
                continue
            call = calls[i]
            alone = self._closed and i == len(calls) - 1
            step = self._start(call, keys, inline=alone)
            if step:
                await self._proceed(call, keys, step, inline=alone)
            i += 1
            while True:
                cursor = self._cursor
                if cursor < len(calls) and calls[cursor].slot is _SETTLED:
                    await self._commit_ready()
                if i >= len(calls):
                    if self._closed:
                        return
                    await self._wait()
                    continue
                if signal._cancelled:
                    return
                # Waiting calls hold no slot, but at most max_parallel of them wait.
                if admission.full():
                    await self._wait()
                    continue
                keys = self._classify(calls[i])
                if keys is None:
                    break
                call = calls[i]
                alone = self._closed and i == len(calls) - 1 and not admission.admitted
                step = self._start(call, keys, inline=alone)
                if step:
                    await self._proceed(call, keys, step, inline=alone)
                i += 1
            await self._drain()

    def _classify(self, call: CallRecord) -> tuple[ResourceKey, ...] | None:
        """How the call may run now, with the current registry.

        ``None``: exclusive (a barrier); ``()``: beside anything in the pool; keys:
        beside everything but the earlier unfinished calls it conflicts with.
        """
        if call.fixed is not None:
            return ()  # runs nothing, so it never needs to be a barrier
        arguments = _intake.arguments(call)
        if call.fixed is not None:
            return ()
        plan = call.plan = self.registry._compiler.plan(call.name, self.agent)
        definition = plan.definition
        if definition is None:
            return None
        mode = classify(definition, arguments)
        if mode is PARALLEL:
            return ()
        if mode.kind == "keyed":
            return mode.keys
        return None

    def _start(
        self,
        call: CallRecord,
        keys: tuple[ResourceKey, ...],
        *,
        inline: bool,
        barrier: bool = False,
    ) -> int:
        """Record the call and start it; queue it for a worker when nothing need be awaited.

        Returns what the driver must still await (:meth:`_proceed`): ``_PREPARE`` (the
        pre-execute hooks and guards, then the dispatch) or ``_INLINE`` (the dispatch,
        in the driver); ``_QUEUED`` when the call is settled or queued already.
        """
        if self._failure is not None:
            raise self._failure
        self._started += 1
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
                    ToolCallEvent(
                        self.id, call.index, logged, self._wall, self._offset(), mode, keys
                    )
                )
            except Exception:
                call.plan = None  # it never reached the registry: not its to abandon
                raise
        if call.fixed is not None:
            assert call.slot is _NEW
            call.slot = _SETTLED
            return _QUEUED
        plan = call.plan
        assert plan is not None
        start(call, plan, call.args, frozen=call.frozen)
        if call.state is PENDING and plan.hooks.any_prepare:
            # The policy hooks, run by hand up to their first suspension (most never
            # suspend): only a policy that does suspend costs a coroutine of ours.
            if self._timings:
                begun = _now()
                rest = policy_now(call, self._grace)
                self._stats.prepare += _now() - begun
            else:
                rest = policy_now(call, self._grace)
            if rest is not None:
                self._policy_rest = rest
                return _PREPARE
        return self._place(call, keys, inline)

    async def _proceed(
        self, call: CallRecord, keys: tuple[ResourceKey, ...], step: int, *, inline: bool
    ) -> None:
        """The awaited rest of :meth:`_start`: prepare (``_PREPARE``) and dispatch."""
        pool = self._pool
        if pool is not None and pool.owed:
            pool.flush()
        if step == _PREPARE:
            rest = self._policy_rest
            assert rest is not None
            self._policy_rest = None
            if self._timings:
                begun = _now()
                await rest
                self._stats.prepare += _now() - begun
            else:
                await rest
            if self._failure is not None:
                raise self._failure
            step = self._place(call, keys, inline)
        if step == _INLINE:
            await self._dispatch_inline(call)

    def _place(self, call: CallRecord, keys: tuple[ResourceKey, ...], inline: bool) -> int:
        """Settle a decided call, or queue a pending one; ``_INLINE``: dispatch it here."""
        assert call.slot is _NEW
        if call.state is not PENDING:
            call.slot = _SETTLED
            return _QUEUED
        plan = call.plan
        assert plan is not None
        if not inline and not keys and plan.version != plan.versions.value:
            plan = plan.current()
        if inline or (not keys and plan.bare and not plan.route.suspends):
            # Runs alone, or cannot suspend (so it could overlap nothing): no task.
            return _INLINE
        call.slot = _QUEUED_SLOT
        call.gate = self
        stamps = self._stamps
        if stamps is not None:
            stamps[call.index] = [trio.current_time(), None, None]
        self._admission.admit(call, keys)
        # A call whose view's only or outermost wrapper is the timeout policy, and which
        # runs now, may share a deadline scope with the calls of its budget.
        pool = self._pool
        if pool is None:
            pool = self._pool = self._open_pool()
        pool.submit(call, plan.outer_budget)
        if self._closed and self._started >= len(self._calls):
            pool.close()  # the last call: the other parked workers end
        return _QUEUED

    def _open_pool(self) -> WorkerPool:
        nursery = self._nursery
        assert nursery is not None
        pool = WorkerPool(
            nursery,
            signal=self.signal,
            admission=self._admission,
            stats=self._stats,
            clock=_now if self._timings else None,
            stamps=self._stamps,
            wake=self._settled,
            failed=self._failed,
        )
        if self.signal._cancelled:
            self._abort_pool(pool)  # aborted while the call was being prepared
        return pool

    async def _dispatch_inline(self, call: CallRecord) -> None:
        """Dispatch in the driver, under a scope the batch signal cancels."""
        begun = _now() if self._timings else 0
        assert call.slot is _NEW
        call.slot = _RUNNING
        stamps = self._stamps
        if stamps is not None:
            stamps[call.index] = stamp = [None, trio.current_time(), None]
        plan = call.plan
        assert plan is not None
        if plan.bare and not plan.route.suspends:
            await dispatch(call, carried=True)  # nothing to interrupt: no scope
        else:
            scope = trio.CancelScope()
            link = ScopeLink(scope)
            signal = self.signal
            signal._link(link)
            try:
                with scope:
                    await dispatch(call, carried=True)
            finally:
                signal._unlink(link)
            if scope.cancelled_caught:
                call.resolve(call.aborted(), RESOLVED)
        if self._timings:
            self._stats.dispatch += _now() - begun
        if stamps is not None:
            stamp[2] = trio.current_time()
        call.slot = _SETTLED

    # The pipeline's Gate: a pooled call's gate is its batch.

    def _leave(self, call: CallRecord) -> None:
        self._admission.leave(call)

    async def _rejoin(self, call: CallRecord) -> None:
        await self._admission.rejoin(call)

    async def _sleep(self) -> None:
        """Wait until a dispatch settles, a call is submitted, or the batch is closed.

        If that happened since the last wait, return at once (the caller re-checks its
        state and waits again if nothing changed), without a round through the
        scheduler.
        """
        pool = self._pool
        if pool is not None and pool.owed:
            pool.flush()  # before the driver awaits: see WorkerPool.flush
        event = self._wake_driver
        if event.is_set():
            self._wake_driver = trio.Event()
        else:
            await event.wait()

    async def _wait(self) -> None:
        """:meth:`_sleep`, then raise the first internal failure of a worker, if any."""
        await self._sleep()
        if self._failure is not None:
            raise self._failure

    async def _drain(self) -> None:
        """Wait until nothing is in flight and every started call has committed."""
        while True:
            await self._commit_ready()
            if not self._admission.admitted and self._cursor >= self._started:
                return
            await self._wait()
