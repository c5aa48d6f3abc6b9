"""The batch scheduler: run one model response's tool calls, in model order.

One driver walks the calls in model order (the caller's task for ``run_tool_calls``,
a task of the batch for ``open_tool_batch``). It classifies the next call; an
``exclusive`` call is a barrier (everything in flight drains first, then it runs
alone); consecutive ``parallel`` and ``keyed`` calls form a rolling pool capped at
``max_parallel``, each later call reclassified just before it starts. The driver alone
runs *prepare* (pre-execute, approval, guards) and *finalize* (post-execute,
observers, the durable result), so both happen strictly in model order; only
*dispatch* overlaps.

Waiting without a slot: a ``keyed`` call registers its resources when it starts and
waits for every earlier unfinished call it conflicts with (``_holders`` maps each
resource to those calls); a call whose tool is at its ``max_concurrency`` gives its
slot back while it waits for a token (the batch is the pipeline's ``Gate``). Either
way it counts as *waiting*, not *running*: ``_running`` (at most ``max_parallel``)
and ``_waiting`` (the driver starts no new call while ``max_parallel`` calls wait).
A waiting call that may run queues in ``_ready`` and gets the next free slot, first
come first served. Nothing waits in a cycle: a call waits only for earlier calls, for
bodies that hold a token, or for a slot held by a running body.

Where dispatch runs: a call that runs alone — an ``exclusive`` barrier, or the last
call of a closed batch with nothing in flight — is dispatched inline by the driver
(no task; the pipeline gives its body a cancel scope linked to the batch signal).
Other calls go to worker tasks. Workers take their call from a FIFO queue when they
first run, not when they are spawned: trio may run tasks spawned in one scheduling
batch in either order, and the queue keeps bodies starting in model order regardless.

Cancellation: the batch signal is linked to the pool nursery's cancel scope, so one
scope carries an abort to every pooled body (no scope per call). A call with
``on_execute`` wrappers runs in the batch nursery instead, its body under a scope of
its own, so its wrappers see its result. The pool nursery is opened on first use.
Abort stops starting, drains and commits what started, then gives every unstarted
call a synthetic ``ABORTED_BEFORE_DISPATCH`` result.

Internal failure (a recorder that raises, a stage that raises where it should not):
nothing new starts, in-flight dispatches settle, and the first failure propagates
unwrapped. No result is fabricated for a call that did not commit.
"""

from __future__ import annotations

import itertools
import os
from collections import deque
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any, Final

import msgspec
import trio

from ._arguments import parse_arguments, safe_arguments
from ._content import TextContent, ToolCall, ToolErrorInfo, ToolExecutionResult
from ._decisions import PARALLEL, ResourceKey
from ._errors import ToolArgsError
from ._execution import ToolExecutionInput
from ._json import snapshot
from ._outcomes import ABORTED_BEFORE_DISPATCH_RESULT, ABORTED_RESULT
from ._pipeline import (
    PENDING,
    RESOLVED,
    Call,
    begin,
    dispatch,
    finalize,
    is_async,
    may_suspend,
    policy,
)
from ._recorder import ContextEvent, ToolCallEvent, ToolCallRecorder, ToolResultEvent
from ._registry import ToolRegistry, ToolScope, classify
from ._signal import CancelSignal, fuse
from ._statistics import Counters, ToolStatistics, outcome
from ._statistics import now as _now

__all__ = ["ToolBatch", "open_tool_batch", "parse_arguments", "run_tool_calls"]

_batch_ids = itertools.count()
_DUPLICATE: Final = ToolErrorInfo("DuplicateCallIdError", "DUPLICATE_CALL_ID")


def _check_max_parallel(value: object) -> int:
    if type(value) is not int or value < 1:
        raise ValueError(f"max_parallel must be a positive integer, got {value!r}")
    return value


def _loggable(call: ToolCall) -> ToolCall:
    """The call as a log can hold it: refused arguments replaced by a safe stand-in."""
    arguments = safe_arguments(call.arguments)
    return call if arguments == call.arguments else ToolCall(call.id, call.name, arguments)


