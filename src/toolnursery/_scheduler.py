"""The batch scheduler: run one model response's tool calls, in model order.

One driver task walks the calls in model order. It classifies the next call; an
``exclusive`` call is a barrier (everything in flight drains first, then it runs
alone); consecutive ``parallel`` calls form a rolling pool capped at ``max_parallel``,
each later call reclassified just before it starts. The driver alone runs *prepare*
(pre-execute, approval, guards) and *finalize* (post-execute, observers, the durable
result), so both happen strictly in model order; only *dispatch* runs in pool tasks.

Cancellation: the batch signal is linked to the pool nursery's cancel scope, so one
scope carries an abort to every in-flight body that runs without wrappers (a call
with ``on_execute`` wrappers runs in the batch nursery under a scope of its own, so
its wrappers see its result). Abort stops starting, drains and commits what started,
then gives every unstarted call a synthetic ``ABORTED_BEFORE_DISPATCH`` result.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any, Final

import msgspec
import trio

from ._content import TextContent, ToolCall, ToolErrorInfo, ToolExecutionResult
from ._decisions import PARALLEL
from ._execution import ToolExecutionInput
from ._pipeline import (
    ABORTED_BEFORE_DISPATCH_RESULT,
    ABORTED_RESULT,
    FINAL,
    PENDING,
    RESOLVED,
    Call,
    begin,
    dispatch,
    finalize,
    policy,
)
from ._recorder import ContextEvent, ToolCallEvent, ToolCallRecorder, ToolResultEvent
from ._registry import ToolRegistry, ToolScope, classify
from ._signal import CancelSignal, fuse

__all__ = ["ToolBatch", "open_tool_batch", "parse_arguments", "run_tool_calls"]

_decode = msgspec.json.Decoder().decode
_batch_ids = itertools.count()
_DUPLICATE: Final = ToolErrorInfo("DuplicateCallIdError", "DUPLICATE_CALL_ID")


def parse_arguments(text: str) -> Any:
    """Parse a model's raw argument text once: ``""`` → ``{}``; not JSON → the text itself."""
    if not text:
        return {}
    try:
        return _decode(text)
    except (msgspec.DecodeError, RecursionError):
        return text


def _check_max_parallel(value: object) -> int:
    if type(value) is not int or value < 1:
        raise ValueError(f"max_parallel must be a positive integer, got {value!r}")
    return value


class _Slot:
    __slots__ = ("args", "call", "index", "settled", "tool_call")

    def __init__(self, index: int, tool_call: ToolCall) -> None:
        self.index = index
        self.tool_call = tool_call
        self.args: Any = _UNPARSED
        self.call: Call | None = None
        self.settled = False

    def arguments(self) -> Any:
        args = self.args
        if args is _UNPARSED:
            args = self.args = parse_arguments(self.tool_call.arguments)
        return args


_UNPARSED: Final = object()


