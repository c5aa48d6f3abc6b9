"""The trio driver of a batch (:class:`ToolBatch`, in :mod:`._face`, is its public face).

The batch's state and every decision about it are the machine's
(:class:`~toolnursery._machine._batch.BatchMachine`): this module only awaits what the
machine hands out (a policy or post-execute hook that suspended, a body) and waits where
it must (a full pool, a barrier, a call not submitted yet). One nursery per batch (none
for a lone call); the pool's workers run in it (:mod:`toolnursery._batch._pool`). Once
every call of a closed batch has started, the driver hands the commits to the workers:
the worker that settles the call at the commit cursor commits the settled prefix
(:meth:`TrioDriver.settled`), and the driver waits only for the nursery's exit.

Abort: the batch signal cancels the nursery's scope (every pooled call at once) and
shields the driver's scope, so the driver still drains, commits and observes the calls
that settle while the workers unwind, before the nursery's ``Cancelled`` ends there.
"""

from __future__ import annotations

import time
from collections.abc import Coroutine
from typing import Any

import trio

from .._core._content import ToolExecutionResult
from .._core._decisions import ResourceKey
from .._core._lifecycle import Slot
from .._core._signal import CancelSignal, link
from .._core._statistics import now as _now
from .._machine._batch import BARRIER, DONE, HAND_OFF_MAX, HOLD, INLINE, POOL, BatchMachine
from .._machine._events import ToolCallRecorder
from .._pipeline._call import CallRecord
from .._pipeline._registry import ToolRegistry, ToolScope
from ._approvals import LogSinks, close_log, open_log
from ._pool import WorkerPool, dispatch_in_place

__all__ = ["TrioDriver"]

_NEW = Slot.NEW
_RUNNING = Slot.RUNNING
_SETTLED = Slot.SETTLED


def _no_time() -> float:
    return 0.0


_FRESH: tuple[int, Any] = (0, "fresh")
"""What :meth:`TrioDriver.run_now` returns when it did nothing (:meth:`TrioDriver.run` begins)."""


