"""Helpers shared by the test modules (imported as ``support``)."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

import trio


def no_deadlock(test: Callable[..., Awaitable[None]]) -> Callable[..., Awaitable[None]]:
    """Fail (rather than hang) when a test deadlocks: the mock clock jumps to the deadline."""

    @functools.wraps(test)
    async def guarded(*args: Any, **kwargs: Any) -> None:
        with trio.fail_after(100_000):
            await test(*args, **kwargs)

    return guarded
