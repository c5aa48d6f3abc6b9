"""The trio host of an asyncio loop: one long-lived trio guest run per asyncio loop.

The first :mod:`toolnursery.aio` call on a loop starts a trio run as a *guest* of that
loop (``trio.lowlevel.start_guest_run``): trio's tasks then run as callbacks of the
asyncio loop, on its thread, and only trio's I/O wait happens in a worker thread.
Every later call on the loop reuses the run, so a batch never pays a trio start-up.

Requests flow asyncio → trio as :class:`Job`\\s spawned straight into the host's
service nursery (trio's synchronous API may be called from the host thread while a
guest run is alive: a spawn or an ``Event.set`` wakes the guest by itself); results
flow back through one asyncio future per job, resolved from the trio task on the
same thread.

Shutdown: the host parks an async generator on the loop, so ``loop.shutdown_asyncgens()``
(which ``asyncio.run`` and ``asyncio.Runner`` call after cancelling every task) closes
it, and its ``finally`` ends the guest run. :func:`aclose` does the same on demand.
Closing first aborts every job still in flight (each drains like a cancelled batch),
then lets the service nursery empty, so nothing the host started outlives it.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any, Generic, TypeVar

import outcome
import trio

from .._core._signal import CancelSignal

__all__ = ["HOST", "Host", "Job", "aclose", "drain_job", "host_for", "wait_job"]

T = TypeVar("T")

HOST: trio.lowlevel.RunVar[Host | None] = trio.lowlevel.RunVar("toolnursery.aio.host", None)
"""The :class:`Host` of the current trio run, set only in runs toolnursery.aio hosts."""

CANCELLED_REASON = "the awaiting asyncio task was cancelled"
CLOSED_REASON = "toolnursery.aio host closed"

_hosts: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Host] = weakref.WeakKeyDictionary()
"""The open host of each loop (a closing host is no longer listed here)."""
_closing: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Host] = weakref.WeakKeyDictionary()
"""A host whose guest run is ending; a new one can start only after it has ended."""


class Job(Generic[T]):
    """One request from asyncio, run as one task in the host's service nursery.

    Attributes:
        signal: fired to abort the request (the awaiting task was cancelled, or the
            host is closing); the request's trio side links it to its batch or call.
        on_abort: an extra step to run on abort (a streaming batch closes submission).
        outcome: the trio side's value or ``Exception``; ``None`` until ``done``.
        done: the trio task has ended.
    """

    __slots__ = ("done", "loop", "on_abort", "outcome", "signal", "waiter")

    def __init__(self, loop: asyncio.AbstractEventLoop, signal: CancelSignal) -> None:
        self.loop = loop
        self.signal = signal
        self.on_abort: Callable[[], object] | None = None
        self.outcome: outcome.Outcome[T] | None = None
        self.done = False
        self.waiter: asyncio.Future[None] = loop.create_future()

    def abort(self, reason: str) -> None:
        """Fire the job's signal (idempotent) and run its extra abort step."""
        self.signal.cancel(reason)
        on_abort = self.on_abort
        if on_abort is not None:
            on_abort()


async def _run_job(host: Host, job: Job[T], fn: Callable[[], Awaitable[T]]) -> None:
    try:
        job.outcome = outcome.Value(await fn())
    except Exception as exc:  # delivered to the asyncio caller as itself
        job.outcome = outcome.Error(exc)
    finally:
        host.active.discard(job)
        if job.outcome is None:
            # Cancelled by the service nursery: the guest run is crashing. Retire the
            # host so that later calls wait for it to end and start a fresh one.
            host.retire()
        job.done = True
        waiter = job.waiter
        if not waiter.done():
            waiter.set_result(None)


async def wait_job(job: Job[T]) -> T:
    """Await ``job`` from asyncio; return its value or raise its exception.

    If the awaiting task is cancelled, the job is aborted and awaited to the end (a
    repeated cancellation does not cut the wait short: started calls are never
    abandoned), then ``CancelledError`` propagates — unless the job failed with an
    internal error meanwhile, which then wins, with the cancellation as its context.
    """
    try:
        await job.waiter
    except asyncio.CancelledError:
        await drain_job(job, CANCELLED_REASON)
        raise
    return _unwrap(job)


async def drain_job(job: Job[Any], reason: str) -> None:
    """Abort ``job`` and wait until it has ended; raise its failure if it failed.

    Called while an exception (a cancellation, a failing ``async with`` block) is
    propagating: the caller re-raises that exception when this returns.
    """
    job.abort(reason)
    await _settle(job, reason)
    result = job.outcome
    if isinstance(result, outcome.Error):
        result.unwrap()