class TrioDriver:
    """The trio side of one batch: the nursery, the pool, the waits."""

    __slots__ = (
        "finished",
        "handed_off",
        "machine",
        "nursery",
        "pool",
        "posting",
        "read",
        "reports",
        "scope",
        "wake",
        "woken",
    )

    def __init__(
        self,
        registry: ToolRegistry,
        signal: CancelSignal,
        agent: ToolScope | None,
        max_parallel: int,
        recorder: ToolCallRecorder | None,
        batch_id: str | None,
        grace: float | None,
        deps: Any,
    ) -> None:
        recorded = recorder is not None
        self.machine = BatchMachine(
            registry,
            signal,
            agent,
            max_parallel,
            recorder,
            batch_id,
            grace,
            deps,
            wake=self.wake_up,
            clock=trio.current_time if recorded else _no_time,
            new_latch=trio.Event,
            wall=round(time.time(), 6) if recorded else 0.0,
        )
        self.nursery: trio.Nursery | None = None  # the batch nursery, set by run
        self.scope: trio.CancelScope | None = None  # the driver's, inside the nursery
        self.pool: WorkerPool | None = None  # made on the first pooled dispatch
        self.reports: LogSinks | None = None  # the progress sink's, the approvals'
        # A wake-up while the driver runs is a flag; the event is made only when the
        # driver does wait (see sleep).
        self.woken = False
        self.wake: trio.Event | None = None
        self.handed_off = False  # the workers commit (see hand_off)
        # The scope a worker awaits a suspended post-execute in (see settled), shielded
        # by the abort as the driver's is.
        self.posting: trio.CancelScope | None = None
        self.finished = False
        self.read = 0

    def wake_up(self) -> None:
        self.woken = True
        event = self.wake
        if event is not None:
            event.set()

    def leave(self, call: CallRecord) -> None:
        """(The gate of a pooled call that waits for its tool's limit: its slot is free.)"""
        self.machine.admission.leave(call)

    async def rejoin(self, call: CallRecord) -> None:
        """(The gate: the call got its tool's limit; it waits for a slot again.)"""
        latch = self.machine.admission.rejoin(call)
        if latch is not None:
            await latch.wait()  # type: ignore[attr-defined]

    def close(self) -> None:
        machine = self.machine
        machine.closed = True
        self.wake_up()
        pool = self.pool
        if pool is not None and machine.started >= len(machine.calls):
            pool.close()  # nothing more to dispatch: parked workers end

    async def drive(self) -> None:
        """Open the batch nursery and drive the batch in it (the pool runs there too)."""
        try:
            async with trio.open_nursery() as nursery:
                self.nursery = nursery
                at = self.run_now()
                if at is not None:
                    # The driver awaits in the nursery: under a scope of its own, which
                    # the abort shields from the nursery's cancellation (abort_pool).
                    with trio.CancelScope() as scope:
                        if self.machine.signal.cancelled:
                            scope.shield = True  # aborted already, in run_now
                        self.scope = scope
                        await self.run(nursery, at)
        except BaseException:
            if self.handed_off:
                self.end(ended=False)
            raise
        if self.handed_off:
            # The pool has ended: commit what the workers left (a post-execute that
            # awaits, say).
            machine = self.machine
            ended = False
            try:
                if machine.failure is not None:
                    raise machine.failure
                if machine.cursor < len(machine.calls):
                    await self.drain()  # every dispatch has settled: nothing to wait for
                if machine.recorder is not None:
                    machine.record_contexts()
                ended = True
            finally:
                self.end(ended)

    def run_now(self) -> tuple[int, Any] | None:
        """Start a closed batch's calls in one pass, with no await, as far as that goes:
        ``None`` when every call started and the driver handed the rest to its workers
        (:meth:`hand_off`), so it awaits nothing in the nursery; else where to go on
        (:meth:`run`): the index of the next call and what its step left to do (``None``,
        a step, or the internal failure to raise); ``_FRESH``: nothing was done."""
        machine = self.machine
        calls = machine.calls
        n = len(calls)
        if not machine.closed or machine.recorder is not None or n > HAND_OFF_MAX:
            return _FRESH
        signal = machine.signal
        # The batch signal is private to this batch, so the link dies with it.
        link(signal, self.on_abort)
        admission = machine.admission
        step = machine.step
        # A policy hook that suspends must do so under the driver's scope: a call with
        # policy hooks is left to run (HOLD).
        machine.hold = True
        i = 0
        try:
            while i < n:
                cap = admission.cap
                if signal.cancelled or admission.running >= cap or admission.waiting >= cap:
                    return i, None
                call = calls[i]
                done = step(call, i == n - 1 and not admission.admitted)
                if done == POOL:
                    pool = self.pool
                    if pool is not None and pool.lot is None and call.plan.outer_budget is None:  # type: ignore[union-attr]
                        # self.submit(call), inlined: a worker is owed (see flush).
                        call.gate = self
                        pool.queue.append(call)
                        pool.owed += 1
                    else:
                        self.submit(call)
                elif done:
                    return i, done
                i += 1
            pool = self.pool
            if pool is not None:
                pool.close()  # every call started: parked workers end
            if self.hand_off():
                return None
        except Exception as exc:
            return i, exc
        finally:
            machine.hold = False
        return n, None

    async def run(self, nursery: trio.Nursery | None, at: tuple[int, Any] = _FRESH) -> None:
        """Drive the batch to the end; the pool goes into ``nursery`` (``None``: a batch of
        at most one call, which runs inline and needs no pool). ``at``: where
        :meth:`run_now` left it."""
        self.nursery = nursery
        machine = self.machine
        if at is _FRESH:
            # The batch signal is private to this batch, so the link dies with it.
            link(machine.signal, self.on_abort)
            # The calls' progress reports become durable events (the tasks the batch
            # starts inherit this context, so pooled bodies report here too).
            if machine.recorder is not None:
                self.reports = open_log(machine)
        ended = False
        try:
            if at is _FRESH:
                await self.schedule(0, True)
            else:
                await self.resume(*at)
            if nursery is not None and self.hand_off():
                return
            await self.drain()
            while True:
                machine.finish_unstarted()
                if machine.closed:
                    break
                await self.wait()
            machine.record_contexts()
            ended = True
        except Exception as exc:
            # Internal failure: start nothing new, let in-flight dispatches settle,
            # re-raise the first failure.
            failure = machine.failure
            if failure is None:
                machine.failure = failure = exc
            while machine.admission.admitted:
                await self.sleep()
            if failure is exc:
                raise
            raise failure  # noqa: B904 (the first failure, re-raised as itself)
        finally:
            if not self.handed_off:
                self.end(ended)

    def end(self, ended: bool) -> None:
        """The batch has ended (``ended``: every call committed, nothing in flight)."""
        reports = self.reports
        if reports is not None:
            self.reports = None
            close_log(reports)
        pool = self.pool
        if pool is None:
            pass
        elif ended:
            # Every call committed and nothing is in flight: the parked workers end and
            # the pool closes, with no cancellation to deliver.
            pool.finish()
        else:
            pool.cancel()
        machine = self.machine
        if machine.timings or machine.cursor < machine.started:
            machine.fold_statistics()  # (else there is nothing to fold)
        self.finished = True
        reader = machine.reader
        if reader is not None:
            reader.set()

    def on_abort(self, _: CancelSignal) -> None:
        posting = self.posting
        if posting is not None:
            posting.shield = True
        pool = self.pool
        if pool is not None:
            self.abort_pool(pool)
        self.wake_up()

    def abort_pool(self, pool: WorkerPool) -> None:
        """Cancel the batch nursery (the pooled calls), the driver shielded from it."""
        scope = self.scope
        if scope is not None:
            scope.shield = True
        pool.cancel()

    async def resume(self, i: int, step: Any) -> None:
        """Go on from where :meth:`run_now` stopped: call ``i``, and its step."""
        if isinstance(step, Exception):
            raise step
        if step is None:
            await self.schedule(i, False)
        elif step == BARRIER:
            await self.drain()
            await self.schedule(i, True)
        else:
            machine = self.machine
            calls = machine.calls
            call = calls[i]
            keys = machine.keys
            alone = i == len(calls) - 1 and not machine.admission.admitted
            if step == HOLD:
                step = machine.start(call, keys, alone, False)
                if step == POOL:
                    self.submit(call)
                    step = DONE
            if step:
                await self.proceed(call, keys, step, alone)
            await self.schedule(i + 1, False)

    async def schedule(self, i: int, fresh: bool) -> None:
        """Start the calls from index ``i`` on (``fresh``: nothing is in flight)."""
        machine = self.machine
        calls = machine.calls
        signal = machine.signal
        admission = machine.admission
        while True:
            if not fresh:
                fresh = True
            elif i >= len(calls):
                if machine.closed:
                    return
                await self.wait()
                continue
            elif signal.cancelled:
                return
            else:
                call = calls[i]
                keys = machine.classify(call)
                if keys is None:
                    # Exclusive: a barrier. The previous group has drained already.
                    await self.proceed(call, (), machine.start(call, (), True, True), True)
                    i += 1
                    await self.drain()
                    continue
                alone = machine.closed and i == len(calls) - 1
                step = machine.start(call, keys, alone, False)
                if step == POOL:
                    self.submit(call)
                elif step:
                    await self.proceed(call, keys, step, alone)
                i += 1
            while True:
                cursor = machine.cursor
                if cursor < len(calls) and calls[cursor].slot is _SETTLED:
                    await self.commit_ready()
                if i >= len(calls):
                    if machine.closed:
                        return
                    await self.wait()
                    continue
                if signal.cancelled:
                    return
                # Waiting calls hold no slot, but at most max_parallel of them wait.
                if admission.running >= admission.cap or admission.waiting >= admission.cap:
                    await self.wait()
                    continue
                call = calls[i]
                alone = machine.closed and i == len(calls) - 1 and not admission.admitted
                step = machine.step(call, alone)
                if step == POOL:
                    pool = self.pool
                    if (
                        pool is not None
                        and pool.lot is None
                        and call.plan.outer_budget is None  # type: ignore[union-attr]
                        and machine.stamps is None
                        and i < len(calls) - 1  # the last call closes the pool (submit)
                    ):
                        # self.submit(call), inlined: a worker is owed for the next await.
                        call.gate = self
                        pool.queue.append(call)
                        pool.owed += 1
                    else:
                        self.submit(call)
                elif step == BARRIER:
                    break
                elif step:
                    await self.proceed(call, machine.keys, step, alone)
                i += 1
            await self.drain()

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
        pool = self.pool
        if pool is not None and pool.owed:
            pool.flush()
        if not isinstance(step, int):
            # A policy hook suspended: await the rest of the policy, then place the call.
            if machine.timings:
                begun = _now()
                await step
                machine.stats.prepare += _now() - begun
            else:
                await step
            if machine.failure is not None:
                raise machine.failure
            step = machine.place(call, keys, inline)
            if step == POOL:
                self.submit(call)
                return
        if step == INLINE:
            await dispatch_in_place(self.machine, call)

    def submit(self, call: CallRecord) -> None:
        """Hand an admitted call to the pool (made on the first one)."""
        machine = self.machine
        call.gate = self
        stamps = machine.stamps
        if stamps is not None:
            stamps[call.index] = [trio.current_time(), None, None]
        pool = self.pool
        if pool is None:
            nursery = self.nursery
            assert nursery is not None
            pool = self.pool = WorkerPool(
                nursery,
                signal=machine.signal,
                admission=machine.admission,
                stats=machine.stats,
                clock=_now if machine.timings else None,
                stamps=stamps,
                wake=self.settled,
                failed=machine.failed,
            )
            if machine.signal.cancelled:
                self.abort_pool(pool)  # aborted while the call was being prepared
        plan = call.plan
        assert plan is not None
        # A call whose view's only or outermost wrapper is the timeout policy, and which
        # runs now, may share a deadline scope with the calls of its budget.
        pool.submit(call, plan.outer_budget)
        if machine.closed and machine.started >= len(machine.calls):
            pool.close()  # the last call: the other parked workers end

    async def commit_ready(self) -> None:
        """Commit the settled model-order prefix; await a post-execute that suspends."""
        machine = self.machine
        while True:
            pending = machine.commit_now(post=True)
            if pending is None:
                return
            call, rest, begun = pending
            pool = self.pool
            if pool is not None and pool.owed:
                pool.flush()
            machine.finish_commit(call, await rest, begun)

    def hand_off(self) -> bool:
        """Whether the driver leaves the rest of the batch to its workers.

        Once every call of a closed batch has started, the driver has nothing left but to
        commit: the worker that settles a call commits the settled prefix, post-execute
        and observers included (:meth:`settled`; a post-execute that suspends is awaited
        by that worker, :meth:`posts`), and the driver commits whatever is left once the
        pool has ended. Not with more than ``HAND_OFF_MAX`` dispatches in flight.
        """
        machine = self.machine
        pool = self.pool
        if (
            not machine.closed
            or machine.started < len(machine.calls)
            or pool is None
            or machine.admission.admitted > HAND_OFF_MAX
        ):
            return False
        machine.raise_failure()
        pool.flush()
        calls, cursor = machine.calls, machine.cursor
        if cursor < len(calls) and calls[cursor].slot is _SETTLED:
            machine.commit_now(post=False)  # a post-execute due is the workers' (settled)
        self.handed_off = True
        if not machine.admission.admitted:
            pool.finish()  # nothing in flight: the pool's leftovers end now
        return True

    def settled(self) -> Coroutine[Any, Any, None] | None:
        """A worker settled a call: wake the driver; after the hand-off, commit.

        Returns what the worker awaits when a post-execute suspended (:meth:`posts`).
        """
        if not self.handed_off:
            self.wake_up()
            return None
        pool = self.pool
        assert pool is not None
        machine = self.machine
        if (
            self.posting is None
            and machine.failure is None
            and (not pool.unwinding or machine.signal.cancelled)
        ):
            # (Once a call was cancelled, and not by the batch's abort, something
            # outside cancels the batch: nothing is committed any more, here.)
            try:
                pending = machine.commit_now(post=True)
            except Exception as exc:
                machine.failed(exc)  # the driver re-raises it once the pool has ended
            else:
                if pending is not None:
                    self.posting = trio.CancelScope(shield=machine.signal.cancelled)
                    return self.posts(pending)
        if self.posting is None and not machine.admission.admitted:
            pool.finish()  # the last dispatch settled: what a body left running ends
        return None

    async def posts(
        self, pending: tuple[CallRecord, Coroutine[Any, Any, ToolExecutionResult], int]
    ) -> None:
        """(In the worker that settled a call.) Await the post-execute that suspended and
        commit on, in model order, under a scope the abort shields (as the driver's)."""
        machine = self.machine
        scope = self.posting
        assert scope is not None
        try:
            with scope:
                item: Any = pending
                while item is not None:
                    call, rest, begun = item
                    machine.finish_commit(call, await rest, begun)
                    item = machine.commit_now(post=True)
        except Exception as exc:
            machine.failed(exc)
        finally:
            self.posting = None
        pool = self.pool
        if pool is not None and not machine.admission.admitted:
            pool.finish()

    async def sleep(self) -> None:
        """Wait until a dispatch settles, a call is submitted, or the batch is closed.

        If that happened since the last wait, return at once (the caller re-checks its
        state and waits again if nothing changed), without a round through the scheduler.
        """
        pool = self.pool
        if pool is not None and pool.owed:
            pool.flush()  # before the driver awaits: see WorkerPool.flush
        if self.woken:
            self.woken = False
            return
        event = self.wake = trio.Event()
        try:
            await event.wait()
        finally:
            self.wake = None
            self.woken = False

    async def wait(self) -> None:
        """:meth:`sleep`, then raise the first internal failure of a worker, if any."""
        await self.sleep()
        failure = self.machine.failure
        if failure is not None:
            raise failure

    async def drain(self) -> None:
        """Wait until nothing is in flight and every started call has committed."""
        machine = self.machine
        admission = machine.admission
        while True:
            await self.commit_ready()
            if not admission.admitted and machine.cursor >= machine.started:
                return
            await self.wait()
