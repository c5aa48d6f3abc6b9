"""The batch's public face: :class:`ToolBatch` (``open_tool_batch``), and the functions
``run_tool_calls`` and ``open_tool_batch`` drive a batch with (:mod:`._driver`: the trio
driver)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import trio

from .._core._content import ToolCall, ToolExecutionResult
from .._core._signal import CancelSignal, link
from .._core._statistics import ToolStatistics
from .._machine._batch import BARRIER
from .._machine._events import ToolCallRecorder
from .._pipeline._registry import ToolRegistry, ToolScope
from ._driver import TrioDriver

__all__ = ["ToolBatch", "drive", "run_calls", "run_known"]


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
        driver = self._driver = TrioDriver(
            registry, signal, agent, max_parallel, recorder, batch_id, hook_abort_grace, deps
        )
        self.id: str = driver.machine.id

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
        driver = self._driver
        machine = driver.machine
        if machine.closed:
            raise RuntimeError("this batch is closed; submit() takes calls only before close()")
        index = machine.add(call)
        driver.wake_up()
        return index

    def close(self) -> None:
        """End submission: the batch finishes once every submitted call has committed."""
        self._driver.close()

    @property
    def results(self) -> list[ToolExecutionResult]:
        """The results committed so far, in model order."""
        return list(self._driver.machine.results)

    def statistics(self) -> ToolStatistics:
        """A frozen snapshot of this batch: its calls, their outcomes, phase times.

        ``started`` and ``committed`` count every call of the batch, the synthetic
        ``ABORTED_BEFORE_DISPATCH`` results and duplicate-id errors included; the
        registry's :meth:`~ToolRegistry.statistics` counts only what passed it.
        ``phase_seconds`` is filled when the registry's ``phase_timings`` was on as
        the batch opened.
        """
        return self._driver.machine.statistics()

    def __aiter__(self) -> ToolBatch:
        return self

    async def __anext__(self) -> tuple[ToolCall, ToolExecutionResult]:
        driver = self._driver
        machine = driver.machine
        results = machine.results
        while driver.read >= len(results):
            if driver.finished:
                raise StopAsyncIteration
            event = machine.reader
            if event is None or event.is_set():
                event = machine.reader = trio.Event()
            await event.wait()  # type: ignore[attr-defined]
        index = driver.read
        driver.read += 1
        tool_call = machine.calls[index].tool_call
        assert tool_call is not None
        return tool_call, results[index]


def drive(batch: ToolBatch) -> Any:
    """Run an open batch (``open_tool_batch``'s task): its awaitable."""
    return batch._driver.drive()


async def run_calls(batch: ToolBatch, calls: Iterable[ToolCall]) -> list[ToolExecutionResult]:
    """Run a whole, known batch from this task (``run_tool_calls``); its results."""
    return await run_driver(batch._driver, calls)


async def run_known(
    registry: ToolRegistry,
    signal: CancelSignal,
    agent: ToolScope | None,
    max_parallel: int,
    recorder: ToolCallRecorder | None,
    batch_id: str | None,
    grace: float | None,
    deps: Any,
    calls: Iterable[ToolCall],
) -> list[ToolExecutionResult]:
    """:func:`run_calls` on a batch made for it (no :class:`ToolBatch` face)."""
    driver = TrioDriver(registry, signal, agent, max_parallel, recorder, batch_id, grace, deps)
    # _run_known(driver, calls), inlined (one coroutine fewer per batch):
    machine = driver.machine
    add = machine.add
    for call in calls:
        add(call)
    machine.closed = True
    if len(machine.calls) <= 1:
        await trio.lowlevel.checkpoint_if_cancelled()
        await run_one(driver)
    else:
        await driver.drive()
    return machine.results


async def run_driver(driver: TrioDriver, calls: Iterable[ToolCall]) -> list[ToolExecutionResult]:
    """Run a whole, known batch on ``driver`` from this task; its results."""
    machine = driver.machine
    add = machine.add
    for call in calls:
        add(call)
    machine.closed = True
    if len(machine.calls) <= 1:
        # A lone call runs inline: no pool, so no nursery (whose exit would cost a round
        # through the scheduler). Still a cancel point, as a nursery is.
        await trio.lowlevel.checkpoint_if_cancelled()
        await run_one(driver)
    else:
        await driver.drive()
    return machine.results


async def run_one(driver: TrioDriver) -> None:
    """Drive a closed batch of at most one call (:meth:`run` with no pool), its steps
    in one pass."""
    machine = driver.machine
    calls = machine.calls
    if machine.recorder is not None or not calls:
        await driver.run(None)
        return
    driver.nursery = None
    signal = machine.signal
    link(signal, driver.on_abort)
    ended = False
    try:
        if not signal.cancelled:
            call = calls[0]
            step = machine.step(call, True)
            keys = machine.keys
            if step == BARRIER:
                keys = ()
                step = machine.start(call, keys, True, True)
            if step:
                await driver.proceed(call, keys, step, True)
            await driver.commit_ready()
        machine.finish_unstarted()
        ended = True
    except Exception as exc:
        failure = machine.failure
        if failure is None or failure is exc:
            machine.failure = exc
            raise
        raise failure  # noqa: B904 (the first failure, re-raised as itself)
    finally:
        driver.end(ended)
