"""CancelSignal: the caller-owned cancellation of one call or one batch.

A signal is a one-way latch with a reason. The registry links trio cancel scopes to
signals: when a signal a tool body runs under fires, the body's scope is cancelled and
trio unwinds the body at its next checkpoint. Signals are used from the trio thread
(a sync tool running in a worker thread may poll :attr:`CancelSignal.cancelled`).

Links are kept in an insertion-ordered dict keyed by the callback, so linking and
unlinking are O(1) however many links a signal holds (a batch links every call's
scope to one batch signal).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import trio

__all__ = ["CancelSignal", "Fusion", "ScopeLink", "fired_before", "fuse", "link", "unlink"]

_Callback = Callable[["CancelSignal"], object]


class CancelSignal:
    """A cancellation latch: fires once, remembers the first reason.

    Example::

        signal = CancelSignal()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(registry.execute, ToolExecutionInput("c1", "slow", {}, signal))
            signal.cancel("user pressed stop")
    """

    __slots__ = ("__weakref__", "_callbacks", "_event", "_fired_at", "_reason", "cancelled")

    cancelled: bool
    """Whether :meth:`cancel` has been called (read it; fire the signal with :meth:`cancel`)."""

    def __init__(self) -> None:
        self.cancelled = False
        self._reason: Any = None
        self._callbacks: dict[_Callback, None] | None = None
        self._event: trio.Event | None = None
        self._fired_at: float | None = None

    @property
    def reason(self) -> Any:
        """The reason given to the first :meth:`cancel` call (``None`` if none was)."""
        return self._reason

    def cancel(self, reason: Any = None) -> None:
        """Fire the signal. Idempotent: later calls change nothing (first reason wins)."""
        if self.cancelled:
            return
        self._fire(reason)

    def _fire(self, reason: Any) -> None:
        self.cancelled = True
        self._reason = reason
        try:
            self._fired_at = trio.current_time()
        except RuntimeError:
            self._fired_at = None  # fired outside trio: no time to compare a deadline to
        callbacks, self._callbacks = self._callbacks, None
        if self._event is not None:
            self._event.set()
        if callbacks:
            for callback in callbacks:
                callback(self)

    async def wait(self) -> None:
        """Block until the signal fires (returns at once if it already has).

        Works under trio and under asyncio (a body or hook of a batch on the asyncio
        driver of :mod:`toolnursery.aio`).
        """
        if not trio.lowlevel.in_trio_task():
            await _wait_on_asyncio(self)
            return
        if self.cancelled:
            await trio.lowlevel.checkpoint()
            return
        if self._event is None:
            self._event = trio.Event()
        await self._event.wait()

    def __repr__(self) -> str:
        state = f"cancelled, reason={self._reason!r}" if self.cancelled else "pending"
        return f"<CancelSignal {state}>"


def link(signal: CancelSignal, callback: _Callback) -> None:
    """Call ``callback(signal)`` when ``signal`` fires (at once if it already has).

    O(1). A callback linked twice is called once (links are keyed by the callback).
    """
    if signal.cancelled:
        callback(signal)
        return
    callbacks = signal._callbacks
    if callbacks is None:
        signal._callbacks = {callback: None}
    else:
        callbacks[callback] = None


def unlink(signal: CancelSignal, callback: _Callback) -> None:
    """Remove a link made by :func:`link` (O(1); nothing happens if there is none)."""
    callbacks = signal._callbacks
    if callbacks:
        callbacks.pop(callback, None)


def fired_before(signal: CancelSignal, when: float) -> bool:
    """Whether ``signal`` fired before trio time ``when`` (an unknown time counts)."""
    if not signal.cancelled:
        return False
    at = signal._fired_at
    return at is None or at < when


async def _wait_on_asyncio(signal: CancelSignal) -> None:
    """:meth:`CancelSignal.wait` under asyncio: a future the signal's link resolves."""
    import asyncio  # only the asyncio driver's bodies get here

    if signal.cancelled:
        await asyncio.sleep(0)
        return
    future = asyncio.get_running_loop().create_future()

    def fired(_: CancelSignal) -> None:
        if not future.done():
            future.set_result(None)

    link(signal, fired)
    try:
        await future
    finally:
        unlink(signal, fired)


class Fusion:
    """A signal that fires when any of its sources fires, with the first one's reason."""

    __slots__ = ("__weakref__", "signal", "sources")

    def __init__(self, sources: tuple[CancelSignal, ...]) -> None:
        self.signal = CancelSignal()
        self.sources = sources
        for source in sources:
            if source.cancelled:
                self.signal.cancel(source._reason)
                return
        # The fusion itself is the callback (hashable by identity): a bound method of
        # ``self`` kept on ``self`` would make a reference cycle per call.
        for source in sources:
            link(source, self)

    def __call__(self, source: CancelSignal) -> None:
        self.signal.cancel(source._reason)
        self.close()

    def close(self) -> None:
        """Detach from the sources (no leak once the fused lifetime ends)."""
        for source in self.sources:
            unlink(source, self)


def fuse(*sources: CancelSignal) -> Fusion:
    """Fuse signals: the result fires when any source fires. Call ``close()`` after use."""
    return Fusion(sources)


class ScopeLink:
    """Cancels one trio cancel scope when a signal fires (a link object, hashable by id)."""

    __slots__ = ("scope",)

    def __init__(self, scope: trio.CancelScope) -> None:
        self.scope = scope

    def __call__(self, _: CancelSignal) -> None:
        self.scope.cancel()
