"""A signal's link that cancels an asyncio task: how the asyncio driver lets an abort
(a batch signal, a wrapper's replacement signal) interrupt the task that awaits a body."""

from __future__ import annotations

import asyncio
from typing import Any, Final

from ._signal import CancelSignal

__all__ = ["SelfCancel"]

_current_task: Final = asyncio.current_task


class SelfCancel:
    """Cancels ``task`` when the signal it is linked to fires; from inside that task (a
    body aborting its own batch), at its next suspension instead, so the cancellation
    always lands inside the await it interrupts. ``sent`` says it cancelled: the task
    then takes that one cancellation back (``uncancel``)."""

    __slots__ = ("handle", "sent", "task")

    def __init__(self, task: asyncio.Task[Any]) -> None:
        self.task: asyncio.Task[Any] = task
        self.sent: bool = False
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

    def taken_back(self) -> bool:
        """Called where a ``CancelledError`` came out of the await this interrupts:
        whether it was this canceller's and nothing else cancels the task, taken back
        (``uncancel``); ``False``: it came from outside too, to be re-raised."""
        if not self.sent:
            return False
        self.sent = False
        return self.task.uncancel() == 0

    def returned(self) -> None:
        """Called where the await returned: a cancellation this sent that the await
        caught (and returned anyway) is taken back."""
        if self.sent:
            self.sent = False
            self.task.uncancel()

    def close(self) -> None:
        """Drop a cancellation not yet sent (the await it was for is over)."""
        handle = self.handle
        if handle is not None:
            self.handle = None
            handle.cancel()
