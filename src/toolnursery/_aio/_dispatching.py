"""The asyncio driver's dispatches: a call's task, or the call run in the driver's own
task, from admission to settling (and, once the driver has handed the commits off, the
commit of the settled prefix). A part of :class:`~toolnursery._aio._driver.AsyncioDriver`
(its base class), apart for its length: see that module for the whole.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, Final

from .._core._content import ToolExecutionResult
from .._core._errors import AbortError
from .._core._lifecycle import RESOLVED, Slot
from .._core._outcomes import ABORTED_BEFORE_DISPATCH_RESULT, failure_result
from .._core._statistics import now as _now
from .._pipeline._call import CallRecord
from .._pipeline._dispatch import invoke, resolve_dispatch, settle_dispatch
from .._pipeline._dispatch import start as start_dispatch
from .._pipeline._plan import Route
from ._tasks import DeadlineGroup

if TYPE_CHECKING:
    from .._machine._batch import BatchMachine

__all__ = ["GROUP_SIZE", "Dispatches", "Stalled"]

GROUP_SIZE: Final = 64
"""At most this many calls share one deadline timer."""

Stalled = tuple[CallRecord, Coroutine[Any, Any, ToolExecutionResult], int]
"""A post-execute that suspended in a task's commit: the call, the rest, when it began."""

_NEW: Final = Slot.NEW
_QUEUED: Final = Slot.QUEUED
_RUNNING: Final = Slot.RUNNING
_SETTLED: Final = Slot.SETTLED
_AWAIT: Final = Route.AWAIT
_CancelledError: Final = asyncio.CancelledError
_current_task: Final = asyncio.current_task