class _Unparsed:
    __slots__ = ()


_UNPARSED: Final = _Unparsed()


class _Wait:
    """The waiting state of a pooled call that may not hold a slot all along.

    Made for a ``keyed`` call (its keys and the calls it waits for), and for a call
    that gives its slot back while it waits for its tool's ``max_concurrency``.
    """

    __slots__ = ("blockers", "dependents", "done", "granted", "keys", "running")

    def __init__(self, keys: tuple[ResourceKey, ...]) -> None:
        self.keys = keys
        self.blockers = 0  # unfinished earlier calls this one conflicts with
        self.dependents: list[_Slot] = []  # later calls that wait for this one
        self.granted: trio.Event | None = None  # set when the call gets its slot
        self.running = False  # holds a slot under max_parallel
        self.done = False  # its dispatch has ended (or was cancelled)


class _Slot:
    """One submitted call: its place in model order and how far it has got."""

    __slots__ = ("args", "call", "fixed", "frozen", "index", "settled", "tool_call", "wait")

    def __init__(self, index: int, tool_call: ToolCall) -> None:
        self.index = index
        self.tool_call = tool_call
        self.args: Any = _UNPARSED
        self.frozen = False  # args holds a snapshot
        self.call: Call | None = None
        # A result decided without the registry (a duplicate id): never dispatched,
        # never passes policy or observers.
        self.fixed: ToolExecutionResult | None = None
        self.settled = False
        # None while the call holds its slot from start to end (the common case).
        self.wait: _Wait | None = None

    def arguments(self) -> Any:
        args = self.args
        if args is _UNPARSED:
            # Parsed and frozen once: the classifier and the body see the same frozen
            # value, so a classifier cannot change what runs (or what was logged).
            try:
                args = parse_arguments(self.tool_call.arguments)
            except ToolArgsError as exc:
                # Not arguments at all: this call's error result; it never runs.
                self.fixed = ToolExecutionResult(
                    (TextContent(f"Error: {exc.message}"),), True, ToolErrorInfo(exc.name, exc.code)
                )
                self.args = None
                return None
            try:
                args = snapshot(args)
            except Exception:
                pass  # not lossless JSON: begin() reports it (B111)
            else:
                self.frozen = True
            self.args = args
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
    ) -> None:
        self.registry = registry
        self.signal = signal
        self.agent = agent
        self.max_parallel = max_parallel
        self.recorder = recorder
        self.id = f"{os.getpid():x}-{next(_batch_ids):x}"
        self._slots: list[_Slot] = []
        self._ids: set[str] = set()
        self._closed = False
        # Dispatches under way (in tasks) hold a slot — at most max_parallel — or wait
        # for a conflicting call, their tool's limit or a slot.
        self._running = 0
        self._waiting = 0
        self._ready: deque[_Slot] = deque()  # may run, waiting for a slot (FIFO)
        self._holders: dict[str, dict[_Slot, bool]] = {}  # resource → unfinished: writes?
        self._stats = Counters()  # phase times and abandoned calls of this batch
        self._started = 0  # slots started, a model-order prefix
        self._cursor = 0  # slots committed, a model-order prefix
        self._finalized = False  # the slot at the cursor passed finalize, then failed
        self._results: list[ToolExecutionResult] = []
        self._nursery: trio.Nursery | None = None  # the batch nursery, set by _run
        self._pool: trio.Nursery | None = None  # opened on the first pooled dispatch
        self._pool_requested = False
        self._pooled: deque[_Slot] = deque()  # dispatches waiting for a pool worker
        self._hosted: deque[_Slot] = deque()  # dispatches with wrappers, own scope each
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
        ``error={name: "DuplicateCallIdError", code: "DUPLICATE_CALL_ID"}``.

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
        slots = self._slots
        slot = _Slot(len(slots), call)
        ids = self._ids
        if call.id in ids:
            slot.fixed = ToolExecutionResult(
                (TextContent(f'Error: duplicate tool call id "{call.id}" in this batch'),),
                True,
                _DUPLICATE,
            )
        else:
            ids.add(call.id)
        slots.append(slot)
        return slot.index

    def close(self) -> None:
        """End submission: the batch finishes once every submitted call has committed."""
        self._closed = True
        self._wake_driver.set()

    @property
    def results(self) -> list[ToolExecutionResult]:
        """The results committed so far, in model order."""
        return list(self._results)

    def statistics(self) -> ToolStatistics:
        """A frozen snapshot of this batch: its calls, their outcomes, phase times.

        ``started`` and ``committed`` count every call of the batch, the synthetic
        ``ABORTED_BEFORE_DISPATCH`` results and duplicate-id errors included; the
        registry's :meth:`~ToolRegistry.statistics` counts only what passed it.
        """
        codes: dict[str, int] = {}
        for result in self._results:
            key = outcome(result)
            codes[key] = codes.get(key, 0) + 1
        return self._stats.snapshot(self._started, self._cursor, codes, self._waiting)

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
        return self._slots[index].tool_call, self._results[index]

    # -- the driver -------------------------------------------------------------------

    async def _run(self, nursery: trio.Nursery) -> None:
        """Drive the batch to the end; worker tasks go into ``nursery``."""
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
            while self._running or self._waiting:
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
        unfinalized = self._slots[cursor + self._finalized : started]
        into.abandoned += sum(1 for slot in unfinalized if slot.call is not None)

    def _on_abort(self, _: CancelSignal) -> None:
        self._wake_driver.set()

    async def _schedule(self) -> None:
        slots = self._slots
        signal = self.signal
        i = 0
        while True:
            if i >= len(slots):
                if self._closed:
                    return
                await self._wait()
                continue
            if signal._cancelled:
                return
            keys = self._classify(slots[i])
            if keys is None:
                # Exclusive: a barrier. The previous group has drained already.
                await self._start(slots[i], (), inline=True)
                i += 1
                await self._drain()
                continue
            await self._start(slots[i], keys, inline=self._closed and i == len(slots) - 1)
            i += 1
            while True:
                cursor = self._cursor
                if cursor < len(slots) and slots[cursor].settled:
                    await self._commit_ready()
                if i >= len(slots):
                    if self._closed:
                        return
                    await self._wait()
                    continue
                if signal._cancelled:
                    return
                # Waiting calls hold no slot, but at most max_parallel of them wait.
                cap = self.max_parallel
                if self._running >= cap or self._waiting >= cap:
                    await self._wait()
                    continue
                keys = self._classify(slots[i])
                if keys is None:
                    break
                alone = (
                    self._closed
                    and i == len(slots) - 1
                    and self._running == 0
                    and self._waiting == 0
                )
                await self._start(slots[i], keys, inline=alone)
                i += 1
            await self._drain()

    def _classify(self, slot: _Slot) -> tuple[ResourceKey, ...] | None:
        """How the call may run now, with the current registry.

        ``None``: exclusive (a barrier); ``()``: beside anything in the pool; keys:
        beside everything but the earlier unfinished calls it conflicts with.
        """
        if slot.fixed is not None:
            return ()  # runs nothing, so it never needs to be a barrier
        definition = self.registry.get(slot.tool_call.name, self.agent)
        if definition is None:
            return None
        arguments = slot.arguments()
        if slot.fixed is not None:
            return ()
        mode = classify(definition, arguments)
        if mode is PARALLEL:
            return ()
        if mode.kind == "keyed":
            return mode.keys
        return None

    async def _start(self, slot: _Slot, keys: tuple[ResourceKey, ...], *, inline: bool) -> None:
        """Record the call, prepare it, and dispatch it (inline, or to a worker)."""
        if self._failure is not None:
            raise self._failure
        tool_call = slot.tool_call
        self._started += 1
        arguments = slot.arguments() if slot.fixed is None else None
        recorder = self.recorder
        if recorder is not None:
            logged = tool_call if slot.fixed is None else _loggable(tool_call)
            recorder.record(ToolCallEvent(self.id, slot.index, logged))
        if slot.fixed is not None:
            slot.settled = True
            return
        call = begin(
            self.registry,
            ToolExecutionInput(tool_call.id, tool_call.name, arguments, self.signal, self.agent),
            frozen=slot.frozen,
        )
        slot.call = call
        if call.state == PENDING:
            hooks = call.hooks
            if hooks.pre or hooks.guards:
                start = _now()
                await policy(call)
                self._stats.prepare += _now() - start
                if self._failure is not None:
                    raise self._failure
        if call.state != PENDING:
            slot.settled = True
            return
        if inline or (not keys and self._runs_in_one_step(call)):
            # Runs alone, or cannot suspend (so it could overlap nothing): no task.
            start = _now()
            await dispatch(call)
            self._stats.dispatch += _now() - start
            slot.settled = True
            return
        call.gate = self
        if keys:
            self._queue_keyed(slot, keys)
        elif self._running < self.max_parallel:
            self._running += 1
        else:
            # The pool filled up while this call was being prepared.
            wait = slot.wait = _Wait(())
            wait.granted = trio.Event()
            self._waiting += 1
            self._ready.append(slot)
        if call.hooks.execute:
            self._hosted.append(slot)
            nursery = self._nursery
            assert nursery is not None
            nursery.start_soon(self._work, self._hosted, False)
        else:
            self._pooled.append(slot)
            pool = self._pool
            if pool is not None:
                pool.start_soon(self._work, self._pooled, True)
            elif not self._pool_requested:
                # No waiting for the pool: it spawns the workers queued meanwhile.
                self._pool_requested = True
                nursery = self._nursery
                assert nursery is not None
                nursery.start_soon(self._host_pool)

    def _runs_in_one_step(self, call: Call) -> bool:
        """Whether dispatching ``call`` completes without ever yielding to trio.

        True for an ``async def`` body with no ``await`` (see :func:`may_suspend`) and
        no execute wrappers or tool limit: such a call cannot overlap anything, so a
        task of its own would buy nothing.
        """
        if call.hooks.execute:
            return False
        execution = call.execution
        definition = self.registry.get(execution.name, execution.agent)
        if definition is None:
            return True  # UNKNOWN_TOOL is decided without a body
        body = definition.execute
        return definition.max_concurrency is None and is_async(body) and not may_suspend(body)

    async def _host_pool(self) -> None:
        """Own the pool nursery, whose cancel scope the batch signal cancels."""
        async with trio.open_nursery() as pool:
            self.signal._link(lambda _: pool.cancel_scope.cancel())
            self._pool = pool
            for _ in range(len(self._pooled)):
                pool.start_soon(self._work, self._pooled, True)
            await trio.sleep_forever()

    def _queue_keyed(self, slot: _Slot, keys: tuple[ResourceKey, ...]) -> None:
        """Register a keyed call's resources; it runs now, or waits for its turn.

        It waits for every earlier unfinished call it conflicts with (same resource,
        one of the two writes), then for a slot. Earlier calls are the ones already
        registered: calls start in model order.
        """
        wait = slot.wait = _Wait(keys)
        holders = self._holders
        blocking: set[_Slot] = set()
        for key in keys:
            resource = key.resource
            write = key.mode == "write"
            held = holders.get(resource)
            if held is None:
                holders[resource] = {slot: write}
                continue
            for other, other_writes in held.items():
                if (write or other_writes) and other not in blocking:
                    blocking.add(other)
                    other_wait = other.wait
                    assert other_wait is not None
                    other_wait.dependents.append(slot)
            held[slot] = write
        wait.blockers = len(blocking)
        if not blocking and self._running < self.max_parallel:
            self._running += 1
            wait.running = True
            return
        wait.granted = trio.Event()
        self._waiting += 1
        if not blocking:
            self._ready.append(slot)

    def _grant(self) -> None:
        """Hand free slots to ready calls, first come first served."""
        ready = self._ready
        cap = self.max_parallel
        while ready and self._running < cap:
            slot = ready.popleft()
            wait = slot.wait
            assert wait is not None
            assert wait.granted is not None
            if wait.done:
                continue
            self._running += 1
            self._waiting -= 1
            wait.running = True
            wait.granted.set()
            # One waiting call fewer: the driver may start the next call.
            self._wake_driver.set()

    def _settle(self, slot: _Slot, wait: _Wait) -> None:
        """A waiting-capable call's dispatch ended: free its resources and its slot."""
        wait.done = True
        if wait.keys:
            holders = self._holders
            for key in wait.keys:
                held = holders[key.resource]
                del held[slot]
                if not held:
                    del holders[key.resource]
            ready = self._ready
            for dependent in wait.dependents:
                dependent_wait = dependent.wait
                assert dependent_wait is not None
                if dependent_wait.done:
                    continue
                dependent_wait.blockers -= 1
                if dependent_wait.blockers == 0:
                    ready.append(dependent)
        if wait.running:
            self._running -= 1
        else:
            self._waiting -= 1
        self._grant()

    def _slot_of(self, call: Call) -> _Slot:
        for slot in self._slots[self._cursor : self._started]:
            if slot.call is call:
                return slot
        raise AssertionError("a gated call belongs to its batch")  # pragma: no cover

    def _leave(self, call: Call) -> None:
        """The call waits for its tool's limit: its slot goes to the next call.

        (The pipeline's :class:`~toolnursery._pipeline.Gate`: a pooled call's gate is
        its batch.)
        """
        slot = self._slot_of(call)
        wait = slot.wait
        if wait is None:
            wait = slot.wait = _Wait(())
        wait.running = False
        self._running -= 1
        self._waiting += 1
        self._grant()
        self._wake_driver.set()

    async def _rejoin(self, call: Call) -> None:
        """The call has its tool's token: wait for a slot again, behind ready calls."""
        slot = self._slot_of(call)
        wait = slot.wait
        assert wait is not None
        wait.granted = granted = trio.Event()
        self._ready.append(slot)
        self._grant()
        if not wait.running:
            await granted.wait()

    async def _work(self, queue: deque[_Slot], carried: bool) -> None:
        """A worker: dispatch the next queued call (the queue is in model order)."""
        slot = queue.popleft()
        call = slot.call
        assert call is not None
        stats = self._stats
        try:
            wait = slot.wait
            if wait is not None and not wait.running:
                # A keyed call behind a conflicting one, or one the pool had no
                # slot for: wait for the turn without holding a slot.
                assert wait.granted is not None
                start = _now()
                await wait.granted.wait()
                stats.wait += _now() - start
                if self.signal._cancelled:
                    call.resolve(ABORTED_BEFORE_DISPATCH_RESULT, RESOLVED)
                    slot.settled = True
                    return
            start = _now()
            await dispatch(call, carried=carried)
            stats.dispatch += _now() - start
        except trio.Cancelled:
            # The pool scope carried the batch abort into the body: record it, re-raise.
            base = ABORTED_RESULT if call.invoked else ABORTED_BEFORE_DISPATCH_RESULT
            deferred = tuple(call.deferred)
            call.resolve(
                msgspec.structs.replace(base, additional_contexts=deferred) if deferred else base,
                RESOLVED,
            )
            slot.settled = True
            raise
        except Exception as exc:
            # Not a result: an internal failure. The driver re-raises the first one.
            if self._failure is None:
                self._failure = exc
        else:
            slot.settled = True
        finally:
            wait = slot.wait
            if wait is None:
                self._running -= 1
                if self._ready:
                    self._grant()
            else:
                self._settle(slot, wait)
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
        slots = self._slots
        results = self._results
        recorder = self.recorder
        while self._cursor < len(slots):
            slot = slots[self._cursor]
            if not slot.settled:
                return
            call = slot.call
            if call is None:
                result = slot.fixed
                assert result is not None
            else:
                hooks = call.hooks
                if hooks.post or hooks.result:
                    start = _now()
                    result = await finalize(call)
                    self._stats.finalize += _now() - start
                else:
                    result = await finalize(call)
            # A failure from here on leaves a call that passed finalize (its observers
            # ran) uncommitted: the registry counted it committed, not abandoned.
            if self._failure is not None:
                self._finalized = call is not None
                raise self._failure
            if recorder is not None:
                # Contexts are recorded once, as context events after all results.
                recorded = (
                    msgspec.structs.replace(result, additional_contexts=())
                    if result.additional_contexts
                    else result
                )
                try:
                    recorder.record(
                        ToolResultEvent(self.id, slot.index, slot.tool_call.id, recorded)
                    )
                except Exception:
                    self._finalized = call is not None
                    raise
            results.append(result)
            self._cursor += 1
            self._wake_reader.set()

    async def _drain(self) -> None:
        """Wait until nothing is in flight and every started call has committed."""
        while True:
            await self._commit_ready()
            if not self._running and not self._waiting and self._cursor >= self._started:
                return
            await self._wait()

    def _finish_unstarted(self) -> None:
        """Give every call that never started (abort) a synthetic result, in model order.

        These bypass the registry entirely: no policy, no observers.
        """
        slots = self._slots
        recorder = self.recorder
        while self._cursor < len(slots):
            slot = slots[self._cursor]
            self._started += 1
            if recorder is not None:
                recorder.record(ToolCallEvent(self.id, slot.index, _loggable(slot.tool_call)))
                recorder.record(
                    ToolResultEvent(
                        self.id, slot.index, slot.tool_call.id, ABORTED_BEFORE_DISPATCH_RESULT
                    )
                )
            self._results.append(ABORTED_BEFORE_DISPATCH_RESULT)
            self._cursor += 1
            self._wake_reader.set()

    def _record_contexts(self) -> None:
        recorder = self.recorder
        if recorder is None:
            return
        for slot, result in zip(self._slots, self._results, strict=True):
            for context in result.additional_contexts:
                recorder.record(ContextEvent(self.id, slot.index, slot.tool_call.id, context))


