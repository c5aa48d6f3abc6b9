"""The asyncio face's implementation: batches and calls awaited from asyncio, on the
native asyncio driver or the trio guest run (:mod:`toolnursery.aio` re-exports it; the
bridges import it from here, below the public faces)."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Iterable
from contextlib import asynccontextmanager
from typing import Any, Final, Literal

import msgspec

from .._batch._recorder import ToolCallRecorder
from .._batch._resume import PlannedRun, carry_out, read_plan
from .._batch._scheduler import ToolBatch
from .._batch._scheduler import open_tool_batch as _open_tool_batch
from .._batch._scheduler import run_tool_calls as _run_tool_calls
from .._core._content import ToolCall, ToolExecutionResult
from .._core._errors import AsyncioHostError as AsyncioHostError
from .._core._execution import ToolExecutionInput
from .._core._signal import CancelSignal, Fusion, fuse
from .._core._statistics import ToolStatistics
from .._machine._intake import new_batch_id
from .._pipeline._registry import ToolRegistry, ToolScope
from ._driver import AsyncioDriver
from ._execute import execute as _execute_native
from ._execute import execute_reason, run_calls, run_lone
from ._host import Job, drain_job, host_for, wait_job
from ._host import aclose as aclose
from ._route import calls_reason, trio_reason
from ._route import needs_trio as needs_trio
from ._tasks import check_batch, settle_task
from ._tool import asyncio_tool as asyncio_tool
from ._tool import is_asyncio_tool as is_asyncio_tool

__all__ = [
    "AsyncioHostError",
    "AsyncioToolBatch",
    "BatchDriver",
    "Driver",
    "aclose",
    "asyncio_tool",
    "batch_driver",
    "execute",
    "is_asyncio_tool",
    "needs_trio",
    "open_tool_batch",
    "run_tool_calls",
]

_BLOCK_RAISED = "the batch's block raised"

Driver = Literal["auto", "asyncio", "trio"]
"""Which driver runs a batch from asyncio: ``"auto"`` (the rule of ``docs/asyncio.md``),
``"asyncio"`` (the native driver; refused with ``ValueError`` when a tool or hook of
the batch needs trio) or ``"trio"`` (the trio guest run)."""

_DRIVERS: Final = ("auto", "asyncio", "trio")

logger: logging.Logger = logging.getLogger("toolnursery.aio")
"""Logs, at DEBUG, which driver each batch runs on (fields ``batch_id``, ``driver``,
``reason``)."""


class BatchDriver(msgspec.Struct, frozen=True):
    """Which driver a batch runs on (see :func:`batch_driver`).

    Attributes:
        driver: ``"asyncio"`` (natively on the running loop) or ``"trio"`` (the trio
            guest run).
        reason: why not asyncio (``None`` when it is asyncio).
    """

    driver: Literal["asyncio", "trio"]
    reason: str | None = None


def batch_driver(
    registry: ToolRegistry,
    calls: Iterable[ToolCall] | None = None,
    *,
    agent: ToolScope | None = None,
    driver: Driver = "auto",
) -> BatchDriver:
    """The driver a batch of ``calls`` (``None``: a streamed batch, whose calls may be
    any tool of the view) would run on from asyncio, and why.

    Raises:
        ValueError: ``driver`` is not one of ``"auto"``, ``"asyncio"``, ``"trio"``, or
            is ``"asyncio"`` for a batch whose tools or hooks need trio.
    """
    names = None if calls is None else [call.name for call in calls if isinstance(call, ToolCall)]
    reason = _choose(driver, registry, agent, names)
    return BatchDriver("asyncio") if reason is None else BatchDriver("trio", reason)


def _choose(
    driver: object, registry: ToolRegistry, agent: ToolScope | None, names: list[str] | None
) -> str | None:
    """Why the batch runs in the trio guest run, or ``None``: on the asyncio driver."""
    if driver not in _DRIVERS:
        raise ValueError(f"driver must be one of 'auto', 'asyncio', 'trio', got {driver!r}")
    if driver == "trio":
        return "driver='trio' was asked for"
    if not isinstance(registry, ToolRegistry):
        return "not a ToolRegistry"  # the trio API refuses it with its own error
    reason = trio_reason(registry, agent, names)
    if reason is not None and driver == "asyncio":
        raise ValueError(f"driver='asyncio' cannot run this batch: {reason}")
    return reason


def _log(batch_id: str | None, reason: str | None) -> None:
    if logger.isEnabledFor(logging.DEBUG):
        driver = "asyncio" if reason is None else "trio"
        logger.debug(
            "batch %s runs on the %s driver%s",
            batch_id,
            driver,
            "" if reason is None else f" ({reason})",
            extra={"batch_id": batch_id, "driver": driver, "reason": reason},
        )


async def run_tool_calls(
    registry: ToolRegistry,
    calls: Iterable[ToolCall],
    *,
    signal: CancelSignal | None = None,
    agent: ToolScope | None = None,
    max_parallel: int = 10,
    recorder: ToolCallRecorder | None = None,
    batch_id: str | None = None,
    hook_abort_grace: float | None = None,
    deps: Any = None,
    driver: Driver = "auto",
    resume_from: str | os.PathLike[str] | None = None,
) -> list[ToolExecutionResult]:
    """Run one model response's tool calls from asyncio; results in model order.

    The asyncio form of :func:`toolnursery.run_tool_calls` (same arguments, same
    results; ``batch_id`` and ``resume_from`` as there: a batch a crash interrupted is
    resumed from its log on either driver, its recorded approvals answered from it). Cancelling the awaiting task aborts the batch: started calls drain and
    commit, unstarted ones get ``ABORTED_BEFORE_DISPATCH`` (the recorder sees them
    all), and ``CancelledError`` propagates once nothing the batch started is running.

    The batch runs natively on the running loop when every tool it calls and every
    hook runs on asyncio, else in the trio guest run (``driver``; see
    :func:`batch_driver` and ``docs/asyncio.md``).

    Raises:
        ValueError: ``max_parallel`` is not a positive integer, ``batch_id`` not a
            non-empty string, ``hook_abort_grace`` negative or NaN, or ``driver`` not
            a :data:`Driver` (or ``"asyncio"`` for a batch that needs trio).
        TypeError: ``hook_abort_grace`` is not a number.
        asyncio.CancelledError: the awaiting task was cancelled (after the drain).
        Exception: the scheduler's first internal failure (e.g. a recorder that
            raised), after the calls in flight have settled.
    """
    pending = list(calls)
    if resume_from is not None:
        plan = read_plan(registry, pending, resume_from, agent=agent, batch_id=batch_id)

        def again(
            to_run: list[ToolCall], given: ToolCallRecorder | None, batch: str | None
        ) -> Awaitable[list[ToolExecutionResult]]:
            return run_tool_calls(
                registry,
                to_run,
                signal=signal,
                agent=agent,
                max_parallel=max_parallel,
                recorder=given,
                hook_abort_grace=hook_abort_grace,
                deps=deps,
                driver=driver,
                batch_id=batch,
            )

        return await carry_out(PlannedRun(plan), recorder, again)
    if (driver == "auto" or driver == "asyncio") and type(registry) is ToolRegistry:
        reason = calls_reason(registry, agent, pending)  # _choose(), for a known batch
        if reason is not None and driver == "asyncio":
            raise ValueError(f"driver='asyncio' cannot run this batch: {reason}")
    else:
        names = [c.name for c in pending if type(c) is ToolCall or isinstance(c, ToolCall)]
        reason = _choose(driver, registry, agent, names)
    if reason is None:
        check_batch(registry, signal, agent, max_parallel, batch_id, hook_abort_grace)
        own_fusion = fuse(signal) if signal is not None else None
        batch_signal = own_fusion.signal if own_fusion is not None else CancelSignal()
        try:
            if (
                len(pending) == 1
                and recorder is None
                and hook_abort_grace is None
                and not registry.phase_timings
            ):
                # A lone call runs in this task, with no machine (see run_lone).
                lone_id = new_batch_id() if batch_id is None else batch_id
                _log(lone_id, None)
                results = await run_lone(registry, pending[0], batch_signal, agent, deps, lone_id)
                if results is not None:
                    return results
            native = AsyncioDriver(
                registry,
                batch_signal,
                agent,
                max_parallel,
                recorder,
                batch_id,
                hook_abort_grace,
                deps,
            )
            _log(native.machine.id, None)
            return await run_calls(native, pending)
        finally:
            if own_fusion is not None:
                own_fusion.close()
    _log(None, reason)
    loop = asyncio.get_running_loop()
    host = await host_for(loop)
    job: Job[list[ToolExecutionResult]] = Job(loop, CancelSignal())
    fusion, batch_signal = _fuse(signal, job.signal)

    async def run() -> list[ToolExecutionResult]:
        return await _run_tool_calls(
            registry,
            pending,
            signal=batch_signal,
            agent=agent,
            max_parallel=max_parallel,
            recorder=recorder,
            batch_id=batch_id,
            hook_abort_grace=hook_abort_grace,
            deps=deps,
        )

    host.spawn(job, run)
    try:
        return await wait_job(job)
    finally:
        if fusion is not None:
            fusion.close()


async def execute(
    registry: ToolRegistry,
    input: ToolExecutionInput,
    *,
    deps: Any = None,
    driver: Driver = "auto",
) -> ToolExecutionResult:
    """Run one call through ``registry``'s pipeline from asyncio.

    The asyncio form of :meth:`ToolRegistry.execute`. The call runs under a signal
    fused from ``input.signal`` and the awaiting task's cancellation (so listeners and
    the body see that fused signal, not ``input.signal`` itself): cancelling the task
    aborts the call (its result, ``ABORTED``, still reaches post-execute and the
    observers), waits until the body has unwound, and then raises ``CancelledError``.
    ``input.signal`` is never fired on the caller's behalf.

    The call runs natively on the running loop when its tool and the hooks run on
    asyncio and it has no deadline of its own, else in the trio guest run (``driver``;
    see :func:`batch_driver`).

    Raises:
        ValueError: ``driver`` is not a :data:`Driver` (or ``"asyncio"`` for a call
            that needs trio).
        asyncio.CancelledError: the awaiting task was cancelled (after the body unwound).
    """
    if driver not in _DRIVERS:
        raise ValueError(f"driver must be one of 'auto', 'asyncio', 'trio', got {driver!r}")
    native = isinstance(registry, ToolRegistry) and isinstance(input, ToolExecutionInput)
    if driver != "trio" and native:
        reason = execute_reason(registry, input)
        if reason is None:
            return await _execute_native(registry, input, deps)
        if driver == "asyncio":
            raise ValueError(f"driver='asyncio' cannot run this call: {reason}")
    loop = asyncio.get_running_loop()
    host = await host_for(loop)
    job: Job[ToolExecutionResult] = Job(loop, CancelSignal())
    fusion = None
    if isinstance(input, ToolExecutionInput) and isinstance(input.signal, CancelSignal):
        fusion = fuse(input.signal, job.signal)
        input = msgspec.structs.replace(input, signal=fusion.signal)

    async def run() -> ToolExecutionResult:
        return await registry.execute(input, deps=deps)

    host.spawn(job, run)
    try:
        return await wait_job(job)
    finally:
        if fusion is not None:
            fusion.close()


class AsyncioToolBatch:
    """A batch being run, seen from asyncio; made by :func:`open_tool_batch`.

    The asyncio face of :class:`toolnursery.ToolBatch`: :meth:`submit` calls as the
    model streams them, :meth:`close` when the response is complete, and iterate
    with ``async for`` to receive ``(call, result)`` pairs in model order.
    """

    __slots__ = ("_batch", "_finished", "_loop", "_native", "_pairs", "_read", "_waiters")

    def __init__(
        self, loop: asyncio.AbstractEventLoop, native: AsyncioDriver | None = None
    ) -> None:
        self._loop = loop
        self._native = native
        self._batch: ToolBatch | None = None
        self._pairs: list[tuple[ToolCall, ToolExecutionResult]] = []
        self._read = 0
        self._finished = False
        self._waiters: list[asyncio.Future[None]] = []

    @property
    def driver(self) -> Literal["asyncio", "trio"]:
        """Which driver runs the batch: ``"asyncio"`` (natively on this loop) or
        ``"trio"`` (the trio guest run); see :func:`batch_driver`."""
        return "trio" if self._native is None else "asyncio"

    @property
    def id(self) -> str:
        """The batch id the recorder's events carry."""
        native = self._native
        return native.machine.id if native is not None else self._trio_batch.id

    @property
    def signal(self) -> CancelSignal:
        """The batch's own signal: ``batch.signal.cancel(reason)`` aborts the batch."""
        native = self._native
        return native.machine.signal if native is not None else self._trio_batch.signal

    @property
    def results(self) -> list[ToolExecutionResult]:
        """The results committed so far, in model order."""
        native = self._native
        if native is not None:
            return list(native.machine.results)
        return self._trio_batch.results

    def statistics(self) -> ToolStatistics:
        """A frozen snapshot of the batch (see :meth:`toolnursery.ToolBatch.statistics`)."""
        native = self._native
        if native is not None:
            return native.machine.statistics()
        return self._trio_batch.statistics()

    def submit(self, call: ToolCall) -> int:
        """Add the next call (model order); returns its index in the batch.

        Raises:
            TypeError: ``call`` is not a :class:`ToolCall`.
            RuntimeError: the batch is closed.
        """
        native = self._native
        if native is None:
            return self._trio_batch.submit(call)
        machine = native.machine
        if machine.closed:
            raise RuntimeError("this batch is closed; submit() takes calls only before close()")
        index = machine.add(call)
        native.wake_up()
        return index

    def close(self) -> None:
        """End submission: the batch finishes once every submitted call has committed."""
        native = self._native
        if native is not None:
            native.close()
        else:
            self._trio_batch.close()

    def __aiter__(self) -> AsyncioToolBatch:
        return self

    async def __anext__(self) -> tuple[ToolCall, ToolExecutionResult]:
        native = self._native
        if native is not None:
            return await self._next_native(native)
        while self._read >= len(self._pairs):
            if self._finished:
                raise StopAsyncIteration
            waiter = self._loop.create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            finally:
                self._waiters.remove(waiter)
        pair = self._pairs[self._read]
        self._read += 1
        return pair

    async def _next_native(self, native: AsyncioDriver) -> tuple[ToolCall, ToolExecutionResult]:
        machine = native.machine
        results = machine.results
        while self._read >= len(results):
            if native.finished:
                raise StopAsyncIteration
            event = machine.reader
            if event is None or event.is_set():
                event = machine.reader = asyncio.Event()
            await event.wait()  # type: ignore[attr-defined]
        index = self._read
        self._read += 1
        tool_call = machine.calls[index].tool_call
        assert tool_call is not None
        return tool_call, results[index]

    @property
    def _trio_batch(self) -> ToolBatch:
        batch = self._batch
        if batch is None:  # pragma: no cover - the batch is attached before it is yielded
            raise RuntimeError("the batch is not open yet")
        return batch

    def _push(self, pair: tuple[ToolCall, ToolExecutionResult] | None) -> None:
        if pair is None:
            self._finished = True
        else:
            self._pairs.append(pair)
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)