async def _settle(job: Job[Any], reason: str) -> None:
    """Wait until the job's trio task has ended, whatever cancellations arrive."""
    while not job.done:
        job.waiter = job.loop.create_future()
        try:
            await job.waiter
        except asyncio.CancelledError:
            job.abort(reason)


def _unwrap(job: Job[T]) -> T:
    result = job.outcome
    if result is None:
        raise RuntimeError(
            "toolnursery.aio: the trio host run ended before this call finished "
            "(it was shut down or crashed; see the asyncio loop's exception handler)"
        )
    return result.unwrap()


class Host:
    """The trio guest run that serves one asyncio loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.nursery: trio.Nursery | None = None
        self.active: set[Job[Any]] = set()
        self.closing = False
        self.finished: asyncio.Future[None] = loop.create_future()
        self._stop = trio.Event()
        self._pending: list[tuple[Job[Any], Callable[[], Awaitable[Any]]]] = []
        self._keeper: AsyncGenerator[None, None] | None = None
        self._keeper_closing = False

    # -- asyncio side ---------------------------------------------------------------

    def start(self) -> None:
        """Start the guest run; jobs spawned before it is up wait in a queue."""
        try:
            trio.lowlevel.start_guest_run(
                self._serve,
                run_sync_soon_threadsafe=self.loop.call_soon_threadsafe,
                run_sync_soon_not_threadsafe=self.loop.call_soon,
                done_callback=self._done,
                host_uses_signal_set_wakeup_fd=True,
            )
        except RuntimeError as exc:
            raise RuntimeError(
                "toolnursery.aio cannot start its trio host: a trio run is already active "
                "in this thread (an earlier asyncio loop closed without asyncio.run() or "
                "toolnursery.aio.aclose(), or this loop runs inside trio)"
            ) from exc

    async def park_keeper(self) -> None:
        """Register an async generator whose finalization at loop shutdown closes the host."""
        keeper = self._keep()
        self._keeper = keeper
        await keeper.asend(None)

    async def _keep(self) -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            self._keeper_closing = True
            await self.aclose()

    def spawn(self, job: Job[T], fn: Callable[[], Awaitable[T]]) -> None:
        """Run ``fn()`` for ``job`` in the service nursery (queued until the run is up)."""
        self.active.add(job)
        nursery = self.nursery
        if nursery is None:
            self._pending.append((job, fn))
        else:
            nursery.start_soon(_run_job, self, job, fn)

    def retire(self) -> None:
        """Take no new jobs: later calls wait for this run to end, then start a new one."""
        if not self.closing:
            self.closing = True
            if _hosts.get(self.loop) is self:
                del _hosts[self.loop]
            if not self.finished.done():
                _closing[self.loop] = self

    async def aclose(self) -> None:
        """Abort the jobs in flight, wait for them, and end the guest run; idempotent."""
        self.retire()
        self._stop.set()
        await asyncio.shield(self.finished)
        keeper = self._keeper
        if keeper is not None and not self._keeper_closing:
            self._keeper_closing = True
            await keeper.aclose()

    # -- trio side ------------------------------------------------------------------

    async def _serve(self) -> None:
        HOST.set(self)
        async with trio.open_nursery() as nursery:
            self.nursery = nursery
            pending, self._pending = self._pending, []
            for job, fn in pending:
                nursery.start_soon(_run_job, self, job, fn)
            await self._stop.wait()
            for job in tuple(self.active):
                job.abort(CLOSED_REASON)
            # The nursery's exit waits until every aborted job has drained.

    def _done(self, run: outcome.Outcome[None]) -> None:
        if _closing.get(self.loop) is self:
            del _closing[self.loop]
        if _hosts.get(self.loop) is self:
            del _hosts[self.loop]
        self.closing = True
        self.nursery = None
        if not self.finished.done():
            self.finished.set_result(None)
        if isinstance(run, outcome.Error):
            exc = run.error
            if isinstance(exc, KeyboardInterrupt | SystemExit):
                raise exc
            self.loop.call_exception_handler(
                {"message": "toolnursery.aio: the trio host run failed", "exception": exc}
            )


async def host_for(loop: asyncio.AbstractEventLoop) -> Host:
    """The open host of ``loop``, started on first use."""
    host = _hosts.get(loop)
    if host is not None:
        return host
    while True:
        previous = _closing.get(loop)
        if previous is None:
            break
        # One trio run per thread: the next host starts once this one has ended.
        await asyncio.wait((previous.finished,))
        host = _hosts.get(loop)
        if host is not None:
            return host
    host = Host(loop)
    host.start()
    _hosts[loop] = host
    await host.park_keeper()
    return host


async def aclose() -> None:
    """Shut down the running loop's trio host, if it has one (see :mod:`toolnursery.aio`)."""
    loop = asyncio.get_running_loop()
    host = _hosts.get(loop) or _closing.get(loop)
    if host is not None:
        await host.aclose()
