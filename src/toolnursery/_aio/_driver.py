"""The asyncio driver of a batch: the batch machine run natively on an asyncio loop.

The batch's state and decisions are the machine's
(:class:`~toolnursery._machine._batch.BatchMachine`), as under the trio driver
(:mod:`toolnursery._batch._driver`); this module awaits what the machine hands out with
asyncio's own primitives: one task per dispatch (asyncio starts tasks in the order they
were made, so bodies start in model order) in a group of the driver's own (the tasks
count themselves out and the last one wakes the driver: what a ``TaskGroup`` does, for
less; the driver cancels and awaits them itself), :meth:`asyncio.Task.cancel` for the
abort and one timer per deadline group (:class:`~toolnursery._aio._tasks.DeadlineGroup`).
A lone call without a recorder runs in the awaiting task with no machine at all
(:func:`~toolnursery._aio._execute.run_lone`).

Abort: the batch signal cancels the dispatches' tasks (a call the driver runs in place:
its own task, the cancellation counted and taken back with ``uncancel()``); the driver
drains, commits and observes in model order. A cancellation from outside aborts the
batch the same way; the drain then runs in a task of its own that later cancellations
cannot interrupt (trio's shielded scope, emulated), and the outside ``CancelledError``
propagates once the batch has finished, its count on the task untouched (so an
enclosing ``asyncio.timeout`` still raises ``TimeoutError``). asyncio's cancellation is
edge-triggered: a body that catches ``CancelledError`` and awaits again runs on (its
success still becomes ``ABORTED``); see ``docs/asyncio.md``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Coroutine
from typing import Any, Final

from .._batch._approvals import LogSinks, close_log, open_log
from .._core._decisions import ResourceKey
from .._core._lifecycle import Slot
from .._core._signal import CancelSignal, link
from .._machine._batch import BARRIER, HAND_OFF_MAX, INLINE, POOL, BatchMachine
from .._machine._events import ToolCallRecorder
from .._pipeline._call import CallRecord
from .._pipeline._plan import Route
from .._pipeline._registry import ToolRegistry, ToolScope
from ._dispatching import Dispatches, Stalled
from ._tasks import CANCELLED_REASON, DeadlineGroup, prepared

__all__ = ["AsyncioDriver"]

_NEW = Slot.NEW
_QUEUED = Slot.QUEUED
_RUNNING = Slot.RUNNING
_SETTLED = Slot.SETTLED
_AWAIT: Final = Route.AWAIT
_CancelledError: Final = asyncio.CancelledError
_current_task: Final = asyncio.current_task


def _no_time() -> float:
    return 0.0


class AsyncioDriver(Dispatches):
    """The asyncio side of one batch (arguments: :class:`BatchMachine`'s)."""

    __slots__ = ("finished", "reports", "waiter", "woken")

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
    ) -> None:
        loop = asyncio.get_running_loop()
        self.loop: asyncio.AbstractEventLoop = loop
        recorded = recorder is not None
        self.machine: BatchMachine = BatchMachine(
            registry,
            signal,
            agent,
            max_parallel,
            recorder,
            batch_id,
            grace,
            deps,
            wake=self.wake_up,
            clock=loop.time if recorded else _no_time,
            new_latch=asyncio.Event,
            wall=round(time.time(), 6) if recorded else 0.0,
        )
        self.grouped: bool = False  # the calls run in tasks (drive), not inline (run)
        self.pending: int = 0  # the dispatch tasks not yet ended
        self.live: dict[CallRecord, asyncio.Task[Any]] = {}  # dispatches begun, running
        self.inline: asyncio.Task[Any] | None = None  # a dispatch the driver awaits
        self.here: asyncio.Task[Any] | None = None  # the driver's task, dispatching in place
        self.here_sent: bool = False  # the abort cancelled it
        self.here_handle: asyncio.Handle | None = None  # the abort's, from inside it
        self.deadlines: dict[float, DeadlineGroup] | None = None  # budget -> group filling
        self.waiter: asyncio.Future[None] | None = None
        self.woken: bool = False
        self.handed_off: bool = False  # the tasks commit (see hand_off)
        self.deferred: bool = False  # ... or, handed off, the driver after the group
        self.unwinding: bool = False  # a dispatch was cancelled, not by the batch's abort
        self.aborted_at: float | None = None
        self.reports: LogSinks | None = None  # the progress sink's, the approvals'
        self.stalled: Stalled | None = None  # a post-execute that suspended in a task
        self.finished: bool = False
        self.escaped: BaseException | None = None  # a task's (see escape)

    def close(self) -> None:
        self.machine.closed = True
        self.wake_up()

    # -- waking ---------------------------------------------------------------------------

    def wake_up(self) -> None:
        self.woken = True
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def sleep(self) -> None:
        """Wait until a dispatch settles, a call is submitted, or the batch is closed
        (at once when that happened since the last wait)."""
        self.deadlines = None  # the pass ends: later calls of a budget get a new group
        if self.woken:
            self.woken = False
            return
        waiter = self.waiter = self.loop.create_future()
        try:
            await waiter
        finally:
            self.waiter = None
        self.woken = False

    async def wait(self) -> None:
        await self.sleep()
        self.raise_escaped()
        self.machine.raise_failure()

    def raise_escaped(self) -> None:
        if self.escaped is not None:
            raise self.escaped  # a task's BaseException (see escape)

    # -- the run ----------------------------------------------------------------------------

    async def drive(self) -> None:
        """Drive the batch with a task per dispatch: a group of the driver's own (each
        task counts itself out; the last one wakes the driver), not a TaskGroup."""
        self.grouped = True
        try:
            await self.run()
            while self.pending:
                await self.sleep()  # the tasks commit (hand_off); the last one wakes us
            self.raise_escaped()
        except _CancelledError:
            if self.handed_off:
                # Cancelled from outside while the tasks committed: abort (which cancels
                # them), wait for them, commit the rest (the driver: once they have all
                # unwound, as a task group's exit would), then let it go on.
                self.deferred = True
                await self.after_cancel()
                self.end(self.machine.drained() and self.machine.failure is None)
            raise
        except BaseException:
            await self.unwind_tasks()
            if self.handed_off:
                self.end(False)
            raise
        if self.handed_off:
            ended = False
            try:
                machine = self.machine
                machine.raise_failure()
                if not self.commit_all():
                    await self.drain()  # a post-execute suspended (no dispatch runs now)
                if machine.recorder is not None:
                    machine.record_contexts()
                ended = True
            finally:
                self.end(ended)

    async def run(self) -> None:
        """Drive the batch to its end (no group: a batch of one call, run inline)."""
        machine = self.machine
        # The batch signal is private to this batch, so the link dies with it.
        link(machine.signal, self.on_abort)
        if machine.recorder is not None:
            self.reports = open_log(machine)
        ended = False
        try:
            await self.schedule()
            if self.grouped and self.hand_off():
                return
            if not self.commit_all():
                await self.drain()
            while True:
                if machine.cursor < len(machine.calls):
                    machine.finish_unstarted()
                if machine.closed:
                    break
                await self.wait()
            if machine.recorder is not None:
                machine.record_contexts()
            ended = True
        except _CancelledError:
            await self.after_cancel()
            ended = self.machine.drained() and self.machine.failure is None
            raise
        except Exception as exc:
            # Internal failure: start nothing new, let in-flight dispatches settle,
            # re-raise the first failure.
            failure = machine.failure
            if failure is None:
                machine.failure = failure = exc
            while machine.in_flight() or self.inline is not None:
                await self.sleep()
            if failure is exc:
                raise
            raise failure  # noqa: B904 (the first failure, re-raised as itself)
        finally:
            if not self.handed_off:
                self.end(ended)

    async def unwind_tasks(self) -> None:
        """A ``BaseException`` ends the batch: abort, and wait until every task has ended
        (a task group's exit; a cancellation meanwhile cannot cut it short, and the
        exception goes on either way)."""
        machine = self.machine
        machine.closed = True
        self.deferred = True
        if not machine.signal.cancelled:
            machine.signal.cancel(CANCELLED_REASON)
        while self.pending:
            with contextlib.suppress(_CancelledError):
                await self.sleep()

    async def after_cancel(self) -> None:
        """A cancellation from outside came: abort, then finish the batch in a task that
        later cancellations cannot reach; the caller re-raises (a failure wins)."""
        machine = self.machine
        machine.closed = True
        machine.signal.cancel(CANCELLED_REASON)
        rest = self.loop.create_task(self.finish_aborted())
        while not rest.done():
            with contextlib.suppress(_CancelledError):
                await asyncio.wait((rest,))  # never cancels ``rest``
        rest.result()

    async def finish_aborted(self) -> None:
        machine = self.machine
        inline = self.inline
        if inline is not None:
            await asyncio.wait((inline,))
        while machine.in_flight():
            await self.sleep()
        machine.raise_failure()
        await self.drain()
        machine.finish_unstarted()
        machine.record_contexts()

    def end(self, ended: bool) -> None:
        """The batch has ended (``ended``: every call committed, nothing in flight)."""
        stalled = self.stalled
        if stalled is not None:  # a failure came first: the suspended post-execute ends
            self.stalled = None
            stalled[1].close()
        reports = self.reports
        if reports is not None:
            self.reports = None
            try:
                close_log(reports)
            except ValueError:
                pass  # ended in another context (a drain task): the run's context resets it
        self.machine.fold_statistics()
        self.finished = True
        reader = self.machine.reader
        if reader is not None:
            reader.set()

    def aborted(self) -> float | None:  # when the abort came (the loop's clock), if it did
        return self.aborted_at

    def on_abort(self, _: CancelSignal) -> None:
        """The batch signal fired: cancel the dispatches in flight (the driver's own task
        only while it dispatches a call in place: from inside that task, a body aborting
        its own batch, at its next suspension, so the cancellation lands in the call)."""
        self.aborted_at = self.loop.time()
        for task in list(self.live.values()):
            task.cancel()
        here = self.here
        if here is not None:
            if _current_task(self.loop) is here:
                self.here_handle = self.loop.call_soon(self.cancel_here)
            else:
                self.cancel_here()
        self.wake_up()

    def cancel_here(self) -> None:
        self.here_handle = None
        if not self.here_sent and self.here is not None:
            self.here_sent = True
            self.here.cancel()

    # -- starting calls -----------------------------------------------------------------------

    async def schedule(self) -> None:
        """Start the calls in model order, as the machine places them (a barrier once
        what runs has drained), committing the settled prefix as it goes."""
        machine = self.machine
        calls = machine.calls
        signal = machine.signal
        admission = machine.admission
        i = 0
        fresh = True  # a call may have settled since the last commit (the driver waited)
        while True:
            if fresh:
                fresh = False
                cursor = machine.cursor
                if (
                    cursor < len(calls)
                    and calls[cursor].slot is _SETTLED
                    and not self.commit_all()
                    and self.stalled is not None
                ):
                    await self.commit_ready()  # a post-execute suspended
            if i >= len(calls):
                if machine.closed:
                    return
                await self.wait()
                fresh = True
                continue
            if signal.cancelled:
                return
            # Waiting calls hold no slot, but at most max_parallel of them wait.
            if admission.running >= admission.cap or admission.waiting >= admission.cap:
                await self.wait()
                fresh = True
                continue
            call = calls[i]
            alone = not admission.admitted and machine.closed and i == len(calls) - 1
            step = machine.step(call, alone)
            i += 1
            if step == POOL:
                self.spawn(call)  # (nothing has run meanwhile: no commit to try)
                continue
            fresh = True
            if step == INLINE:
                await self.dispatch_inline(call)
            elif step == BARRIER:
                # Exclusive: once what runs has drained, it runs alone.
                await self.drain()
                if signal.cancelled:
                    return
                await self.proceed(call, (), machine.start(call, (), True, True), True)
                await self.drain()
            elif step:
                await self.proceed(call, machine.keys, step, alone)

    async def proceed(
        self,
        call: CallRecord,
        keys: tuple[ResourceKey, ...],
        step: int | Coroutine[Any, Any, None],
        inline: bool,
    ) -> None:
        """Await what the machine's step handed out: the rest of a policy that suspended
        (then the call is placed), or a dispatch in place (``INLINE``)."""
        machine = self.machine
        if not isinstance(step, int):
            # A policy hook suspended: await the rest of the policy, then place the call.
            self.deadlines = None
            await prepared(call, step, machine.stats if machine.timings else None)
            machine.raise_failure()
            step = machine.place(call, keys, inline)
            if step == POOL:
                self.spawn(call)
                return
        if step == INLINE:
            await self.dispatch_inline(call)

    # -- committing ----------------------------------------------------------------------------

    def hand_off(self) -> bool:
        """Whether the driver leaves the commits to the tasks (see the trio driver's)."""
        machine = self.machine
        if (
            not machine.closed
            or machine.started < len(machine.calls)
            or machine.in_flight() > HAND_OFF_MAX
        ):
            return False
        machine.raise_failure()
        cursor = machine.cursor
        if cursor < len(machine.calls) and machine.calls[cursor].slot is _SETTLED:
            pending = machine.commit_now(post=True)
            if pending is not None:
                self.stalled = pending  # a post-execute suspended: the driver awaits it
                return False
        self.handed_off = True
        last = machine.last  # (every plan of the batch's view has the view's hooks)
        if (
            machine.recorder is None
            and machine.reader is None
            and (last is None or not last.hooks.any_finalize)
        ):
            # Nothing watches the commits as they happen (no log, no reader, no
            # post-execute hook or observer): the driver commits once the group has
            # ended (it wakes then anyway), not each task.
            self.deferred = True
        return True

    async def commit_ready(self) -> None:
        """Commit the settled model-order prefix; await a post-execute that suspends."""
        machine = self.machine
        stalled = self.stalled
        if stalled is not None:
            self.stalled = None
            call, rest, begun = stalled
            machine.finish_commit(call, await rest, begun)
        while True:
            pending = machine.commit_now(post=True)
            if pending is None:
                return
            call, rest, begun = pending
            machine.finish_commit(call, await rest, begun)

    def commit_all(self) -> bool:
        """Commit what has settled, as far as nothing awaits; whether the batch has
        drained (else :meth:`drain` awaits the rest)."""
        machine = self.machine
        if self.stalled is not None:
            return False
        pending = machine.commit_now(post=True)
        if pending is not None:
            self.stalled = pending
            return False
        return machine.drained()

    async def drain(self) -> None:
        """Wait until nothing is in flight and every started call has committed."""
        machine = self.machine
        while True:
            await self.commit_ready()
            if machine.drained():
                return
            await self.wait()