@asynccontextmanager
async def open_tool_batch(
    registry: ToolRegistry,
    *,
    signal: CancelSignal | None = None,
    agent: ToolScope | None = None,
    max_parallel: int = 10,
    recorder: ToolCallRecorder | None = None,
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

    Raises:
        ValueError: ``max_parallel`` is not a positive integer.
        TypeError: ``signal`` is not a :class:`CancelSignal`.
        Exception: the first internal failure (e.g. a recorder that raised), after the
            calls in flight have settled.
    """
    _check_max_parallel(max_parallel)
    if signal is not None and not isinstance(signal, CancelSignal):
        raise TypeError(f"signal must be a CancelSignal, not {type(signal).__name__}")
    # The calls run under a batch signal of our own, fused with the caller's: an
    # exception in the block aborts this batch without firing the caller's signal.
    fusion = fuse(signal) if signal is not None else None
    own = fusion.signal if fusion is not None else CancelSignal()
    batch = ToolBatch(registry, own, agent, max_parallel, recorder)
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

    Returns:
        One frozen result per call, in model order.

    Raises:
        ValueError: ``max_parallel`` is not a positive integer.
        Exception: the first internal failure (e.g. a recorder that raised), after the
            calls in flight have settled.
    """
    _check_max_parallel(max_parallel)
    if signal is not None and not isinstance(signal, CancelSignal):
        raise TypeError(f"signal must be a CancelSignal, not {type(signal).__name__}")
    # The same batch signal as open_tool_batch's: a body cancelling ``ctx.signal``
    # aborts this batch, not the caller's signal.
    fusion = fuse(signal) if signal is not None else None
    batch = ToolBatch(
        registry,
        fusion.signal if fusion is not None else CancelSignal(),
        agent,
        max_parallel,
        recorder,
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
