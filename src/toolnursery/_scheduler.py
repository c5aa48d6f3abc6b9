"""The batch driver: run one model response's tool calls, in model order.

One driver walks the calls in model order (the caller's task for ``run_tool_calls``,
a task of the batch for ``open_tool_batch``). It classifies the next call; an
``exclusive`` call is a barrier (everything in flight drains first, then it runs
alone); consecutive ``parallel`` and ``keyed`` calls form a rolling pool capped at
``max_parallel``, each later call reclassified just before it starts. The driver alone
runs *prepare* (pre-execute, approval, guards) and *finalize* (post-execute,
observers, the durable result), so both happen strictly in model order; only
*dispatch* overlaps. Which dispatch may run when is :mod:`toolnursery._admission`'s
business (the cap, waiting, the ready queue); which calls conflict is
:mod:`toolnursery._conflicts`'.

Where dispatch runs: a call that runs alone — an ``exclusive`` barrier, or the last
call of a closed batch with nothing in flight — or that cannot suspend is dispatched
inline by the driver (no task), under a cancel scope linked to the batch signal. Other
calls go to pool workers: at most as many as dispatches are in flight at once, each
reused for the next queued call (a capped batch runs ``max_parallel`` workers, not a
task per call). Workers take their call from a FIFO queue, so bodies start in model
order.

Cancellation: the batch signal is linked to the pool nursery's cancel scope, so one
scope carries an abort to every pooled call, wrapped or not: an execute wrapper sees
``trio.Cancelled`` come out of ``await next()``, and the worker then maps the call to
``ABORTED`` or ``ABORTED_BEFORE_DISPATCH`` by whether its body was invoked. Abort stops
starting, drains and commits what started, then gives every unstarted call a synthetic
``ABORTED_BEFORE_DISPATCH`` result.

Internal failure (a recorder that raises, a stage that raises where it should not):
nothing new starts, in-flight dispatches settle, and the first failure propagates
unwrapped. No result is fabricated for a call that did not commit.
"""

from __future__ import annotations

import math
import os
import uuid
from collections import deque
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any, Final

import msgspec
import trio

from ._admission import Admission
from ._arguments import parse_arguments, safe_arguments
from ._call import PENDING, RESOLVED, UNPARSED, CallRecord
from ._content import TextContent, ToolCall, ToolErrorInfo, ToolExecutionResult
from ._decisions import PARALLEL, ResourceKey
from ._errors import ToolArgsError
from ._json import MAX_JSON_DEPTH, FrozenDict, snapshot
from ._outcomes import ABORTED_BEFORE_DISPATCH_RESULT
from ._pipeline import check_trio as _check_trio
from ._pipeline import dispatch, finalize, policy, start
from ._recorder import ContextEvent, ToolCallEvent, ToolCallRecorder, ToolResultEvent
from ._registry import ToolRegistry, ToolScope, classify
from ._signal import CancelSignal, _ScopeLink, fuse
from ._statistics import Counters, ToolStatistics, outcome
from ._statistics import now as _now

__all__ = ["ToolBatch", "open_tool_batch", "parse_arguments", "run_tool_calls"]

_DUPLICATE: Final = ToolErrorInfo("DuplicateCallIdError", "DUPLICATE_CALL_ID")


def _check_max_parallel(value: object) -> int:
    if type(value) is not int or value < 1:
        raise ValueError(f"max_parallel must be a positive integer, got {value!r}")
    return value


def _check_batch_id(value: object) -> str:
    if type(value) is not str or not value:
        raise ValueError(f"batch_id must be a non-empty string, got {value!r}")
    return value


def _loggable(call: ToolCall) -> ToolCall:
    """The call as a log can hold it: refused arguments replaced by a safe stand-in."""
    arguments = safe_arguments(call.arguments)
    return call if arguments == call.arguments else ToolCall(call.id, call.name, arguments)


def _new_batch_id() -> str:
    """A globally unique batch id: 128 random bits, as 32 hex digits."""
    return uuid.uuid4().hex


def _check_batch(
    registry: ToolRegistry,
    signal: object,
    agent: ToolScope | None,
    max_parallel: object,
    batch_id: object,
) -> None:
    _check_trio()
    _check_max_parallel(max_parallel)
    if signal is not None and not isinstance(signal, CancelSignal):
        raise TypeError(f"signal must be a CancelSignal, not {type(signal).__name__}")
    if agent is not None:
        registry._check_agent(agent)
    if batch_id is not None:
        _check_batch_id(batch_id)


