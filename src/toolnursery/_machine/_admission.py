"""Admission of a batch's dispatches: the ``max_parallel`` cap, waiting, the ready queue.

A started dispatch either *runs* (holds one of ``cap`` slots) or *waits* — for an
earlier unfinished call it conflicts with (see :mod:`toolnursery._machine._conflicts`), for a
slot, or (having given its slot back) for a token of its tool's ``max_concurrency``.
A waiting call that may run queues in ``ready`` and gets the next free slot, first
come first served.

The invariant (:meth:`Admission.check`): ``0 <= running <= cap`` and ``0 <= waiting``;
a call in ``ready`` has no unfinished blocker and holds no slot; every admitted,
unsettled call is counted exactly once, as running or as waiting. The driver starts
a new call only while ``running < cap`` and ``waiting < cap``. Nothing waits in a
cycle: a call waits only for earlier calls, for bodies that hold a token, or for a
slot held by a running body.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from .._core._decisions import ResourceKey
from ._conflicts import ConflictTable

CallRecord = Any  # a CallMachine (its ``wait`` is this module's Wait)

__all__ = ["Admission", "Flag", "Latch", "Wait"]


class Latch(Protocol):
    """What a waiting call waits on: the driver's event (``trio.Event``, ...), set here."""

    def set(self) -> None: ...

    def is_set(self) -> bool: ...


class Flag:
    """A :class:`Latch` with no event loop (the default: a test drives the machine)."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value: bool = False

    def set(self) -> None:
        self.value = True

    def is_set(self) -> bool:
        return self.value


class Wait:
    """The waiting state of a call that may not hold a slot all along.

    Made for a ``keyed`` call (its keys and the calls it waits for), and for a call
    that waits for a slot or gives its slot back while it waits for a tool's limit.
    """

    __slots__ = ("blockers", "dependents", "done", "granted", "keys", "running")

    def __init__(self, keys: Sequence[ResourceKey]) -> None:
        self.keys: Sequence[ResourceKey] = keys
        self.blockers: int = 0  # unfinished earlier calls this one conflicts with
        self.dependents: list[CallRecord] = []  # later calls that wait for this one
        self.granted: Latch | None = None  # set when the call gets its slot
        self.running: bool = False  # holds a slot under the cap
        self.done: bool = False  # its dispatch has ended (or was cancelled)


class Admission:
    """The slots of one batch (see the module docstring for the invariant)."""

    __slots__ = ("admitted", "cap", "new_latch", "ready", "running", "table", "waiting", "wake")

    def __init__(
        self, cap: int, wake: Callable[[], None], new_latch: Callable[[], Latch] = Flag
    ) -> None:
        self.cap: int = cap
        self.new_latch: Callable[[], Latch] = new_latch  # the driver's event type
        # Called when a waiting call got a slot (the driver may go on).
        self.wake: Callable[[], None] = wake
        self.running: int = 0
        self.waiting: int = 0
        self.admitted: int = 0  # admitted and not yet settled (running + waiting)
        self.ready: deque[CallRecord] = deque()
        self.table: ConflictTable[CallRecord] | None = None  # made for the first keyed call

    def full(self) -> bool:
        """Whether the driver must wait before it starts another call."""
        return self.running >= self.cap or self.waiting >= self.cap

    def admit(self, call: CallRecord, keys: Sequence[ResourceKey]) -> None:
        """Take a started dispatch: it runs now, or waits (``call.wait.granted``)."""
        self.admitted += 1
        if keys:
            self._admit_keyed(call, keys)
        elif self.running < self.cap:
            self.running += 1
        else:
            # The pool filled up while this call was being prepared.
            wait = call.wait = Wait(())
            wait.granted = self.new_latch()
            self.waiting += 1
            self.ready.append(call)

    def _admit_keyed(self, call: CallRecord, keys: Sequence[ResourceKey]) -> None:
        wait = call.wait = Wait(keys)
        table = self.table
        if table is None:
            table = self.table = ConflictTable()
        blocking = table.add(call, keys)
        for other in blocking:
            other_wait = other.wait
            assert other_wait is not None
            other_wait.dependents.append(call)
        wait.blockers = len(blocking)
        if not blocking and self.running < self.cap:
            self.running += 1
            wait.running = True
            return
        wait.granted = self.new_latch()
        self.waiting += 1
        if not blocking:
            self.ready.append(call)

    def settle(self, call: CallRecord) -> None:
        """The call's dispatch ended (or was cancelled): free its resources and slot."""
        self.admitted -= 1
        wait = call.wait
        if wait is None:
            self.running -= 1
            if self.ready:
                self.grant()
            return
        wait.done = True
        if wait.keys:
            table = self.table
            assert table is not None
            table.remove(call, wait.keys)
            ready = self.ready
            for dependent in wait.dependents:
                dependent_wait = dependent.wait
                assert dependent_wait is not None
                if dependent_wait.done:
                    continue
                dependent_wait.blockers -= 1
                if dependent_wait.blockers == 0:
                    ready.append(dependent)
        if wait.running:
            self.running -= 1
        else:
            self.waiting -= 1
        self.grant()

    def leave(self, call: CallRecord) -> None:
        """The call waits for its tool's limit: its slot goes to the next call."""
        wait = call.wait
        if wait is None:
            wait = call.wait = Wait(())
        wait.running = False
        self.running -= 1
        self.waiting += 1
        self.grant()
        self.wake()

    def rejoin(self, call: CallRecord) -> Latch | None:
        """The call has its tool's token: it waits for a slot again, behind ready calls.

        Returns the latch the driver awaits until the call has its slot, or ``None``
        when it has one already.
        """
        wait = call.wait
        assert wait is not None
        wait.granted = granted = self.new_latch()
        self.ready.append(call)
        self.grant()
        return None if wait.running else granted

    def grant(self) -> None:
        """Hand free slots to ready calls, first come first served."""
        ready = self.ready
        cap = self.cap
        while ready and self.running < cap:
            call = ready.popleft()
            wait = call.wait
            assert wait is not None
            assert wait.granted is not None
            if wait.done:
                continue
            self.running += 1
            self.waiting -= 1
            wait.running = True
            wait.granted.set()
            # One waiting call fewer: the driver may start the next call.
            self.wake()

    def check(self) -> None:
        """Assert the invariant (tests call this after every step)."""
        assert 0 <= self.running <= self.cap, (self.running, self.cap)
        assert self.waiting >= 0, self.waiting
        assert self.running + self.waiting == self.admitted, (
            self.running,
            self.waiting,
            self.admitted,
        )
        for call in self.ready:
            wait = call.wait
            assert wait is not None
            assert wait.done or (wait.blockers == 0 and not wait.running), "ready means free"
