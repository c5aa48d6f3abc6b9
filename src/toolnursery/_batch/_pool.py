"""The tasks of one batch that run its admitted dispatches: reused workers, deadline groups.

The driver (:mod:`toolnursery._batch._driver`) makes a :class:`WorkerPool` on its first
pooled call and talks to it through four methods: :meth:`~WorkerPool.submit` an
admitted call, :meth:`~WorkerPool.close` (no call will start any more),
:meth:`~WorkerPool.finish` (the batch ended normally) and :meth:`~WorkerPool.cancel` (it
did not). The pool's nursery opens in the batch nursery; the batch signal cancels its
scope. A worker dispatches one queued call after another, in model order, and parks
while the queue is empty; a call whose view's only or outermost execute wrapper is the
timeout policy, with a long budget, runs in a deadline group instead
(:class:`_DeadlineGroup`). Either way it ends by settling the call with the batch's
admission and waking the driver; each call moves ``QUEUED → RUNNING → SETTLED`` here
(see :class:`~toolnursery._pipeline._call.Slot`).

A worker runs each call's stage 2 through one seam, :func:`start_dispatch`
(:func:`toolnursery._pipeline._dispatch.start`): one awaitable, awaited in the worker's
own frame, and the ending that turns what it returned into the call's result.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable

import trio

from .._core._outcomes import ABORTED_BEFORE_DISPATCH_RESULT
from .._core._signal import CancelSignal, ScopeLink
from .._core._statistics import Counters
from .._pipeline._call import RESOLVED, CallRecord, Slot
from .._pipeline._dispatch import dispatch_grouped
from .._pipeline._dispatch import start as start_dispatch
from ._admission import Admission

__all__ = ["GROUP_MIN_BUDGET_MS", "GROUP_SIZE", "WorkerPool", "start_dispatch", "unwound"]

_QUEUED = Slot.QUEUED
_RUNNING = Slot.RUNNING
_SETTLED = Slot.SETTLED

GROUP_SIZE = 64
"""At most this many calls share one deadline scope (see :class:`_DeadlineGroup`)."""
GROUP_MIN_BUDGET_MS = 1000
"""Only calls with a budget of at least this many ms join a deadline group: a group's calls
may time out later than their own deadlines by the time the group takes to start (1-3 ms
for 64 calls on a 2-core machine), which must stay small beside the budget."""


class _DeadlineGroup:
    """Calls of one time budget that the driver placed in one pass: one deadline scope.

    A trio cancel scope costs more than the rest of a call's dispatch, so the calls whose
    only or outermost execute wrapper is the timeout policy, whose budget is at least
    :data:`GROUP_MIN_BUDGET_MS`, and which run as soon as they are placed, share one:
    its host task enters it and starts them in a nursery inside it. The members start
    in one scheduler batch; each computes its own deadline (the budget from its start),
    and the last to start gives the scope the latest of them. So no member times out
    before its budget has passed since it started, and none later than the time its
    group's calls take to start (each runs until its body first awaits; nothing, on a
    test clock that does not advance meanwhile) after.
    """

    __slots__ = ("budget", "calls", "deadline", "scope", "unstarted")

    def __init__(self, budget: float) -> None:
        self.budget = budget
        self.calls: list[CallRecord] = []
        self.deadline = -math.inf  # the latest own deadline of the members started
        self.unstarted = 0
        self.scope: trio.CancelScope | None = None


def unwound(call: CallRecord) -> None:
    """An abort unwound the call (running, or queued and never run): its result by
    whether its body ran; settled."""
    assert call.slot is _QUEUED or call.slot is _RUNNING
    call.resolve(call.aborted(), RESOLVED)
    call.slot = _SETTLED


class WorkerPool:
    """The dispatching tasks of one batch (see the module docstring).

    Args:
        host: the batch nursery, where the pool's nursery opens on the first call.
        signal: the batch signal (it cancels the pool's scope).
        admission: the batch's slots; every dispatch the pool ends is settled there.
        stats: the batch's counters (dispatch and wait times, when timed).
        clock: the phase clock (the batch's; in ns), or ``None``: no phase is timed.
        stamps: where a recorded batch keeps its calls' times (index -> ``[admitted,
            began, ended]`` on trio's clock; the pool sets the last two), or ``None``.
        wake: wakes the batch driver (a dispatch settled).
        failed: takes an internal failure of a dispatch (the driver re-raises the first).
    """

    __slots__ = (
        "_admission",
        "_clock",
        "_closed",
        "_done",
        "_failed",
        "_groups",
        "_host_nursery",
        "_idle",
        "_lot",
        "_nursery",
        "_queue",
        "_requested",
        "_signal",
        "_stamps",
        "_stats",
        "_unhosted",
        "_wake",
    )

    def __init__(
        self,
        host: trio.Nursery,
        *,
        signal: CancelSignal,
        admission: Admission,
        stats: Counters,
        clock: Callable[[], int] | None,
        wake: Callable[[], None],
        stamps: dict[int, list[float | None]] | None = None,
        failed: Callable[[Exception], None],
    ) -> None:
        self._signal = signal
        self._admission = admission
        self._stats = stats
        self._clock = clock
        self._stamps = stamps
        self._wake = wake
        self._failed = failed
        self._host_nursery = host
        self._nursery: trio.Nursery | None = None  # the pool's own, once open
        self._requested = False
        self._done = trio.Event()  # set when the batch has ended normally
        self._closed = False  # no call will start any more
        self._groups: dict[float, _DeadlineGroup] = {}  # budget -> group still filling
        self._unhosted: list[_DeadlineGroup] = []  # groups placed before the pool opened
        self._queue: deque[CallRecord] = deque()  # dispatches waiting for a worker
        self._idle = 0  # workers parked, waiting for a dispatch
        self._lot = trio.lowlevel.ParkingLot()

    # -- the driver's side ------------------------------------------------------------

    def submit(self, call: CallRecord, budget: float | None) -> None:
        """Run an admitted call: in a deadline group when ``budget`` (its timeout policy's,
        as the view's only or outermost wrapper) is long and it runs now, else by a worker.
        """
        if budget is not None and budget >= GROUP_MIN_BUDGET_MS and call.wait is None:
            self._join_group(call, budget)
            return
        self._enqueue(call)

    def close(self) -> None:
        """No call will start any more: parked workers end once the queue is empty."""
        self._closed = True
        if self._idle:
            self._idle = 0
            self._lot.unpark_all()

    def finish(self) -> None:
        """The batch ended normally (every call committed, none in flight): the pool closes
        with no cancellation to deliver."""
        if self._idle:
            self._idle = 0
            self._lot.unpark_all()
        self._done.set()

    def cancel(self) -> None:
        """The batch did not end normally: whatever runs in the pool is cancelled."""
        if self._nursery is not None:
            self._nursery.cancel_scope.cancel()

    # -- tasks ------------------------------------------------------------------------

    def _enqueue(self, call: CallRecord) -> None:
        """Queue a call for a worker: wake a parked one, or start one."""
        self._queue.append(call)
        if self._idle:
            if self._closed:
                # The last call: wake every parked worker (the rest then end).
                self._idle = 0
                self._lot.unpark_all()
            else:
                self._idle -= 1
                self._lot.unpark()
            return
        nursery = self._nursery
        if nursery is not None:
            nursery.start_soon(self._worker)
        else:
            self._request()

    def _request(self) -> None:
        if not self._requested:
            # No waiting for the pool: it spawns the workers queued meanwhile.
            self._requested = True
            self._host_nursery.start_soon(self._host)

    def _join_group(self, call: CallRecord, budget: float) -> None:
        groups = self._groups
        group = groups.get(budget)
        if group is None or len(group.calls) >= GROUP_SIZE:
            group = groups[budget] = _DeadlineGroup(budget)
            nursery = self._nursery
            if nursery is not None:
                nursery.start_soon(self._host_group, group)
            else:
                self._unhosted.append(group)
                self._request()
        group.calls.append(call)

    async def _host(self) -> None:
        """Own the pool nursery, whose cancel scope the batch signal cancels."""
        try:
            async with trio.open_nursery() as nursery:
                self._signal._link(ScopeLink(nursery.cancel_scope))
                self._nursery = nursery
                for _ in range(len(self._queue)):
                    nursery.start_soon(self._worker)
                unhosted = self._unhosted
                while unhosted:
                    nursery.start_soon(self._host_group, unhosted.pop())
                await self._done.wait()
                if nursery.child_tasks:
                    # Whatever a body left running in the pool (or a worker still on
                    # its way out) ends now: nothing a call starts outlives the batch.
                    nursery.cancel_scope.cancel()
        finally:
            # Dispatches no worker or group took before the pool closed never ran.
            queue = self._queue
            while queue:
                call = queue.popleft()
                unwound(call)
                self._admission.settle(call)
            for group in self._unhosted:
                for call in group.calls:
                    unwound(call)
                    self._admission.settle(call)
            self._unhosted.clear()
            self._wake()

    async def _host_group(self, group: _DeadlineGroup) -> None:
        """Enter a deadline group's scope and run its calls in a nursery inside it."""
        budget = group.budget
        if self._groups.get(budget) is group:
            del self._groups[budget]  # no call joins once it has started
        calls = group.calls
        group.unstarted = len(calls)
        with trio.CancelScope() as scope:  # its deadline comes with its members
            group.scope = scope
            async with trio.open_nursery() as members:
                for call in calls:
                    members.start_soon(self._member, call, group)

    async def _member(self, call: CallRecord, group: _DeadlineGroup) -> None:
        """Dispatch one call of a deadline group (as :meth:`_worker` does one call)."""
        clock = self._clock
        begun = 0 if clock is None else clock()
        scope = group.scope
        assert scope is not None
        budget = group.budget
        own = trio.current_time() + budget / 1000
        if own > group.deadline:
            group.deadline = own
        group.unstarted -= 1
        if not group.unstarted:
            scope.deadline = group.deadline  # the last member to start sets it
        if call.current_plan().outer_budget != budget:
            # The registry changed since the call was placed and its budget with it: it
            # leaves the group for a worker (and a deadline of its own, if any).
            self._enqueue(call)
            return
        assert call.slot is _QUEUED
        call.slot = _RUNNING
        stamps = self._stamps
        if stamps is not None:
            stamps[call.index][1] = trio.current_time()
        try:
            await dispatch_grouped(call, scope, own, budget)
            if clock is not None:
                self._stats.dispatch += clock() - begun
        except trio.Cancelled:
            # The batch abort (the pool's scope), or the group's deadline: the call is
            # recorded by whether its body ran, or as timed out; then re-raise.
            unwound(call)
            raise
        except Exception as exc:
            self._failed(exc)
        else:
            call.slot = _SETTLED
        finally:
            if stamps is not None:
                stamps[call.index][2] = trio.current_time()
            self._admission.settle(call)
            self._wake()

    async def _worker(self) -> None:
        """A pool worker: dispatch queued calls (in model order) while more may come.

        An idle worker parks until the driver queues another dispatch; once the pool is
        closed and the queue empty, it ends instead (no cancellation needed). An abort
        arrives as ``trio.Cancelled`` through the call's wrappers and body.
        """
        queue = self._queue
        lot = self._lot
        stats = self._stats
        clock = self._clock
        admission = self._admission
        signal = self._signal
        wake = self._wake
        stamps = self._stamps
        begun = 0
        while True:
            if not queue:
                if self._closed:
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
                    if clock is not None:
                        begun = clock()
                        await wait.granted.wait()
                        stats.wait += clock() - begun
                    else:
                        await wait.granted.wait()
                    if signal._cancelled:
                        assert call.slot is _QUEUED  # it never ran
                        call.resolve(ABORTED_BEFORE_DISPATCH_RESULT, RESOLVED)
                        call.slot = _SETTLED
                        continue
                assert call.slot is _QUEUED
                call.slot = _RUNNING
                if stamps is not None:
                    stamps[call.index][1] = trio.current_time()
                if clock is not None:
                    begun = clock()
                # Stage 2 as one awaitable, awaited here: a body resumes through no
                # dispatch-stage coroutine layer.
                awaitable, ending = start_dispatch(call)
                try:
                    outcome = await awaitable
                except Exception as exc:
                    ending.raised(call, exc)
                else:
                    ending.returned(call, outcome)
                if clock is not None:
                    stats.dispatch += clock() - begun
            except trio.Cancelled:
                # The pool scope carried the batch abort through the wrappers and the
                # body: record the call by whether its body ran, and re-raise.
                unwound(call)
                raise
            except Exception as exc:
                self._failed(exc)
            else:
                call.slot = _SETTLED
            finally:
                if stamps is not None and call.slot is _SETTLED:
                    stamps[call.index][2] = trio.current_time()
                admission.settle(call)
                wake()
