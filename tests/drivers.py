"""One batch scenario, two drivers: the harness behind the ``driver`` fixture.

A test written against a :class:`Driver` runs the same scenario, with the same
assertions, on trio (``toolnursery.run_tool_calls`` / ``open_tool_batch`` in a
``trio.run``) and on the native asyncio driver (``toolnursery.aio`` with
``driver="asyncio"`` in an asyncio event loop). Both run on a virtual clock that
jumps to the next deadline as soon as nothing can run (trio's
``MockClock(autojump_threshold=0)``; :class:`VirtualClockLoop` for asyncio), so the
same durations give the same schedule, exactly and at no cost.

The scenario's bodies are loop-neutral: they sleep, wait and check the clock through the
driver (:meth:`Driver.sleep`, :meth:`Driver.event`, :meth:`Driver.now`) and are
registered through :meth:`Driver.tool`, which declares them ``asyncio_tool`` on asyncio
(an undeclared ``async def`` is trio code there). Hooks need nothing: they run on the
batch's driver.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import selectors
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from typing import Any, ClassVar, Final, TypeVar

import trio
import trio.testing

import toolnursery
import toolnursery.aio as aio
from support import live_tasks, registry_with
from toolnursery._aio._tool import runs_on_either_loop

T = TypeVar("T")
F = TypeVar("F")

DEADLOCK: Final = 1_000_000.0
"""Virtual seconds after which a run is taken to have deadlocked."""

__all__ = [
    "ASYNCIO",
    "DRIVERS",
    "TRIO",
    "AsyncioDriver",
    "Driver",
    "TrioDriver",
    "VirtualClockLoop",
    "current",
    "neutral",
    "neutral_registry",
]


class _AutojumpSelector(selectors.DefaultSelector):
    """Polls without blocking; when nothing is ready, wakes the loop's idle waiters or
    moves its virtual clock to the next timer instead of sleeping."""

    loop: VirtualClockLoop

    def select(self, timeout: float | None = None) -> list[Any]:
        events = super().select(0)
        if events or timeout == 0:
            return events
        if self.loop.wake_idle():
            return []
        if timeout is None or self.loop.threads:
            # Nothing scheduled, or a worker thread runs (the loop is not idle: time
            # stands still until it is done): only another thread (a worker, the
            # executor) can wake the loop, through its self-pipe.
            return super().select(timeout)
        self.loop.advance(timeout)
        return []


class VirtualClockLoop(asyncio.SelectorEventLoop):
    """An asyncio loop on a virtual clock that jumps ahead whenever the loop is idle: what
    trio's ``MockClock(autojump_threshold=0)`` is for a trio run."""

    def __init__(self) -> None:
        selector = _AutojumpSelector()
        selector.loop = self
        self._virtual = 0.0
        self._idle: list[asyncio.Future[None]] = []
        self.threads = 0  # executor jobs running
        super().__init__(selector)

    def run_in_executor(  # type: ignore[override]
        self, executor: Any, func: Any, *args: Any
    ) -> asyncio.Future[Any]:
        future = super().run_in_executor(executor, func, *args)
        self.threads += 1
        future.add_done_callback(self._thread_done)
        return future

    def _thread_done(self, _: object) -> None:
        self.threads -= 1

    async def shutdown_default_executor(self, *args: Any) -> None:
        # The executor joins its threads in a thread of its own: time stands still until
        # it is done (Python 3.12+ bounds the join with a timer, which would jump at once).
        self.threads += 1
        try:
            await super().shutdown_default_executor(*args)  # 3.12+: a timeout
        finally:
            self.threads -= 1

    def time(self) -> float:
        return self._virtual

    def advance(self, seconds: float) -> None:
        self._virtual += seconds

    def wake_idle(self) -> bool:
        """Resolve the idle waiters, if any (the loop found nothing else to run)."""
        waiters, self._idle = self._idle, []
        woke = False
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)
                woke = True
        return woke

    async def wait_idle(self) -> None:
        """Return once every other task is blocked (trio's ``wait_all_tasks_blocked``)."""
        waiter = self.create_future()
        self._idle.append(waiter)
        await waiter


