"""Awaiting a Ray object ref from trio: one trio-side wait, no thread, cancellable.

The ref's ``concurrent.futures.Future`` (``ref.future()``) completes on a Ray thread;
its done-callback hands one ``Event.set`` to the trio run through the run's token, so
the trio thread never blocks and no worker thread is parked per call.

Cancellation: when ``trio.Cancelled`` arrives in the wait (a batch abort, a deadline,
an enclosing scope), the remote work is asked to stop (``ray.cancel``), given
``grace`` seconds to settle, then forced (``force()``) and given ``grace`` seconds
more; the ``Cancelled`` is then re-raised. The settling waits are shielded, so the
call does not return while its remote body may still be unwinding — except that a
remote side that never settles, even forced, is left after the second period.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import ray
import trio

__all__ = ["await_ref", "watch"]


def watch(ref: Any) -> tuple[Future[Any], trio.Event]:
    """The ref's future and a trio ``Event`` set (in this run) when it completes."""
    future: Future[Any] = ref.future()
    done = trio.Event()
    token = trio.lowlevel.current_trio_token()

    def wake(_: Future[Any]) -> None:
        try:
            token.run_sync_soon(done.set)
        except trio.RunFinishedError:
            pass  # nobody waits any more: the run that asked has ended

    future.add_done_callback(wake)
    return future, done


async def await_ref(ref: Any, *, grace: float, force: Callable[[], None] | None = None) -> Any:
    """Wait for ``ref``'s value (or raise its error) without blocking trio.

    Args:
        ref: a Ray ``ObjectRef``.
        grace: seconds to wait for the remote side to settle after ``ray.cancel``,
            and again after ``force()``.
        force: what stops the remote side for good (``ray.cancel(ref, force=True)``
            for a task, killing the actor for an actor call); ``None``: only
            ``ray.cancel``.

    Raises:
        trio.Cancelled: the wait was cancelled (after the remote side settled).
        Exception: the ref's error (a ``RayError``).
    """
    future, done = watch(ref)
    try:
        await done.wait()
    except trio.Cancelled:
        with trio.CancelScope(shield=True):
            await _settle(ref, done, grace, force)
        raise
    return future.result()


async def _settle(
    ref: Any, done: trio.Event, grace: float, force: Callable[[], None] | None
) -> None:
    ray.cancel(ref, force=False)
    with trio.move_on_after(grace):
        await done.wait()
    if done.is_set() or force is None:
        return
    force()
    with trio.move_on_after(grace):
        await done.wait()