_SCALARS: Final = frozenset((str, int, bool, type(None)))


def _freeze_decoded(value: Any, depth: int = 0) -> Any:
    """Deep-freeze a value fresh from the JSON decoder (as :func:`snapshot` would).

    Decoded JSON is already detached, acyclic and keyed by strings, so only floats
    and depth need checking; anything else goes to :func:`snapshot` (which raises).
    """
    t = type(value)
    if t in _SCALARS:
        return value
    if depth < MAX_JSON_DEPTH:
        if t is dict:
            return FrozenDict(
                {
                    k: v if type(v) in _SCALARS else _freeze_decoded(v, depth + 1)
                    for k, v in value.items()
                }
            )
        if t is list:
            return tuple([_freeze_decoded(v, depth + 1) for v in value])
        if t is float and value - value == 0.0 and (value or math.copysign(1.0, value) > 0):
            return value  # finite, not -0.0
    raise _NotDecoded


class _NotDecoded(Exception):
    pass


def _arguments(call: CallRecord) -> Any:
    """The call's arguments, parsed and frozen once (the classifier and the body see
    the same frozen value, so a classifier cannot change what runs or what was logged).

    Arguments that cannot be arguments at all make the call's fixed result.
    """
    args = call.args
    if args is UNPARSED:
        tool_call = call.tool_call
        assert tool_call is not None
        raw = tool_call.arguments
        try:
            args = parse_arguments(raw)
        except ToolArgsError as exc:
            # Not arguments at all: this call's error result; it never runs.
            call.fixed = ToolExecutionResult(
                (TextContent(f"Error: {exc.message}"),), True, ToolErrorInfo(exc.name, exc.code)
            )
            call.args = None
            return None
        try:
            args = _freeze_decoded(args) if type(raw) is str else snapshot(args)
        except _NotDecoded:
            try:
                args = snapshot(args)
            except Exception:
                pass  # not lossless JSON: start() reports it (B111)
            else:
                call.frozen = True
        except Exception:
            pass  # not lossless JSON: start() reports it (B111)
        else:
            call.frozen = True
        call.args = args
    return args