class Dispatches:
    """The dispatch half of :class:`~toolnursery._aio._driver.AsyncioDriver` (which
    holds the state these methods read)."""

    __slots__ = (
        "aborted_at",
        "deadlines",
        "deferred",
        "escaped",
        "grouped",
        "handed_off",
        "here",
        "here_handle",
        "here_sent",
        "inline",
        "live",
        "loop",
        "machine",
        "pending",
        "stalled",
        "unwinding",
    )

    machine: BatchMachine
    loop: asyncio.AbstractEventLoop
    grouped: bool
    pending: int
    live: dict[CallRecord, asyncio.Task[Any]]
    inline: asyncio.Task[Any] | None
    here: asyncio.Task[Any] | None
    here_sent: bool
    here_handle: asyncio.Handle | None
    deadlines: dict[float, DeadlineGroup] | None
    handed_off: bool
    deferred: bool
    unwinding: bool
    aborted_at: float | None
    stalled: Stalled | None
    escaped: BaseException | None

    def wake_up(self) -> None:
        raise NotImplementedError  # the driver's

    def aborted(self) -> float | None:
        raise NotImplementedError  # the driver's

    def escape(self, exc: BaseException) -> None:
        """A task raised a ``BaseException`` that is not the library's to catch: the batch
        ends with it, as a task group's would (the abort cancels the tasks still running;
        nothing more commits; the driver re-raises it once they have all ended)."""
        if self.escaped is None:
            self.escaped = exc
            self.deferred = True
            machine = self.machine
            machine.closed = True
            machine.signal.cancel("a dispatch raised " + type(exc).__name__)
        self.wake_up()

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
        # The task is referenced by self.live once it runs (and by the loop until then);
        # it counts itself out of self.pending when it ends.
        create_task = self.loop.create_task
        self.pending += 1
        if budget is None:
            if call.wait is None and stamps is None and not machine.timings:
                create_task(self.dispatch_bare(call))  # the common case
            else:
                create_task(self.dispatch(call, None, True))
        else:
            create_task(self.dispatch(call, self.join(call, budget), True))

    def join(self, call: CallRecord, budget: float) -> DeadlineGroup:
        """The deadline group of this pass that ``call`` (``budget`` ms) joins."""
        deadlines = self.deadlines
        if deadlines is None:
            deadlines = self.deadlines = {}
        group = deadlines.get(budget)
        if group is None or group.unstarted + len(group.members) >= GROUP_SIZE:
            group = deadlines[budget] = DeadlineGroup(budget)
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
            awaitable, ending = start_dispatch(call, True)
            try:
                outcome = await awaitable  # never yields
            except Exception as exc:
                ending.raised(call, exc)
            else:
                ending.returned(call, outcome)
            call.slot = _SETTLED
        elif plan.budget is None:
            # In the driver's own task, which the abort then cancels (on_abort): counted,
            # and taken back with uncancel() when it comes back (an outside cancellation
            # passes as itself). toolnursery._aio._tasks.dispatch_here, inlined.
            assert call.slot is _NEW
            call.slot = _RUNNING
            task = self.here = _current_task(self.loop)
            assert task is not None
            try:
                awaitable, ending = start_dispatch(call, True)
                try:
                    outcome = await awaitable
                except Exception as exc:
                    ending.raised(call, exc)
                else:
                    ending.returned(call, outcome)
            except _CancelledError:
                ours = self.here_sent
                self.here_sent = False
                if not ours and task.cancelling() == 0:
                    # The body raised CancelledError itself: aborted, as on trio.
                    call.resolve(failure_result(AbortError()), RESOLVED)
                elif ours and task.uncancel() == 0:
                    call.resolve(call.aborted(), RESOLVED)  # the abort's: taken back
                else:
                    call.resolve(call.aborted(), RESOLVED)
                    call.slot = _SETTLED
                    raise  # from outside: run() drains, commits, re-raises
            finally:
                self.here = None
                handle = self.here_handle
                if handle is not None:
                    self.here_handle = None
                    handle.cancel()
            if self.here_sent:
                self.here_sent = False
                task.uncancel()  # the body caught the abort's cancellation and returned
            call.slot = _SETTLED
        else:
            budget = plan.budget
            deadline = None
            if budget is not None:
                deadline = DeadlineGroup(budget)
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

    async def dispatch_bare(self, call: CallRecord) -> None:
        """:meth:`dispatch` of a pooled call that holds its slot, with no deadline, wait,
        stamps or phase timings: the body (or the execute wrappers' chain) awaited here
        (the common case)."""
        machine = self.machine
        if machine.signal.cancelled:
            # Aborted before this task began: it never runs.
            call.unwind()
            machine.settled(call)
            self.settled(call)
            self.ended()
            return
        task = _current_task(self.loop)
        assert task is not None
        live = self.live
        live[call] = task
        call.slot = _RUNNING
        try:
            plan = call.plan
            assert plan is not None
            if plan.bare and plan.version == plan.versions.value and plan.route is _AWAIT:
                try:
                    outcome = await invoke(call, True)
                except Exception as exc:
                    resolve_dispatch(call, failure_result(exc))
                else:
                    settle_dispatch(call, outcome)
            else:  # a wrapper chain; or the registry changed, or the body cannot suspend
                awaitable, ending = start_dispatch(call, True)
                try:
                    outcome = await awaitable
                except Exception as exc:
                    ending.raised(call, exc)
                else:
                    ending.returned(call, outcome)
        except _CancelledError:
            if task.cancelling() == 0:
                # The body raised CancelledError itself (a task it awaited was
                # cancelled by someone else): the call is aborted, as on trio.
                call.resolve(failure_result(AbortError()), RESOLVED)
                call.slot = _SETTLED
                return
            if not machine.signal.cancelled:
                self.unwinding = True  # cancelled from outside the batch
            call.unwind()
            raise
        except Exception as exc:
            machine.failed(exc)
        except BaseException as exc:
            self.escape(exc)  # not a cancellation: ends the batch (see escape)
        else:
            call.slot = _SETTLED
        finally:
            del live[call]
            # machine.settled(call), inlined: a call without a wait held one slot.
            admission = machine.admission
            admission.admitted -= 1
            admission.running -= 1
            if admission.ready:
                admission.grant()
            if not self.handed_off:
                self.wake_up()
            elif not self.deferred:
                self.settled(call)
            self.pending -= 1  # self.ended(), inlined
            if not self.pending:
                self.wake_up()

    async def dispatch(
        self, call: CallRecord, deadline: DeadlineGroup | None, pooled: bool
    ) -> None:
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
            self.ended()
            return
        task = _current_task(self.loop)
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
                if deadline is not None:
                    budget = call.current_plan().budget
                    if budget != deadline.budget:
                        # The registry changed since the call was placed, its budget with
                        # it: it leaves its group (for a deadline of its own, if any).
                        deadline.leave(self.loop)
                        deadline = None if budget is None else DeadlineGroup(budget)
                        if deadline is not None:
                            deadline.unstarted = 1
                if deadline is None:
                    awaitable, ending = start_dispatch(call, True)
                    try:
                        outcome = await awaitable
                    except Exception as exc:
                        ending.raised(call, exc)
                    else:
                        ending.returned(call, outcome)
                else:
                    await deadline.run(call, task, self.aborted)
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
        except BaseException as exc:
            self.escape(exc)  # not a cancellation: ends the batch (see escape)
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
                self.ended()

    def ended(self) -> None:
        """A pooled dispatch's task ends: the last one wakes the driver."""
        self.pending -= 1
        if not self.pending:
            self.wake_up()

    def settled(self, call: CallRecord) -> None:
        """A task settled a call: wake the driver; after the hand-off, commit (unless
        the driver commits once the group has ended)."""
        if not self.handed_off:
            self.wake_up()
            return
        if self.deferred:
            return
        machine = self.machine
        ok = machine.failure is None and (not self.unwinding or machine.signal.cancelled)
        if ok and self.stalled is None:
            # Post-execute and observers run here, in model order; one that suspends
            # is left to the driver (which awaits it once the group has ended).
            try:
                self.stalled = machine.commit_now(post=True)
            except Exception as exc:
                machine.failed(exc)  # the driver re-raises it once the group has ended
            except BaseException as exc:
                self.escape(exc)
