"""A sync tool body in a worker thread, awaited from asyncio, that never outlives its call.

:func:`asyncio.to_thread` lets the awaiting task go as soon as it is cancelled, while the
thread runs on; a call must not end before its body has. :func:`run_sync` waits for the
thread whatever cancellations arrive (as ``trio.to_thread.run_sync`` does by default),
then delivers the first of them.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable
from typing import Any

__all__ = ["run_sync"]


async def run_sync(fn: Callable[..., Any], *args: Any) -> Any:
    """Run ``fn(*args)`` in the loop's default executor, in a copy of this context."""
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    future = loop.run_in_executor(None, context.run, fn, *args)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        # The thread cannot be interrupted: wait until it has returned, then let the
        # cancellation go on.
        while not future.done():
            try:
                await asyncio.wait((future,))
            except asyncio.CancelledError:
                continue
        if not future.cancelled():
            future.exception()  # retrieved: the cancellation wins
        raise
