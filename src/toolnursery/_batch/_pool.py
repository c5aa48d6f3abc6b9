"""The tasks of one batch that run its admitted dispatches: reused workers, deadline groups.

The trio driver (:mod:`toolnursery._batch._driver`) makes a :class:`WorkerPool` on its first
pooled call and talks to it through five methods: :meth:`~WorkerPool.submit` an
admitted call, :meth:`~WorkerPool.flush` (start the workers queued calls are owed,
before the driver awaits), :meth:`~WorkerPool.close` (no call will start any more),
:meth:`~WorkerPool.finish` (the batch ended normally) and :meth:`~WorkerPool.cancel` (it
did not). The workers run in the batch's one nursery, whose scope the batch's abort
cancels. A worker dispatches one queued call after another, in model order, and parks
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
from collections.abc import Awaitable, Callable

import trio

from .._core._lifecycle import RESOLVED, Slot
from .._core._outcomes import ABORTED_BEFORE_DISPATCH_RESULT
from .._core._signal import CancelSignal, ScopeLink, link, unlink
from .._core._statistics import Counters
from .._core._statistics import now as _now
from .._machine._admission import Admission
from .._machine._batch import BatchMachine
from .._pipeline._call import CallRecord
from .._pipeline._dispatch import dispatch, dispatch_grouped
from .._pipeline._dispatch import start as start_dispatch

__all__ = ["GROUP_MIN_BUDGET_MS", "GROUP_SIZE", "WorkerPool", "dispatch_in_place", "start_dispatch"]

_NEW = Slot.NEW
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


class WorkerPool:
    """The dispatching tasks of one batch (see the module docstring).

    Args:
        nursery: the batch nursery, where the workers and deadline groups run; the
            batch cancels its scope on abort (see :mod:`toolnursery._batch._scheduler`).
        signal: the batch signal.
        admission: the batch's slots; every dispatch the pool ends is settled there.
        stats: the batch's counters (dispatch and wait times, when timed).
        clock: the phase clock (the batch's; in ns), or ``None``: no phase is timed.
        stamps: where a recorded batch keeps its calls' times (index -> ``[admitted,
            began, ended]`` on trio's clock; the pool sets the last two), or ``None``.
        wake: wakes the batch driver (a dispatch settled); what it returns, if anything,
            the worker awaits (the driver's commits, when a post-execute suspended).
        failed: takes an internal failure of a dispatch (the driver re-raises the first).
    """

    __slots__ = (
        "_admission",
        "_clock",
        "_closed",
        "_failed",
        "_groups",
        "_nursery",
        "_signal",
        "_stamps",
        "_stats",
        "_tasks",
        "_wake",
        "lot",
        "owed",
        "queue",
        "unwinding",
    )

    def __init__(
        self,
        nursery: trio.Nursery,
        *,
        signal: CancelSignal,
        admission: Admission,
        stats: Counters,
        clock: Callable[[], int] | None,
        wake: Callable[[], Awaitable[None] | None],
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
        self._nursery = nursery
        self._tasks = 0  # workers and deadline-group hosts running in the nursery
        self._closed = False  # no call will start any more
        self._groups: dict[float, _DeadlineGroup] | None = None  # budget -> group filling
        self.queue: deque[CallRecord] = deque()  # dispatches waiting for a worker
        self.lot: trio.lowlevel.ParkingLot | None = None  # parked workers, once one parks
        self.owed = 0  # workers queued calls need, to start at the driver's next await
        self.unwinding = False  # a call of the pool was cancelled (abort, or from outside)

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
        lot = self.lot
        if lot:
            lot.unpark_all()

    def finish(self) -> None:
        """The batch ended normally (every call committed, none in flight): parked workers
        end, and whatever a body left running in the batch nursery is cancelled (nothing a
        call starts outlives the batch)."""
        self._closed = True
        lot = self.lot
        if lot:
            lot.unpark_all()
        nursery = self._nursery
        if len(nursery.child_tasks) > self._tasks:
            nursery.cancel_scope.cancel()

    def cancel(self) -> None:
        """The batch did not end normally: whatever runs in the pool is cancelled (and a
        queued call whose worker never started never runs)."""
        self._nursery.cancel_scope.cancel()
        if self.owed:
            self.owed = 0
            queue = self.queue
            while queue:
                call = queue.popleft()
                call.unwind()
                self._admission.settle(call)

    # -- tasks ------------------------------------------------------------------------

    def _enqueue(self, call: CallRecord) -> None:
        """Queue a call for a worker: wake a parked one, or start one."""
        self.queue.append(call)
        lot = self.lot
        if lot:
            if self._closed:
                lot.unpark_all()  # the last call: wake every parked worker (the rest end)
            else:
                lot.unpark()
            return
        self.owed += 1  # started by flush(), before the driver next awaits

    def flush(self) -> None:
        """Start the workers the queued calls are owed (the driver calls it before it
        awaits anything: its calls' dispatches begin then). Starting them in one go,
        after the driver has placed every call it can, rather than one by one between
        placements, measured 4–6 % less per call at N = 1000."""
        owed = self.owed
        if owed:
            self.owed = 0
            self._tasks += owed
            start = self._nursery.start_soon
            worker = self._worker
            for _ in range(owed):
                start(worker)

    def _join_group(self, call: CallRecord, budget: float) -> None:
        groups = self._groups
        if groups is None:
            groups = self._groups = {}
        group = groups.get(budget)
        if group is None or len(group.calls) >= GROUP_SIZE:
            group = groups[budget] = _DeadlineGroup(budget)
            self._tasks += 1
            self._nursery.start_soon(self._host_group, group)
        group.calls.append(call)

    def _unwind_queue(self) -> Awaitable[None] | None:
        """The pool is being cancelled: the dispatches no worker took never ran."""
        queue = self.queue
        if not queue:
            return None
        while queue:
            call = queue.popleft()
            call.unwind()
            self._admission.settle(call)
        return self._wake()

    async def _host_group(self, group: _DeadlineGroup) -> None:
        """Enter a deadline group's scope and run its calls in a nursery inside it."""
        budget = group.budget
        groups = self._groups
        if groups is not None and groups.get(budget) is group:
            del groups[budget]  # no call joins once it has started
        calls = group.calls
        group.unstarted = len(calls)
        try:
            with trio.CancelScope() as scope:  # its deadline comes with its members
                group.scope = scope
                async with trio.open_nursery() as members:
                    for call in calls:
                        members.start_soon(self._member, call, group)
        finally:
            self._tasks -= 1

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
            self.flush()
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
            self.unwinding = True
            call.unwind()
            raise
        except Exception as exc:
            self._failed(exc)
        else:
            call.slot = _SETTLED
        finally:
            if stamps is not None:
                stamps[call.index][2] = trio.current_time()
            self._admission.settle(call)
            more = self._wake()
            if more is not None:
                await more  # commits whose post-execute suspended

    async def _worker(self) -> None:
        """A pool worker: dispatch queued calls (in model order) while more may come.

        An idle worker parks until the driver queues another dispatch; once the pool is
        closed and the queue empty, it ends instead (no cancellation needed). An abort
        arrives as ``trio.Cancelled`` through the call's wrappers and body; a worker
        cancelled on its way settles the dispatches still queued (they never ran).
        """
        queue = self.queue
        stats = self._stats
        clock = self._clock
        admission = self._admission
        signal = self._signal
        wake = self._wake
        stamps = self._stamps
        begun = 0
        try:
            while True:
                if not queue:
                    if self._closed:
                        return
                    lot = self.lot
                    if lot is None:
                        lot = self.lot = trio.lowlevel.ParkingLot()
                    await lot.park()
                    continue
                call = queue.popleft()
                try:
                    wait = call.wait
                    aborted = False
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
                        if signal.cancelled:
                            assert call.slot is _QUEUED  # it never ran
                            call.resolve(ABORTED_BEFORE_DISPATCH_RESULT, RESOLVED)
                            aborted = True
                    if not aborted:
                        assert call.slot is _QUEUED
                        call.slot = _RUNNING
                        if stamps is not None:
                            stamps[call.index][1] = trio.current_time()
                        if clock is not None:
                            begun = clock()
                        # Stage 2 as one awaitable, awaited here: a body resumes through
                        # no dispatch-stage coroutine layer.
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
                    self.unwinding = True
                    call.unwind()
                    raise
                except Exception as exc:
                    self._failed(exc)
                else:
                    call.slot = _SETTLED
                finally:
                    if stamps is not None and call.slot is _SETTLED:
                        stamps[call.index][2] = trio.current_time()
                    if call.wait is None and not admission.ready:
                        # admission.settle(call), inlined: no keys, nobody waits.
                        admission.admitted -= 1
                        admission.running -= 1
                    else:
                        admission.settle(call)
                    more = wake()
                    if more is not None:
                        await more  # commits whose post-execute suspended
        except trio.Cancelled:
            more = self._unwind_queue()
            if more is not None:
                await more
            raise
        finally:
            self._tasks -= 1


async def dispatch_in_place(machine: BatchMachine, call: CallRecord) -> None:
    """Dispatch in the driver, under a scope the batch signal cancels."""
    timings = machine.timings
    begun = _now() if timings else 0
    assert call.slot is _NEW
    call.slot = _RUNNING
    stamps = machine.stamps
    if stamps is not None:
        stamps[call.index] = stamp = [None, trio.current_time(), None]
    plan = call.plan
    assert plan is not None
    if plan.bare and not plan.route.suspends:
        await dispatch(call, carried=True)  # nothing to interrupt: no scope
    else:
        scope = trio.CancelScope()
        scope_link = ScopeLink(scope)
        signal = machine.signal
        link(signal, scope_link)
        try:
            with scope:
                await dispatch(call, carried=True)
        finally:
            unlink(signal, scope_link)
        if scope.cancelled_caught:
            call.resolve(call.aborted(), RESOLVED)
    if timings:
        machine.stats.dispatch += _now() - begun
    if stamps is not None:
        stamp[2] = trio.current_time()
    call.slot = _SETTLED
