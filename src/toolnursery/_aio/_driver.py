"""The asyncio driver of a batch: the batch machine run natively on an asyncio loop.

The batch's state and every decision about it are the machine's
(:class:`~toolnursery._machine._batch.BatchMachine`), as under the trio driver
(:mod:`toolnursery._batch._driver`); this module awaits what the machine hands out and
waits where it must, with asyncio's own primitives: one :class:`asyncio.TaskGroup` per
batch (none for a lone call), one task per dispatch (asyncio starts tasks in the order
they were made, so bodies start in model order), :meth:`asyncio.Task.cancel` for the
abort and one timer per deadline group for the timeout policy.

Abort: the batch signal cancels the tasks of the dispatches in flight (never the
driver's own task); a task cancelled before it began settles its call as
``ABORTED_BEFORE_DISPATCH``. The driver drains, commits and observes in model order, as
on trio. A cancellation from outside (the awaiting task cancelled, an enclosing
``asyncio.timeout``) aborts the batch the same way, and the drain then runs in a task of
its own that further cancellations cannot interrupt (trio's shielded scope, emulated);
the outside ``CancelledError`` propagates once the batch is finished, its count on the
task untouched, so an enclosing ``asyncio.timeout`` still turns it into ``TimeoutError``.
A cancellation the driver makes itself (a deadline group's timer) is taken back with
``uncancel()`` when it comes back.

What asyncio cannot do as trio does: its cancellation is edge-triggered, so a body that
catches ``CancelledError`` and goes on awaiting is not cancelled again (its result, if a
success, still becomes ``ABORTED``); and a body cannot start tasks in the batch's group
(nothing a body starts with ``asyncio.create_task`` is the batch's to cancel).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Coroutine, Iterable
from contextvars import Token
from typing import Any, Final

from .._core._content import ToolCall, ToolExecutionResult
from .._core._decisions import ResourceKey
from .._core._errors import AbortError, ToolTimeoutError
from .._core._lifecycle import RESOLVED, Slot, cut_short
from .._core._outcomes import ABORTED_BEFORE_DISPATCH_RESULT, failure_result
from .._core._progress import ReportSink, install_sink, remove_sink
from .._core._scope import check_agent
from .._core._signal import CancelSignal, link, unlink
from .._core._statistics import ToolStatistics
from .._core._statistics import now as _now
from .._machine._batch import BARRIER, HAND_OFF_MAX, INLINE, POOL, BatchMachine
from .._machine._events import ToolCallRecorder
from .._pipeline._call import CallRecord
from .._pipeline._dispatch import invoke, resolve_dispatch, settle
from .._pipeline._dispatch import start as start_dispatch
from .._pipeline._registry import ToolRegistry, ToolScope

__all__ = ["CANCELLED_REASON", "AsyncioDriver", "run_calls"]

CANCELLED_REASON: Final = "the awaiting asyncio task was cancelled"
GROUP_SIZE: Final = 64
"""At most this many calls share one deadline timer."""

_NEW = Slot.NEW
_QUEUED = Slot.QUEUED
_RUNNING = Slot.RUNNING
_SETTLED = Slot.SETTLED
_CancelledError: Final = asyncio.CancelledError
_current_task: Final = asyncio.current_task


def _no_time() -> float:
    return 0.0


class _Deadline:
    """The calls of one time budget that the driver placed in one pass: one timer.

    Each member's own deadline is the budget from its start; the last member to start
    sets the timer to the latest of them (asyncio starts them in one loop iteration).
    When it fires, every member still running is cancelled; a member whose own deadline
    had passed before the batch's abort is ``TOOL_TIMEOUT``.
    """

    __slots__ = ("budget", "deadline", "fired", "handle", "hit", "members", "unstarted")

    def __init__(self, budget: float) -> None:
        self.budget = budget
        self.members: dict[CallRecord, asyncio.Task[Any]] = {}
        self.unstarted = 0
        self.deadline = -math.inf
        self.handle: asyncio.TimerHandle | None = None
        self.fired = False
        self.hit: set[CallRecord] = set()  # members the timer cancelled

    def expire(self) -> None:
        self.fired = True
        for call, task in self.members.items():
            self.hit.add(call)
            task.cancel()


class _Cancel:
    """Cancels the driver's own task when the batch signal fires (a dispatch it runs
    in place); from inside that task (a body aborting its own batch), at its next
    suspension instead, so the cancellation always lands inside the dispatch."""

    __slots__ = ("handle", "sent", "task")

    def __init__(self, task: asyncio.Task[Any]) -> None:
        self.task = task
        self.sent = False
        self.handle: asyncio.Handle | None = None

    def __call__(self, _: CancelSignal) -> None:
        if _current_task() is self.task:
            self.handle = self.task.get_loop().call_soon(self.fire)
        else:
            self.fire()

    def fire(self) -> None:
        self.handle = None
        if not self.sent:
            self.sent = True
            self.task.cancel()

    def close(self) -> None:
        handle = self.handle
        if handle is not None:
            self.handle = None
            handle.cancel()


class AsyncioDriver:
    """The asyncio side of one batch: its group, its tasks, the waits.

    Args: as :class:`~toolnursery._machine._batch.BatchMachine`'s (the clock, the event
    type and the wake-up are this driver's).
    """

    __slots__ = (
        "aborted_at",
        "deadlines",
        "finished",
        "group",
        "handed_off",
        "inline",
        "live",
        "loop",
        "machine",
        "read",
        "reports",
        "unwinding",
        "waiter",
        "woken",
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
    ) -> None:
        loop = self.loop = asyncio.get_running_loop()
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
            clock=loop.time if recorded else _no_time,
            new_latch=asyncio.Event,
            wall=round(time.time(), 6) if recorded else 0.0,
        )
        self.group: asyncio.TaskGroup | None = None
        self.live: dict[CallRecord, asyncio.Task[Any]] = {}  # dispatches begun, running
        self.inline: asyncio.Task[Any] | None = None  # a dispatch the driver awaits
        self.deadlines: dict[float, _Deadline] | None = None  # budget -> group filling
        self.waiter: asyncio.Future[None] | None = None
        self.woken = False
        self.handed_off = False  # the tasks commit (see hand_off)
        self.unwinding = False  # a dispatch was cancelled, not by the batch's abort
        self.aborted_at: float | None = None
        self.reports: Token[ReportSink | None] | None = None
        self.finished = False
        self.read = 0

    # -- the public face's side ---------------------------------------------------------

    @property
    def id(self) -> str:
        return self.machine.id

    def submit(self, call: ToolCall) -> int:
        machine = self.machine
        if machine.closed:
            raise RuntimeError("this batch is closed; submit() takes calls only before close()")
        index = machine.add(call)
        self.wake_up()
        return index

    def close(self) -> None:
        self.machine.closed = True
        self.wake_up()

    def statistics(self) -> ToolStatistics:
        return self.machine.statistics()

    async def next_pair(self) -> tuple[ToolCall, ToolExecutionResult] | None:
        """The next committed pair in model order, or ``None`` once the batch has ended."""
        machine = self.machine
        results = machine.results
        while self.read >= len(results):
            if self.finished:
                return None
            event = machine.reader
            if event is None or event.is_set():
                event = machine.reader = asyncio.Event()
            await event.wait()  # type: ignore[attr-defined]
        index = self.read
        self.read += 1
        tool_call = machine.calls[index].tool_call
        assert tool_call is not None
        return tool_call, results[index]

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
        self.machine.raise_failure()

    # -- the run ----------------------------------------------------------------------------

    async def drive(self) -> None:
        """Open the batch's task group and drive the batch in it."""
        try:
            async with asyncio.TaskGroup() as group:
                self.group = group
                await self.run()
        except _CancelledError:
            if self.handed_off:
                # Cancelled from outside while the tasks committed: the group has
                # cancelled them; abort, commit the rest, then let it go on.
                await self.after_cancel()
                self.end(self.finished_cleanly())
            raise
        except BaseExceptionGroup as group:
            if self.handed_off:
                self.end(False)
            raise _single(group) from None
        except BaseException:
            if self.handed_off:
                self.end(False)
            raise
        if self.handed_off:
            ended = False
            try:
                self.machine.raise_failure()
                await self.drain()  # every dispatch has settled: nothing to wait for
                self.machine.record_contexts()
                ended = True
            finally:
                self.end(ended)

    async def run(self) -> None:
        """Drive the batch to its end (no group: a batch of one call, run inline)."""
        machine = self.machine
        # The batch signal is private to this batch, so the link dies with it.
        link(machine.signal, self.on_abort)
        if machine.recorder is not None:
            self.reports = install_sink(machine.record_report)
        ended = False
        try:
            await self.schedule()
            if self.group is not None and self.hand_off():
                return
            await self.drain()
            while True:
                machine.finish_unstarted()
                if machine.closed:
                    break
                await self.wait()
            machine.record_contexts()
            ended = True
        except _CancelledError:
            await self.after_cancel()
            ended = self.finished_cleanly()
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

    def finished_cleanly(self) -> bool:
        machine = self.machine
        return machine.failure is None and machine.cursor >= len(machine.calls)

    async def after_cancel(self) -> None:
        """A cancellation from outside reached the batch: abort it, then drain, commit
        and give the unstarted calls their results in a task of its own, which later
        cancellations cannot interrupt. The caller re-raises the cancellation (unless
        the drain failed: its failure wins, the cancellation as its context)."""
        machine = self.machine
        machine.closed = True
        machine.signal.cancel(CANCELLED_REASON)
        rest = self.loop.create_task(self.finish_aborted())
        while not rest.done():
            try:
                await asyncio.shield(rest)
            except _CancelledError:
                continue
            except Exception:
                break
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
        reports = self.reports
        if reports is not None:
            self.reports = None
            try:
                remove_sink(reports)
            except ValueError:
                pass  # ended in another context (a drain task): the run's context resets it
        self.machine.fold_statistics()
        self.finished = True
        reader = self.machine.reader
        if reader is not None:
            reader.set()

    def on_abort(self, _: CancelSignal) -> None:
        """The batch signal fired: cancel the dispatches in flight (never the driver)."""
        self.aborted_at = self.loop.time()
        for task in list(self.live.values()):
            task.cancel()
        self.wake_up()

    # -- starting calls -----------------------------------------------------------------------

    async def schedule(self) -> None:
        machine = self.machine
        calls = machine.calls
        signal = machine.signal
        admission = machine.admission
        i = 0
        while True:
            if i >= len(calls):
                if machine.closed:
                    return
                await self.wait()
                continue
            if signal.cancelled:
                return
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
                self.spawn(call)
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
                    self.spawn(call)
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
        if not isinstance(step, int):
            # A policy hook suspended: await the rest of the policy, then place the call.
            self.deadlines = None
            if machine.timings:
                begun = _now()
                await step
                machine.stats.prepare += _now() - begun
            else:
                await step
            machine.raise_failure()
            step = machine.place(call, keys, inline)
            if step == POOL:
                self.spawn(call)
                return
        if step == INLINE:
            await self.dispatch_inline(call)

    def spawn(self, call: CallRecord) -> None:
        """Start an admitted call's task in the batch's group."""
        machine = self.machine
        stamps = machine.stamps
        if stamps is not None:
            stamps[call.index] = [self.loop.time(), None, None]
        if machine.signal.cancelled:
            # Aborted while the call was being prepared: it never runs.
            call.unwind()
            machine.settled(call)
            return
        plan = call.plan
        assert plan is not None
        budget = plan.budget
        deadline = None if budget is None else self.join(call, budget)
        group = self.group
        assert group is not None
        group.create_task(self.dispatch(call, deadline, True))

    def join(self, call: CallRecord, budget: float) -> _Deadline:
        """The deadline group of this pass that ``call`` (``budget`` ms) joins."""
        deadlines = self.deadlines
        if deadlines is None:
            deadlines = self.deadlines = {}
        group = deadlines.get(budget)
        if group is None or group.unstarted + len(group.members) >= GROUP_SIZE:
            group = deadlines[budget] = _Deadline(budget)
        group.unstarted += 1
        return group

    async def dispatch_inline(self, call: CallRecord) -> None:
        """Dispatch in the driver: in place when it cannot suspend, else in a task of its
        own (so the abort cancels that task, never the driver's)."""
        machine = self.machine
        timings = machine.timings
        begun = _now() if timings else 0
        plan = call.plan
        assert plan is not None
        stamps = machine.stamps
        if stamps is not None:
            stamps[call.index] = stamp = [None, self.loop.time(), None]
        if plan.bare and not plan.route.suspends:
            assert call.slot is _NEW
            call.slot = _RUNNING
            awaitable, ending = start_dispatch(call)
            try:
                outcome = await awaitable  # never yields
            except Exception as exc:
                ending.raised(call, exc)
            else:
                ending.returned(call, outcome)
            call.slot = _SETTLED
        elif plan.budget is None:
            assert call.slot is _NEW
            call.slot = _RUNNING
            await self.dispatch_here(call)
            call.slot = _SETTLED
        else:
            budget = plan.budget
            deadline = None
            if budget is not None:
                deadline = _Deadline(budget)
                deadline.unstarted = 1
            task = self.inline = self.loop.create_task(self.dispatch(call, deadline, False))
            try:
                await task
            finally:
                if task.done():
                    self.inline = None
        if timings:
            machine.stats.dispatch += _now() - begun
        if stamps is not None:
            stamp[2] = self.loop.time()

    async def dispatch_here(self, call: CallRecord) -> None:
        """Dispatch in the driver's own task, which the abort then cancels: counted, and
        taken back with ``uncancel()`` when it comes back (an outside cancellation
        passes as itself)."""
        task = _current_task()
        assert task is not None
        cancel = _Cancel(task)
        signal = self.machine.signal
        link(signal, cancel)
        try:
            awaitable, ending = start_dispatch(call)
            try:
                outcome = await awaitable
            except Exception as exc:
                ending.raised(call, exc)
            else:
                ending.returned(call, outcome)
        except _CancelledError:
            ours = cancel.sent
            cancel.sent = False
            if not ours and task.cancelling() == 0:
                # The body raised CancelledError itself: the call is aborted, as on trio.
                call.resolve(failure_result(AbortError()), RESOLVED)
                return
            call.resolve(call.aborted(), RESOLVED)
            if ours and task.uncancel() == 0:
                return  # the abort's own cancellation: taken back
            call.slot = _SETTLED
            raise  # from outside: the caller drains, commits, re-raises
        finally:
            unlink(signal, cancel)
            cancel.close()
        if cancel.sent:
            task.uncancel()  # the body caught the abort's cancellation and returned

    async def dispatch(self, call: CallRecord, deadline: _Deadline | None, pooled: bool) -> None:
        """One call's dispatch task: wait for its turn, dispatch, settle (and commit)."""
        machine = self.machine
        signal = machine.signal
        if signal.cancelled and call.slot is _QUEUED:
            # Aborted before this task began: it never runs.
            if deadline is not None:
                deadline.unstarted -= 1
            call.unwind()
            machine.settled(call)
            self.settled(call)
            return
        task = _current_task()
        assert task is not None
        live = self.live
        live[call] = task
        timings = machine.timings
        begun = 0
        try:
            wait = call.wait
            aborted = False
            if pooled and wait is not None and not wait.running:
                # A keyed call behind a conflicting one, or one the pool had no slot
                # for: wait for the turn without holding a slot.
                assert wait.granted is not None
                if timings:
                    begun = _now()
                    await wait.granted.wait()
                    machine.stats.wait += _now() - begun
                else:
                    await wait.granted.wait()
                if signal.cancelled:
                    assert call.slot is _QUEUED  # it never ran
                    call.resolve(ABORTED_BEFORE_DISPATCH_RESULT, RESOLVED)
                    aborted = True
            if not aborted:
                if pooled:
                    assert call.slot is _QUEUED
                    call.slot = _RUNNING
                    stamps = machine.stamps
                    if stamps is not None:
                        stamps[call.index][1] = self.loop.time()
                else:
                    assert call.slot is _NEW
                    call.slot = _RUNNING
                if timings:
                    begun = _now()
                if deadline is None:
                    awaitable, ending = start_dispatch(call)
                    try:
                        outcome = await awaitable
                    except Exception as exc:
                        ending.raised(call, exc)
                    else:
                        ending.returned(call, outcome)
                else:
                    await self.timed(call, deadline, task)
                if timings and pooled:
                    machine.stats.dispatch += _now() - begun
        except _CancelledError:
            if deadline is not None and call in deadline.hit:
                # The group's timer cancelled it: TOOL_TIMEOUT unless the abort came first.
                aborted_at = self.aborted_at
                own = deadline.deadline
                if aborted_at is None or aborted_at >= own:
                    call.timed_out = deadline.budget
                call.unwind()
                if task.uncancel() == 0:
                    call.slot = _SETTLED
                    return
                raise
            if task.cancelling() == 0:
                # The body raised CancelledError itself (a task it awaited was
                # cancelled by someone else): the call is aborted, as on trio.
                call.resolve(failure_result(AbortError()), RESOLVED)
                call.slot = _SETTLED
                return
            if not signal.cancelled:
                self.unwinding = True  # cancelled from outside the batch
            call.unwind()
            if not pooled and signal.cancelled and task.cancelling() == 1:
                return  # the abort's own cancellation of this task: ours to end
            raise
        except Exception as exc:
            machine.failed(exc)
        else:
            call.slot = _SETTLED
        finally:
            live.pop(call, None)
            if deadline is not None:
                deadline.members.pop(call, None)
                if not deadline.members and not deadline.unstarted:
                    handle = deadline.handle
                    if handle is not None:
                        handle.cancel()
            if pooled:
                stamps = machine.stamps
                if stamps is not None and call.slot is _SETTLED:
                    stamps[call.index][2] = self.loop.time()
                machine.settled(call)
                self.settled(call)

    async def timed(self, call: CallRecord, deadline: _Deadline, task: asyncio.Task[Any]) -> None:
        """The dispatch of a call whose view's only execute wrapper is the timeout policy:
        the body awaited with the group's timer armed."""
        loop = self.loop
        budget = deadline.budget
        own = loop.time() + budget / 1000
        if own > deadline.deadline:
            deadline.deadline = own
        deadline.unstarted -= 1
        deadline.members[call] = task
        if not deadline.unstarted:
            deadline.handle = loop.call_at(deadline.deadline, deadline.expire)
        if call.caller.cancelled:
            resolve_dispatch(call, cut_short(call.invoked))
            return
        failed: ToolExecutionResult | None = None
        value: Any = None
        try:
            value = await invoke(call)
        except Exception as exc:
            failed = failure_result(exc)
        finally:
            if call.derived is not None:
                call.end_attempt()
        if call in deadline.hit:
            # The timer cancelled the body and it returned anyway: the deadline passed.
            task.uncancel()
            aborted_at = self.aborted_at
            if aborted_at is None or aborted_at >= own:
                result = failure_result(ToolTimeoutError(budget))
                resolve_dispatch(call, result)
                return
        resolve_dispatch(call, failed if failed is not None else settle(call, value))

    def settled(self, call: CallRecord) -> None:
        """A task settled a call: wake the driver; after the hand-off, commit."""
        if not self.handed_off:
            self.wake_up()
            return
        machine = self.machine
        if machine.failure is None and (not self.unwinding or machine.signal.cancelled):
            try:
                machine.commit_now(post=False)
            except Exception as exc:
                machine.failed(exc)  # the driver re-raises it once the group has ended

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
        machine.commit_now(post=False)
        if machine.post_due():
            return False
        self.handed_off = True
        return True

    async def commit_ready(self) -> None:
        """Commit the settled model-order prefix; await a post-execute that suspends."""
        machine = self.machine
        while True:
            pending = machine.commit_now(post=True)
            if pending is None:
                return
            call, rest, begun = pending
            machine.finish_commit(call, await rest, begun)

    async def drain(self) -> None:
        """Wait until nothing is in flight and every started call has committed."""
        machine = self.machine
        while True:
            await self.commit_ready()
            if machine.drained():
                return
            await self.wait()