class Driver:
    """What a scenario needs from the loop that runs it; one subclass per driver."""

    name: ClassVar[str]
    Cancelled: ClassVar[type[BaseException]]

    def __repr__(self) -> str:
        return self.name

    def run(
        self,
        main: Callable[..., Coroutine[Any, Any, T]],
        *args: Any,
        deadlock: float | None = None,
    ) -> T:
        """Run ``main(*args)`` in a fresh run of this driver, on a virtual clock.

        ``deadlock``: virtual seconds after which the run is taken to have deadlocked
        and fails (the clock jumps there) rather than hangs; not for a scenario with a
        worker thread on trio (its clock jumps while the thread runs).
        """
        raise NotImplementedError

    def tool(self, body: Any) -> Any:
        """``body`` as this driver's batches must be given it."""
        return body

    def passes_on(self, given: Any, seen: Any) -> bool:
        """Whether ``seen``, the signal a hook or body of ``execute`` saw, is the caller's
        ``given`` as this driver hands it on: ``given`` itself on trio; on asyncio
        (``aio.execute``) a signal fused from it and the awaiting task's cancellation."""
        if self.name == "trio":
            return bool(seen is given)
        return bool(
            seen is not given and (seen.cancelled, seen.reason) == (given.cancelled, given.reason)
        )

    async def run_tool_calls(self, registry: Any, calls: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    def open_tool_batch(self, registry: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    async def execute(self, registry: Any, input_: Any) -> Any:
        """One call, as ``registry.execute(input_)`` runs it on this driver."""
        raise NotImplementedError

    async def sleep(self, seconds: float) -> None:
        raise NotImplementedError

    async def sleep_forever(self) -> None:
        await self.sleep(math.inf)

    async def sleep_shielded(self, seconds: float) -> None:
        """Sleep ``seconds`` whatever cancellation comes: an uncooperative body. Under a
        shielded scope on trio; on asyncio by catching the (edge-triggered)
        cancellation and sleeping on."""
        end = self.now() + seconds
        while self.now() < end:
            try:
                await self.sleep(end - self.now())
            except asyncio.CancelledError:
                continue  # uncooperative on purpose

    async def checkpoint(self) -> None:
        await self.sleep(0)

    def now(self) -> float:
        raise NotImplementedError

    def event(self) -> Any:
        """A fresh event with ``set()``, ``is_set()`` and ``await wait()``."""
        raise NotImplementedError

    async def wait_all_tasks_blocked(self) -> None:
        raise NotImplementedError

    def cancel_scope(self) -> Any:
        """A ``with`` block that ``cancel()`` cancels (``cancelled_caught`` after)."""
        raise NotImplementedError

    def fail_after(self, seconds: float) -> contextlib.AbstractAsyncContextManager[None]:
        raise NotImplementedError

    def move_on_after(self, seconds: float) -> contextlib.AbstractAsyncContextManager[Any]:
        """A block cut short after ``seconds`` (``cancelled_caught`` on what it gives)."""
        raise NotImplementedError

    def background(
        self, fn: Callable[..., Awaitable[Any]], *args: Any
    ) -> contextlib.AbstractAsyncContextManager[None]:
        """Run ``fn(*args)`` beside the block; cancelled (and awaited) when it ends."""
        raise NotImplementedError

    def open_nursery(self) -> contextlib.AbstractAsyncContextManager[Any]:
        """A block that waits for what its ``start_soon(fn, *args)`` started."""
        raise NotImplementedError

    def tasks(self) -> int:
        """How many tasks are alive in this run."""
        raise NotImplementedError


class TrioDriver(Driver):
    name = "trio"
    Cancelled = trio.Cancelled

    def run(
        self,
        main: Callable[..., Coroutine[Any, Any, T]],
        *args: Any,
        deadlock: float | None = None,
    ) -> T:
        async def guarded() -> T:
            with trio.fail_after(math.inf if deadlock is None else deadlock):
                return await main(*args)

        return trio.run(guarded, clock=trio.testing.MockClock(autojump_threshold=0))

    async def run_tool_calls(self, registry: Any, calls: Any, **kwargs: Any) -> Any:
        return await toolnursery.run_tool_calls(registry, calls, **kwargs)

    def open_tool_batch(self, registry: Any, **kwargs: Any) -> Any:
        return toolnursery.open_tool_batch(registry, **kwargs)

    async def execute(self, registry: Any, input_: Any) -> Any:
        return await registry.execute(input_)

    async def sleep(self, seconds: float) -> None:
        await trio.sleep(seconds)

    async def sleep_forever(self) -> None:
        await trio.sleep_forever()

    async def sleep_shielded(self, seconds: float) -> None:
        with trio.CancelScope(shield=True):
            await trio.sleep(seconds)

    async def checkpoint(self) -> None:
        await trio.lowlevel.checkpoint()

    def now(self) -> float:
        return trio.current_time()

    def event(self) -> Any:
        return trio.Event()

    async def wait_all_tasks_blocked(self) -> None:
        await trio.testing.wait_all_tasks_blocked()

    def cancel_scope(self) -> Any:
        return trio.CancelScope()

    @contextlib.asynccontextmanager
    async def fail_after(self, seconds: float) -> AsyncIterator[None]:
        with trio.fail_after(seconds):
            yield

    @contextlib.asynccontextmanager
    async def move_on_after(self, seconds: float) -> AsyncIterator[Any]:
        with trio.move_on_after(seconds) as scope:
            yield scope

    @contextlib.asynccontextmanager
    async def background(
        self, fn: Callable[..., Awaitable[Any]], *args: Any
    ) -> AsyncIterator[None]:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(fn, *args)
            yield
            nursery.cancel_scope.cancel()

    def open_nursery(self) -> contextlib.AbstractAsyncContextManager[Any]:
        return trio.open_nursery()

    def tasks(self) -> int:
        return live_tasks()


class _AsyncioScope:
    """A trio-like cancel scope over the current asyncio task: ``cancel()`` cancels the
    task, the block's end takes that one cancellation back (``uncancel``)."""

    def __init__(self) -> None:
        self.task: asyncio.Task[Any] | None = None
        self.requested = False
        self.cancelled_caught = False

    def __enter__(self) -> _AsyncioScope:
        self.task = asyncio.current_task()
        return self

    def cancel(self) -> None:
        if not self.requested and self.task is not None:
            self.requested = True
            self.task.cancel()

    def __exit__(self, kind: type[BaseException] | None, exc: Any, tb: Any) -> bool:
        assert self.task is not None
        if self.requested and self.task.uncancel() == 0 and kind is asyncio.CancelledError:
            self.cancelled_caught = True
            return True
        return False


class AsyncioDriver(Driver):
    name = "asyncio"
    Cancelled = asyncio.CancelledError

    def run(
        self,
        main: Callable[..., Coroutine[Any, Any, T]],
        *args: Any,
        deadlock: float | None = None,
    ) -> T:
        reported: list[dict[str, Any]] = []

        async def guarded() -> T:
            asyncio.get_running_loop().set_exception_handler(lambda _, c: reported.append(c))
            try:
                async with asyncio.timeout(deadlock):
                    return await main(*args)
            finally:
                # Nothing a batch started outlives it (the test's own task aside).
                assert asyncio.all_tasks() == {asyncio.current_task()}

        with asyncio.Runner(loop_factory=VirtualClockLoop) as runner:
            result = runner.run(guarded())
        assert reported == [], reported
        return result

    def tool(self, body: Any) -> Any:
        return aio.asyncio_tool(body)

    async def run_tool_calls(self, registry: Any, calls: Any, **kwargs: Any) -> Any:
        return await aio.run_tool_calls(registry, calls, driver="asyncio", **kwargs)

    def open_tool_batch(self, registry: Any, **kwargs: Any) -> Any:
        return aio.open_tool_batch(registry, driver="asyncio", **kwargs)

    async def execute(self, registry: Any, input_: Any) -> Any:
        return await aio.execute(registry, input_, driver="asyncio")

    async def sleep(self, seconds: float) -> None:
        if seconds == math.inf:
            await asyncio.get_running_loop().create_future()  # never done
        else:
            await asyncio.sleep(seconds)

    def now(self) -> float:
        return asyncio.get_running_loop().time()

    def event(self) -> Any:
        return asyncio.Event()

    async def wait_all_tasks_blocked(self) -> None:
        loop = asyncio.get_running_loop()
        assert isinstance(loop, VirtualClockLoop)
        await loop.wait_idle()

    def cancel_scope(self) -> Any:
        return _AsyncioScope()

    @contextlib.asynccontextmanager
    async def fail_after(self, seconds: float) -> AsyncIterator[None]:
        async with asyncio.timeout(seconds):
            yield

    @contextlib.asynccontextmanager
    async def move_on_after(self, seconds: float) -> AsyncIterator[Any]:
        scope = _AsyncioScope()
        try:
            async with asyncio.timeout(seconds):
                yield scope
        except TimeoutError:
            scope.cancelled_caught = True

    @contextlib.asynccontextmanager
    async def background(
        self, fn: Callable[..., Awaitable[Any]], *args: Any
    ) -> AsyncIterator[None]:
        async def runner() -> None:
            await fn(*args)

        task = asyncio.create_task(runner())
        try:
            yield
        finally:
            task.cancel()
            await asyncio.wait({task})  # not ``await task``: its cancellation is not ours
        if not task.cancelled() and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]

    @contextlib.asynccontextmanager
    async def open_nursery(self) -> AsyncIterator[Any]:
        async with asyncio.TaskGroup() as group:
            yield _Spawner(group)

    def tasks(self) -> int:
        return len(asyncio.all_tasks())


class _Spawner:
    """A task group with a nursery's ``start_soon``."""

    def __init__(self, group: asyncio.TaskGroup) -> None:
        self.group = group

    def start_soon(self, fn: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> None:
        self.group.create_task(fn(*args))


TRIO: Final = TrioDriver()
ASYNCIO: Final = AsyncioDriver()
DRIVERS: tuple[Driver, ...] = (TRIO, ASYNCIO)
"""The two drivers, trio first: the ``driver`` fixture's parameters."""


def current() -> Driver:
    """The driver of the run this is called in (for helpers shared by both)."""
    return TRIO if trio.lowlevel.in_trio_run() else ASYNCIO


def neutral_registry(*definitions: Any) -> Any:
    """``support.registry_with``, each definition's body marked :func:`neutral`."""
    for definition in definitions:
        # The body the definition wraps (its validating ``execute`` keeps it as __wrapped__).
        neutral(getattr(definition.execute, "__wrapped__", definition.execute))
    return registry_with(*definitions)


def neutral(body: F) -> F:
    """Mark ``body`` (in place) as loop-neutral: it awaits only through :func:`current`,
    so either driver may await it in its own task."""
    return runs_on_either_loop(body)  # type: ignore[arg-type, return-value]
