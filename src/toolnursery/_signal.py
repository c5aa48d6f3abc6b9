"""CancelSignal: the caller-owned cancellation of one call or one batch.

A signal is a one-way latch with a reason. The registry links trio cancel scopes to
signals: when a signal a tool body runs under fires, the body's scope is cancelled and
trio unwinds the body at its next checkpoint. Signals are used from the trio thread
(a sync tool running in a worker thread may poll :attr:`CancelSignal.cancelled`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import trio

__all__ = ["CancelSignal"]

_Callback = Callable[["CancelSignal"], object]


class CancelSignal:
    """A cancellation latch: fires once, remembers the first reason.

    Example::

        signal = CancelSignal()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(registry.execute, ToolExecutionInput("c1", "slow", {}, signal))
            signal.cancel("user pressed stop")
    """

    __slots__ = ("__weakref__", "_callbacks", "_cancelled", "_event", "_reason")

    def __init__(self) -> None:
        self._cancelled = False
        self._reason: Any = None
        self._callbacks: list[_Callback] | None = None
        self._event: trio.Event | None = None

    @property
    def cancelled(self) -> bool:
        """Whether :meth:`cancel` has been called."""
        return self._cancelled

    @property
    def reason(self) -> Any:
        """The reason given to the first :meth:`cancel` call (``None`` if none was)."""
        return self._reason

    def cancel(self, reason: Any = None) -> None:
        """Fire the signal. Idempotent: later calls change nothing (first reason wins)."""
        if self._cancelled:
            return
        self._cancelled = True
        self._reason = reason
        callbacks, self._callbacks = self._callbacks, None
        if self._event is not None:
            self._event.set()
        if callbacks:
            for callback in callbacks:
                callback(self)

    async def wait(self) -> None:
        """Block until the signal fires (returns at once if it already has)."""
        if self._cancelled:
            await trio.lowlevel.checkpoint()
            return
        if self._event is None:
            self._event = trio.Event()
        await self._event.wait()

    def _link(self, callback: _Callback) -> None:
        """Call ``callback(self)`` when the signal fires (at once if it already has)."""
        if self._cancelled:
            callback(self)
            return
        if self._callbacks is None:
            self._callbacks = [callback]
        else:
            self._callbacks.append(callback)

    def _unlink(self, callback: _Callback) -> None:
        callbacks = self._callbacks
        if callbacks:
            for i, cb in enumerate(callbacks):
                if cb is callback:
                    del callbacks[i]
                    return

    def __repr__(self) -> str:
        state = f"cancelled, reason={self._reason!r}" if self._cancelled else "pending"
        return f"<CancelSignal {state}>"


class _Fusion:
    """A signal that fires when any of its sources fires, with the first one's reason."""

    __slots__ = ("signal", "sources")

    def __init__(self, sources: tuple[CancelSignal, ...]) -> None:
        self.signal = CancelSignal()
        self.sources = sources
        for source in sources:
            if source._cancelled:
                self.signal.cancel(source._reason)
                return
        # The fusion itself is the callback: ``_unlink`` compares by identity (a
        # ``self._fire`` bound method would be a new object on every access), and
        # keeping a bound method on ``self`` would make a reference cycle per call.
        for source in sources:
            source._link(self)

    def __call__(self, source: CancelSignal) -> None:
        self.signal.cancel(source._reason)
        self.close()

    def close(self) -> None:
        """Detach from the sources (no leak once the fused lifetime ends)."""
        for source in self.sources:
            source._unlink(self)


def fuse(*sources: CancelSignal) -> _Fusion:
    """Fuse signals: the result fires when any source fires. Call ``close()`` after use."""
    return _Fusion(sources)