class ToolBatch:
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
    ) -> None:
        self.registry = registry
        self.signal = signal
        self.agent = agent
        self.max_parallel = max_parallel
        self.recorder = recorder
        self.id = _new_batch_id() if batch_id is None else batch_id
        self._timings = registry.phase_timings
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
        self._pool: trio.Nursery | None = None  # opened on the first pooled dispatch
        self._pool_requested = False
        self._queue: deque[CallRecord] = deque()  # dispatches waiting for a worker
        self._idle = 0  # workers parked, waiting for a dispatch
        self._lot = trio.lowlevel.ParkingLot()
        self._wake_driver = trio.Event()
        self._wake_reader = trio.Event()
        self._finished = False
        self._failure: Exception | None = None
        self._read = 0

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
        record = CallRecord(
            call.id, call.name, self.signal, self.agent, None, len(calls), call, self.id
        )
        record.timings = self._timings
        ids = self._ids
        if call.id in ids:
            record.fixed = ToolExecutionResult(
                (TextContent(f'Error: duplicate tool call id "{call.id}" in this batch'),),
                True,
                _DUPLICATE,
            )
        else:
            ids.add(call.id)
        calls.append(record)
        return record.index

    def close(self) -> None:
        """End submission: the batch finishes once every submitted call has committed."""
        self._closed = True
        self._wake_driver.set()
        if self._idle and self._started >= len(self._calls):
            self._idle = 0
            self._lot.unpark_all()  # nothing more to dispatch: parked workers end

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
            if self._wake_reader.is_set():
                self._wake_reader = trio.Event()
            await self._wake_reader.wait()
        index = self._read
        self._read += 1
        tool_call = self._calls[index].tool_call
        assert tool_call is not None
        return tool_call, self._results[index]

    # -- the driver -------------------------------------------------------------------

    def _wake(self) -> None:
        self._wake_driver.set()

    async def _run(self, nursery: trio.Nursery) -> None:
        """Drive the batch to the end; the pool goes into ``nursery``."""
        self._nursery = nursery
        # The batch signal is private to this batch, so the link dies with it.
        self.signal._link(self._on_abort)
        try:
            await self._schedule()
            await self._drain()
            while True:
                self._finish_unstarted()
                if self._closed:
                    break
                await self._wait()
            self._record_contexts()
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
            raise failure
        finally:
            if self._pool is not None:
                self._pool.cancel_scope.cancel()
            self._fold_statistics()
            self._finished = True
            self._wake_reader.set()

    def _fold_statistics(self) -> None:
        """Add this batch's phase times to the registry's; count calls never committed.

        The phase times reach the registry when the batch ends (one addition per
        phase, not per call). A started call that did not commit (internal failure,
        cancellation from an enclosing scope) is abandoned.
        """
        stats = self._stats
        into = self.registry._stats
        into.prepare += stats.prepare
        into.wait += stats.wait
        into.dispatch += stats.dispatch
        into.finalize += stats.finalize
        cursor, started = self._cursor, self._started
        if cursor >= started:
            return
        stats.abandoned = started - cursor
        # The registry counted a call as committed once it passed finalize.
        unfinalized = self._calls[cursor + self._finalized : started]
        into.abandoned += sum(1 for call in unfinalized if call.plan is not None)

    def _on_abort(self, _: CancelSignal) -> None:
        self._wake_driver.set()

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
                await self._start(calls[i], (), inline=True)
                i += 1
                await self._drain()
                continue
            await self._start(calls[i], keys, inline=self._closed and i == len(calls) - 1)
            i += 1
            while True:
                cursor = self._cursor
                if cursor < len(calls) and calls[cursor].settled:
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
                alone = self._closed and i == len(calls) - 1 and not admission.admitted
                await self._start(calls[i], keys, inline=alone)
                i += 1
            await self._drain()

    def _classify(self, call: CallRecord) -> tuple[ResourceKey, ...] | None:
        """How the call may run now, with the current registry.

        ``None``: exclusive (a barrier); ``()``: beside anything in the pool; keys:
        beside everything but the earlier unfinished calls it conflicts with.
        """
        if call.fixed is not None:
            return ()  # runs nothing, so it never needs to be a barrier
        arguments = _arguments(call)
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

    async def _start(
        self, call: CallRecord, keys: tuple[ResourceKey, ...], *, inline: bool
    ) -> None:
        """Record the call, prepare it, and dispatch it (inline, or to a worker)."""
        if self._failure is not None:
            raise self._failure
        self._started += 1
        if call.fixed is None:
            _arguments(call)
        recorder = self.recorder
        if recorder is not None:
            tool_call = call.tool_call
            assert tool_call is not None
            logged = tool_call if call.fixed is None else _loggable(tool_call)
            recorder.record(ToolCallEvent(self.id, call.index, logged))
        if call.fixed is not None:
            call.settled = True
            return
        plan = call.plan
        assert plan is not None
        start(call, plan, call.args, frozen=call.frozen)
        timings = self._timings
        if call.state == PENDING and plan.hooks.any_prepare:
            if timings:
                begun = _now()
                await policy(call)
                self._stats.prepare += _now() - begun
            else:
                await policy(call)
            if self._failure is not None:
                raise self._failure
        if call.state != PENDING:
            call.settled = True
            return
        plan = call.plan
        assert plan is not None
        if inline or (not keys and plan.current().one_step):
            # Runs alone, or cannot suspend (so it could overlap nothing): no task.
            await self._dispatch_inline(call)
            return
        call.gate = self
        self._admission.admit(call, keys)
        self._queue.append(call)
        if self._idle:
            if self._closed and self._started >= len(self._calls):
                # The last call: wake every parked worker (the rest then end).
                self._idle = 0
                self._lot.unpark_all()
            else:
                self._idle -= 1
                self._lot.unpark()
            return
        pool = self._pool
        if pool is not None:
            pool.start_soon(self._worker)
        elif not self._pool_requested:
            # No waiting for the pool: it spawns the workers queued meanwhile.
            self._pool_requested = True
            nursery = self._nursery
            assert nursery is not None
            nursery.start_soon(self._host_pool)

    async def _dispatch_inline(self, call: CallRecord) -> None:
        """Dispatch in the driver, under a scope the batch signal cancels."""
        begun = _now() if self._timings else 0
        plan = call.plan
        assert plan is not None
        if plan.one_step:
            await dispatch(call, carried=True)  # nothing to interrupt: no scope
        else:
            scope = trio.CancelScope()
            link = _ScopeLink(scope)
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
        call.settled = True

    async def _host_pool(self) -> None:
        """Own the pool nursery, whose cancel scope the batch signal cancels."""
        try:
            async with trio.open_nursery() as pool:
                self.signal._link(_ScopeLink(pool.cancel_scope))
                self._pool = pool
                for _ in range(len(self._queue)):
                    pool.start_soon(self._worker)
                await trio.sleep_forever()
        finally:
            # Dispatches no worker took before the pool closed never ran.
            queue = self._queue
            while queue:
                call = queue.popleft()
                call.resolve(call.aborted(), RESOLVED)
                call.settled = True
                self._admission.settle(call)
            self._wake_driver.set()

    # The pipeline's Gate: a pooled call's gate is its batch.

    def _leave(self, call: CallRecord) -> None:
        self._admission.leave(call)

    async def _rejoin(self, call: CallRecord) -> None:
        await self._admission.rejoin(call)

    async def _worker(self) -> None:
        """A pool worker: dispatch queued calls (in model order) while more may come.

        An idle worker parks until the driver queues another dispatch; once the batch
        is closed and every call has started, it ends instead (no cancellation needed).
        An abort arrives as ``trio.Cancelled`` through the call's wrappers and body.
        """
        queue = self._queue
        lot = self._lot
        stats = self._stats
        timings = self._timings
        admission = self._admission
        while True:
            if not queue:
                if self._closed and self._started >= len(self._calls):
                    return
                self._idle += 1
                await lot.park()
                continue
            call = queue.popleft()
            try:
                wait = call.wait
                if wait is not None and not wait.running:
                    # A keyed call behind a conflicting one, or one the pool had no
                    # slot for: wait for the turn without holding a slot.
                    assert wait.granted is not None
                    if timings:
                        begun = _now()
                        await wait.granted.wait()
                        stats.wait += _now() - begun
                    else:
                        await wait.granted.wait()
                    if self.signal._cancelled:
                        call.resolve(ABORTED_BEFORE_DISPATCH_RESULT, RESOLVED)
                        call.settled = True
                        continue
                if timings:
                    begun = _now()
                    await dispatch(call, carried=True)
                    stats.dispatch += _now() - begun
                else:
                    await dispatch(call, carried=True)
            except trio.Cancelled:
                # The pool scope carried the batch abort through the wrappers and the
                # body: record the call by whether its body ran, and re-raise.
                call.resolve(call.aborted(), RESOLVED)
                call.settled = True
                raise
            except Exception as exc:
                # Not a result: an internal failure. The driver re-raises the first one.
                if self._failure is None:
                    self._failure = exc
            else:
                call.settled = True
            finally:
                admission.settle(call)
                self._wake_driver.set()

    async def _sleep(self) -> None:
        """Wait until a dispatch settles, a call is submitted, or the batch is closed.

        If that happened since the last wait, return at once (the caller re-checks its
        state and waits again if nothing changed), without a round through the
        scheduler.
        """
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

    async def _commit_ready(self) -> None:
        """Commit the settled model-order prefix: finalize, record, publish."""
        calls = self._calls
        results = self._results
        recorder = self.recorder
        timings = self._timings
        while self._cursor < len(calls):
            call = calls[self._cursor]
            if not call.settled:
                return
            if call.plan is None or call.fixed is not None:
                result = call.fixed
                assert result is not None
                passed = False
            else:
                passed = True
                if timings and call.plan.hooks.any_finalize:
                    begun = _now()
                    result = await finalize(call)
                    self._stats.finalize += _now() - begun
                else:
                    result = await finalize(call)
            # A failure from here on leaves a call that passed finalize (its observers
            # ran) uncommitted: the registry counted it committed, not abandoned.
            if self._failure is not None:
                self._finalized = passed
                raise self._failure
            if recorder is not None:
                # Contexts are recorded once, as context events after all results.
                recorded = (
                    msgspec.structs.replace(result, additional_contexts=())
                    if result.additional_contexts
                    else result
                )
                try:
                    recorder.record(ToolResultEvent(self.id, call.index, call.call_id, recorded))
                except Exception:
                    self._finalized = passed
                    raise
            results.append(result)
            self._cursor += 1
            self._wake_reader.set()

    async def _drain(self) -> None:
        """Wait until nothing is in flight and every started call has committed."""
        while True:
            await self._commit_ready()
            if not self._admission.admitted and self._cursor >= self._started:
                return
            await self._wait()

    def _finish_unstarted(self) -> None:
        """Give every call that never started (abort) a synthetic result, in model order.

        These bypass the registry entirely: no policy, no observers.
        """
        calls = self._calls
        recorder = self.recorder
        while self._cursor < len(calls):
            call = calls[self._cursor]
            self._started += 1
            if recorder is not None:
                tool_call = call.tool_call
                assert tool_call is not None
                recorder.record(ToolCallEvent(self.id, call.index, _loggable(tool_call)))
                recorder.record(
                    ToolResultEvent(
                        self.id, call.index, call.call_id, ABORTED_BEFORE_DISPATCH_RESULT
                    )
                )
            self._results.append(ABORTED_BEFORE_DISPATCH_RESULT)
            self._cursor += 1
            self._wake_reader.set()

    def _record_contexts(self) -> None:
        recorder = self.recorder
        if recorder is None:
            return
        for call, result in zip(self._calls, self._results, strict=True):
            for context in result.additional_contexts:
                recorder.record(ContextEvent(self.id, call.index, call.call_id, context))