class ToolBatch:
    """A batch being run; made by :func:`open_tool_batch`.

    Submit calls as the model streams them, :meth:`close` when the response is
    complete, and iterate to receive ``(call, result)`` pairs in model order.
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
        self._in_flight = 0
        self._started = 0  # slots started, a model-order prefix
        self._cursor = 0  # slots committed, a model-order prefix
        self._results: list[ToolExecutionResult] = []
        self._wake_driver = trio.Event()
        self._wake_reader = trio.Event()
        self._finished = False
        self._failure: Exception | None = None
        self._read = 0

    # -- the caller's side ------------------------------------------------------------

    def submit(self, call: ToolCall) -> int:
        """Add the next call (model order); returns its index in the batch.

        Raises:
            TypeError: ``call`` is not a :class:`ToolCall`.
            RuntimeError: the batch is closed.
        """
        if not isinstance(call, ToolCall):
            raise TypeError(f"submit() takes a ToolCall, not {type(call).__name__}")
        if self._closed:
            raise RuntimeError("this batch is closed; submit() takes calls only before close()")
        slot = _Slot(len(self._slots), call)
        self._slots.append(slot)
        self._wake_driver.set()
        return slot.index

    def close(self) -> None:
        """End submission: the batch finishes once every submitted call has committed."""
        self._closed = True
        self._wake_driver.set()

    @property
    def results(self) -> list[ToolExecutionResult]:
        """The results committed so far, in model order."""
        return list(self._results)

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

    async def _run(self, batch_nursery: trio.Nursery, pool: trio.Nursery) -> None:
        try:
            await self._schedule(batch_nursery, pool)
            await self._drain()
            while True:
                self._finish_unstarted()
                if self._closed:
                    break
                await self._wait()
            self._record_contexts()
        except Exception as exc:
            # Internal failure: start nothing new, let in-flight bodies settle, re-raise.
            self._failure = exc
            while self._in_flight:
                await self._wait()
            raise
        finally:
            pool.cancel_scope.cancel()
            self._finished = True
            self._wake_reader.set()

    async def _schedule(self, batch_nursery: trio.Nursery, pool: trio.Nursery) -> None:
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
            if not self._classify(slots[i]):
                await self._drain()
                if signal._cancelled:
                    return
                await self._start(slots[i], batch_nursery, pool)
                i += 1
                await self._drain()
                continue
            await self._start(slots[i], batch_nursery, pool)
            i += 1
            while True:
                await self._commit_ready()
                if i >= len(slots):
                    if self._closed:
                        return
                    await self._wait()
                    continue
                if signal._cancelled:
                    return
                if self._in_flight >= self.max_parallel:
                    await self._wait()
                    continue
                if not self._classify(slots[i]):
                    break
                await self._start(slots[i], batch_nursery, pool)
                i += 1
            await self._drain()

    def _classify(self, slot: _Slot) -> bool:
        tool_call = slot.tool_call
        definition = self.registry.get(tool_call.name, self.agent)
        if definition is None:
            return False
        return classify(definition, slot.arguments()) is PARALLEL

    async def _start(self, slot: _Slot, batch_nursery: trio.Nursery, pool: trio.Nursery) -> None:
        tool_call = slot.tool_call
        self._started += 1
        self._record(ToolCallEvent(self.id, slot.index, tool_call))
        if tool_call.id in self._ids:
            call = Call(self.registry, self.registry._hooks_for(self.agent), self.signal)
            call.resolve(
                ToolExecutionResult(
                    (TextContent(f'Error: duplicate tool call id "{tool_call.id}" in this batch'),),
                    True,
                    _DUPLICATE,
                ),
                FINAL,
            )
            slot.call = call
            slot.settled = True
            return
        self._ids.add(tool_call.id)
        call = begin(
            self.registry,
            ToolExecutionInput(
                tool_call.id, tool_call.name, slot.arguments(), self.signal, self.agent
            ),
        )
        slot.call = call
        if call.state == PENDING:
            hooks = call.hooks
            if hooks.pre or hooks.guards:
                await policy(call)
        if call.state != PENDING:
            slot.settled = True
            return
        self._in_flight += 1
        if call.hooks.execute:
            batch_nursery.start_soon(self._dispatch, slot, False)
        else:
            pool.start_soon(self._dispatch, slot, True)

    async def _dispatch(self, slot: _Slot, carried: bool) -> None:
        call = slot.call
        assert call is not None
        try:
            await dispatch(call, carried=carried)
        except trio.Cancelled:
            # The pool scope carried the batch abort into the body: record it, re-raise.
            base = ABORTED_RESULT if call.invoked else ABORTED_BEFORE_DISPATCH_RESULT
            deferred = tuple(call.deferred)
            call.resolve(
                msgspec.structs.replace(base, additional_contexts=deferred) if deferred else base,
                RESOLVED,
            )
            raise
        finally:
            self._in_flight -= 1
            slot.settled = True
            self._wake_driver.set()

    async def _wait(self) -> None:
        if self._wake_driver.is_set():
            self._wake_driver = trio.Event()
            await trio.lowlevel.checkpoint()
            return
        await self._wake_driver.wait()

    async def _commit_ready(self) -> None:
        slots = self._slots
        while self._cursor < len(slots):
            slot = slots[self._cursor]
            if not slot.settled:
                return
            call = slot.call
            assert call is not None
            result = await finalize(call)
            self._record(ToolResultEvent(self.id, slot.index, slot.tool_call.id, result))
            self._results.append(result)
            self._cursor += 1
            self._wake_reader.set()

    async def _drain(self) -> None:
        """Wait until nothing is in flight and every started call has committed."""
        while True:
            await self._commit_ready()
            if self._in_flight == 0 and self._cursor >= self._started:
                return
            await self._wait()

    def _finish_unstarted(self) -> None:
        """Synthesize results for calls that never started (abort), in model order."""
        slots = self._slots
        while self._cursor < len(slots):
            slot = slots[self._cursor]
            self._started += 1
            self._record(ToolCallEvent(self.id, slot.index, slot.tool_call))
            self._record(
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

    def _record(self, event: ToolCallEvent | ToolResultEvent) -> None:
        if self.recorder is not None:
            self.recorder.record(event)


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
            for call in calls_streaming_from_the_model():
                batch.submit(call)
            batch.close()
            async for call, result in batch:
                print(call.id, result.is_error)

    Leaving the block closes submission and waits until every submitted call has
    committed; nothing the batch started is running afterwards. If the block raises,
    the batch is aborted (started calls drain, the rest get ``ABORTED_BEFORE_DISPATCH``)
    before the exception propagates.

    Args:
        registry: the registry whose pipeline every call passes.
        signal: aborts the batch when it fires.
        agent: the scope the calls run for.
        max_parallel: the most bodies in flight at once (a positive integer).
        recorder: receives ``tool_call``/``tool_result``/``context`` events.

    Raises:
        ValueError: ``max_parallel`` is not a positive integer.
    """
    _check_max_parallel(max_parallel)
    if signal is not None and not isinstance(signal, CancelSignal):
        raise TypeError(f"signal must be a CancelSignal, not {type(signal).__name__}")
    fusion = fuse(signal) if signal is not None else None
    own = fusion.signal if fusion is not None else CancelSignal()
    batch = ToolBatch(registry, own, agent, max_parallel, recorder)
    try:
        async with trio.open_nursery() as batch_nursery:
            pool: trio.Nursery = await batch_nursery.start(_host_pool, own)
            batch_nursery.start_soon(batch._run, batch_nursery, pool)
            try:
                yield batch
            except BaseException:
                own.cancel("the batch's block raised")
                batch.close()
                raise
            batch.close()
    except BaseExceptionGroup as group:
        raise _collapse(group) from None
    finally:
        if fusion is not None:
            fusion.close()


def _collapse(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one exception inside a nursery's group, or the group when there are several.

    The batch's tasks are an implementation detail: a failure (the first internal
    failure, or the exception the ``async with`` block raised) reaches the caller as
    itself, not wrapped.
    """
    leaves: list[BaseException] = []
    stack: list[BaseException] = [group]
    while stack:
        exc = stack.pop()
        if isinstance(exc, BaseExceptionGroup):
            stack.extend(exc.exceptions)
        else:
            leaves.append(exc)
    return leaves[0] if len(leaves) == 1 else group


async def _host_pool(signal: CancelSignal, *, task_status: trio.TaskStatus[trio.Nursery]) -> None:
    async with trio.open_nursery() as pool:
        signal._link(lambda _: pool.cancel_scope.cancel())
        task_status.started(pool)
        await trio.sleep_forever()


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

    Raises:
        ValueError: ``max_parallel`` is not a positive integer.
        Exception: the first internal failure (e.g. a recorder that raised), after the
            calls in flight have settled.
    """
    async with open_tool_batch(
        registry, signal=signal, agent=agent, max_parallel=max_parallel, recorder=recorder
    ) as batch:
        for call in calls:
            batch.submit(call)
        batch.close()
    return batch._results