def _single(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one failure a task group wrapped (the driver's own: tasks raise none)."""
    exceptions = group.exceptions
    while len(exceptions) == 1 and isinstance(exceptions[0], BaseExceptionGroup):
        exceptions = exceptions[0].exceptions
    return exceptions[0] if len(exceptions) == 1 else group


async def run_calls(driver: AsyncioDriver, calls: Iterable[ToolCall]) -> list[ToolExecutionResult]:
    """Run a whole, known batch from this task; its results."""
    machine = driver.machine
    add = machine.add
    for call in calls:
        add(call)
    machine.closed = True
    if len(machine.calls) <= 1:
        await driver.run()  # a lone call runs inline: no group
    else:
        await driver.drive()
    return machine.results


def check_batch(
    registry: ToolRegistry, signal: object, agent: ToolScope | None, max_parallel: object
) -> None:
    """The checks of the trio API's batch arguments (its errors, word for word)."""
    if type(max_parallel) is not int or max_parallel < 1:
        raise ValueError(f"max_parallel must be a positive integer, got {max_parallel!r}")
    if signal is not None and not isinstance(signal, CancelSignal):
        raise TypeError(f"signal must be a CancelSignal, not {type(signal).__name__}")
    if agent is not None:
        check_agent(registry, agent)


async def settle_task(task: asyncio.Task[Any], abort: CancelSignal, close: Any) -> None:
    """Await a batch's driver task to its end, whatever cancellations arrive.

    A cancellation of the awaiting task aborts the batch (``abort`` fires, ``close()``
    ends submission) and keeps waiting; it propagates once the driver has ended, unless
    the driver failed, whose failure then wins (the cancellation as its context).
    """
    cancelled: BaseException | None = None
    while not task.done():
        try:
            await asyncio.shield(task)
        except _CancelledError as exc:
            if task.done() and task.cancelled():
                raise  # the driver's own task was cancelled (the loop shuts down)
            cancelled = exc
            if not task.done():
                abort.cancel(CANCELLED_REASON)
                close()
        except Exception:
            break  # the driver failed: raised below
    if cancelled is not None:
        failure = None if task.cancelled() else task.exception()
        if failure is not None:
            failure.__context__ = cancelled
            raise failure
        raise cancelled
    task.result()