@asynccontextmanager
async def open_tool_batch(
    registry: ToolRegistry,
    *,
    signal: CancelSignal | None = None,
    agent: ToolScope | None = None,
    max_parallel: int = 10,
    recorder: ToolCallRecorder | None = None,
    batch_id: str | None = None,
) -> AsyncIterator[ToolBatch]:
    """Open a batch that runs calls as they are submitted, results in model order.

    Example::

        async with open_tool_batch(registry, max_parallel=4) as batch:
            async for call in calls_streaming_from_the_model():
                batch.submit(call)
            batch.close()
            async for call, result in batch:
                print(call.id, result.is_error)

    A submitted call starts as soon as its turn allows (the calls before it have
    started and, for an ``exclusive`` call, drained), while the model may still be
    streaming later calls. Leaving the block closes submission and waits until every
    submitted call has committed; nothing the batch started is running afterwards.
    If the block raises, the batch is aborted — started calls drain and commit, the
    rest get ``ABORTED_BEFORE_DISPATCH`` — and then the exception propagates as
    itself. A ``trio.Cancelled`` from an enclosing scope cancels everything at once.

    Args:
        registry: the registry whose pipeline every call passes.
        signal: aborts the batch when it fires.
        agent: the scope the calls run for.
        max_parallel: the most bodies in flight at once (a positive integer).
        recorder: receives ``tool_call``/``tool_result``/``context`` events.
        batch_id: the batch's id in the events and in each call's
            ``ctx.idempotency_key`` (a non-empty string; a resumed batch passes its
            old id). Default: 128 random bits, as 32 hex digits.

    Raises:
        ValueError: ``max_parallel`` is not a positive integer, ``batch_id`` is not a
            non-empty string, or ``agent`` is a scope of another registry.
        TypeError: ``signal`` is not a :class:`CancelSignal`.
        RuntimeError: called outside trio (from asyncio, use :mod:`toolnursery.aio`).
        Exception: the first internal failure (e.g. a recorder that raised), after the
            calls in flight have settled.
    """
    _check_batch(registry, signal, agent, max_parallel, batch_id)
    # The calls run under a batch signal of our own, fused with the caller's: an
    # exception in the block aborts this batch without firing the caller's signal.
    fusion = fuse(signal) if signal is not None else None
    own = fusion.signal if fusion is not None else CancelSignal()
    batch = ToolBatch(registry, own, agent, max_parallel, recorder, batch_id)
    raised: BaseException | None = None
    try:
        async with trio.open_nursery() as batch_nursery:
            batch_nursery.start_soon(batch._run, batch_nursery)
            try:
                yield batch
            except BaseException as exc:
                if _is_cancellation(exc) or isinstance(exc, GeneratorExit):
                    raise
                # Abort, and let the driver finish the batch (drain, commit, synthesize)
                # before the block's exception goes on.
                raised = exc
                own.cancel("the batch's block raised")
            batch.close()
    except BaseExceptionGroup as group:
        if raised is not None:
            raise raised  # the block's exception came first
        raise _collapse(group) from None
    finally:
        if fusion is not None:
            fusion.close()
    if raised is not None:
        raise raised


