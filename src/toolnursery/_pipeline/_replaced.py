"""A wrapper's replacement signal, on both drivers: firing it cancels only the body.

On trio the body is awaited in a cancel scope that the replacement (and the caller's
signal, when no enclosing scope carries it) cancels (:func:`in_scope`). On the asyncio
driver the body runs in the awaiting task, which the replacement's firing cancels
(:func:`dispatch_replaced`); the cancellation is taken back and the call is ``ABORTED``.
The caller's own abort reaches that task as the driver arranges it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Final

import trio

from .._core._aiocancel import SelfCancel
from .._core._content import ToolExecutionResult
from .._core._lifecycle import cut_short
from .._core._signal import CancelSignal, ScopeLink, link, unlink
from ._call import CallRecord

__all__ = ["CANCELLED", "dispatch_replaced", "in_scope"]

CANCELLED: Final = object()
"""What :func:`in_scope` returns when a signal cut the awaitable short."""


async def in_scope(awaitable: Any, call: CallRecord, signal: CancelSignal, carried: bool) -> Any:
    """Await in a trio cancel scope that the caller's signal (unless an enclosing scope
    carries it) and a replacement ``signal`` cancel; ``CANCELLED`` if one did.

    The scope absorbs only its own ``Cancelled``; one from an enclosing scope passes.
    """
    scope = trio.CancelScope()
    scope_link = ScopeLink(scope)
    caller = call.caller
    if not carried:
        link(caller, scope_link)
    if signal is not caller:
        link(signal, scope_link)
    try:
        with scope:
            return await awaitable
    finally:
        unlink(caller, scope_link)
        unlink(signal, scope_link)
    return CANCELLED


async def dispatch_replaced(
    call: CallRecord,
    signal: CancelSignal,
    body: Callable[[], Awaitable[ToolExecutionResult]],
) -> ToolExecutionResult:
    """Await ``body()`` (the body's dispatch, settled) under the replacement ``signal``."""
    caller = call.caller
    if caller.cancelled or signal.cancelled:
        return cut_short(call.invoked)
    task = asyncio.current_task()
    assert task is not None
    cancel = SelfCancel(task)
    link(signal, cancel)
    call.view_signal = signal
    try:
        try:
            result = await body()
        except asyncio.CancelledError:
            if cancel.taken_back():
                return cut_short(True)  # the replacement's own cancellation
            raise  # from outside (as well)
    finally:
        unlink(signal, cancel)
        cancel.close()
        call.view_signal = caller
    cancel.returned()  # the body may have caught the cancellation
    if signal.cancelled and not result.is_error:
        return cut_short(True)
    return result