@asynccontextmanager
async def open_tool_batch(
    registry: ToolRegistry,
    *,
    signal: CancelSignal | None = None,
    agent: ToolScope | None = None,
    max_parallel: int = 10,
    recorder: ToolCallRecorder | None = None,
    batch_id: str | None = None,
    hook_abort_grace: float | None = None,
    deps: Any = None,
    driver: Driver = "auto",
) -> AsyncIterator[AsyncioToolBatch]:
    """Open a batch from asyncio that runs calls as they are submitted.

    The asyncio form of :func:`toolnursery.open_tool_batch`::

        async with toolnursery.aio.open_tool_batch(registry) as batch:
            async for call in calls_streaming_from_the_model():
                batch.submit(call)
            batch.close()
            async for call, result in batch:
                print(call.id, result.is_error)

    Leaving the block closes submission and waits until every submitted call has
    committed. If the block raises (``CancelledError`` included), the batch is
    aborted — started calls drain, the rest get ``ABORTED_BEFORE_DISPATCH`` — before
    the exception propagates.

    The calls are not known when the batch opens, so the driver is chosen from every
    tool the view can call (see :func:`batch_driver`); ``batch.driver`` says which.

    Raises:
        ValueError: ``max_parallel`` is not a positive integer, ``batch_id`` not a
            non-empty string, ``hook_abort_grace`` negative or NaN, or ``driver`` not
            a :data:`Driver` (or ``"asyncio"`` for a view that needs trio).
        TypeError: ``hook_abort_grace`` is not a number.
        Exception: the scheduler's first internal failure, at the end of the block.
    """
    loop = asyncio.get_running_loop()
    reason = _choose(driver, registry, agent, None)
    if reason is None:
        check_batch(registry, signal, agent, max_parallel, batch_id, hook_abort_grace)
        own_fusion = fuse(signal) if signal is not None else None
        own = own_fusion.signal if own_fusion is not None else CancelSignal()
        native = AsyncioDriver(
            registry, own, agent, max_parallel, recorder, batch_id, hook_abort_grace, deps
        )
        _log(native.machine.id, None)
        task = loop.create_task(native.drive(), name=f"toolnursery:batch {native.machine.id}")
        try:
            try:
                yield AsyncioToolBatch(loop, native)
            except BaseException:
                own.cancel(_BLOCK_RAISED)
                native.close()
                await settle_task(task, own, native.close)
                raise
            native.close()
            await settle_task(task, own, native.close)
        finally:
            if own_fusion is not None:
                own_fusion.close()
        return
    _log(None, reason)
    host = await host_for(loop)
    job: Job[None] = Job(loop, CancelSignal())
    fusion, batch_signal = _fuse(signal, job.signal)
    view = AsyncioToolBatch(loop)
    opened: asyncio.Future[None] = loop.create_future()

    async def run() -> None:
        try:
            async with _open_tool_batch(
                registry,
                signal=batch_signal,
                agent=agent,
                max_parallel=max_parallel,
                recorder=recorder,
                batch_id=batch_id,
                hook_abort_grace=hook_abort_grace,
                deps=deps,
            ) as batch:
                view._batch = batch
                job.on_abort = batch.close
                if job.signal.cancelled:
                    batch.close()
                if not opened.done():
                    opened.set_result(None)
                async for pair in batch:
                    view._push(pair)
        finally:
            view._push(None)
            if not opened.done():
                opened.set_result(None)

    host.spawn(job, run)
    try:
        try:
            await opened
        except asyncio.CancelledError:
            await drain_job(job, _BLOCK_RAISED)
            raise
        if view._batch is None:  # the batch failed to open: raise why
            await wait_job(job)
        try:
            yield view
        except BaseException:
            await drain_job(job, _BLOCK_RAISED)
            raise
        view.close()
        await wait_job(job)
    finally:
        if fusion is not None:
            fusion.close()


def _fuse(signal: CancelSignal | None, abort: CancelSignal) -> tuple[Fusion | None, Any]:
    """The batch signal: the caller's fused with the job's abort.

    Anything but a :class:`CancelSignal` is passed through untouched, so the trio API
    rejects it with its own error.
    """
    if signal is None:
        return None, abort
    if not isinstance(signal, CancelSignal):
        return None, signal
    fusion = fuse(signal, abort)
    return fusion, fusion.signal