def _is_cancellation(exc: BaseException) -> bool:
    if isinstance(exc, trio.Cancelled):
        return True
    if isinstance(exc, BaseExceptionGroup):
        return exc.split(trio.Cancelled)[1] is None
    return False


def _collapse(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one exception inside a nursery's group, or the group when there are several.

    The batch's tasks are an implementation detail: a failure (the first internal
    failure) reaches the caller as itself, not wrapped; a cancellation from an
    enclosing scope reaches it as one ``trio.Cancelled``.
    """
    leaves: list[BaseException] = []
    stack: list[BaseException] = [group]
    while stack:
        exc = stack.pop()
        if isinstance(exc, BaseExceptionGroup):
            stack.extend(reversed(exc.exceptions))
        else:
            leaves.append(exc)
    if len(leaves) == 1:
        return leaves[0]
    failures = [leaf for leaf in leaves if not isinstance(leaf, trio.Cancelled)]
    if not failures:
        return leaves[0]
    return failures[0] if len(failures) == 1 else group


async def run_tool_calls(
    registry: ToolRegistry,
    calls: Iterable[ToolCall],
    *,
    signal: CancelSignal | None = None,
    agent: ToolScope | None = None,
    max_parallel: int = 10,
    recorder: ToolCallRecorder | None = None,
    batch_id: str | None = None,
    resume_from: str | os.PathLike[str] | None = None,
) -> list[ToolExecutionResult]:
    """Run one model response's tool calls; return one result per call, in model order.

    Consecutive calls whose tools classify them ``parallel`` overlap (at most
    ``max_parallel`` bodies at once); an ``exclusive`` call runs alone as a barrier.
    Pre-execute and post-execute run in model order; only dispatch overlaps. When the
    call returns, nothing it started is still running.

    The calls run under a batch signal fused with ``signal``: a body that cancels
    ``ctx.signal`` aborts this batch without firing the caller's signal.

    Args:
        registry: the registry whose pipeline every call passes.
        calls: the model's calls, in model order.
        signal: aborts the batch: nothing new starts, started calls drain and
            commit, unstarted calls get ``ABORTED_BEFORE_DISPATCH``.
        agent: the scope the calls run for.
        max_parallel: the most bodies in flight at once (a positive integer).
        recorder: receives ``tool_call``/``tool_result``/``context`` events.
        batch_id: the batch's id in the events and in each call's
            ``ctx.idempotency_key`` (a non-empty string; a resumed batch passes its
            old id). Default: 128 random bits, as 32 hex digits.
        resume_from: the log of a run of these same calls that a crash interrupted:
            committed calls return their recorded results without running, and a
            started, unfinished call of a tool that is not idempotent gets the
            ``INTERRUPTED`` result instead of running twice (see docs/durability.md);
            ``batch_id`` then names the batch to resume.

    Returns:
        One frozen result per call, in model order.

    Raises:
        ValueError: ``max_parallel`` is not a positive integer, ``batch_id`` is not a
            non-empty string, or ``agent`` is a scope of another registry;
            :class:`~toolnursery.ResumeError` / :class:`~toolnursery.LogFormatError`
            when ``resume_from`` cannot resume these calls.
        TypeError: ``signal`` is not a :class:`CancelSignal`.
        RuntimeError: called outside trio (from asyncio, use :mod:`toolnursery.aio`).
        Exception: the first internal failure (e.g. a recorder that raised), after the
            calls in flight have settled.
    """
    _check_batch(registry, signal, agent, max_parallel, batch_id)
    if resume_from is not None:
        from ._resume import resume_tool_calls

        return await resume_tool_calls(
            registry,
            calls,
            resume_from,
            signal=signal,
            agent=agent,
            max_parallel=max_parallel,
            recorder=recorder,
            batch_id=batch_id,
        )
    # The same batch signal as open_tool_batch's: a body cancelling ``ctx.signal``
    # aborts this batch, not the caller's signal.
    fusion = fuse(signal) if signal is not None else None
    batch = ToolBatch(
        registry,
        fusion.signal if fusion is not None else CancelSignal(),
        agent,
        max_parallel,
        recorder,
        batch_id,
    )
    try:
        for call in calls:
            batch._add(call)
        batch._closed = True
        # The whole batch is known: drive it from this task (one task fewer).
        async with trio.open_nursery() as nursery:
            await batch._run(nursery)
    except BaseExceptionGroup as group:
        raise _collapse(group) from None
    finally:
        if fusion is not None:
            fusion.close()
    return batch._results
