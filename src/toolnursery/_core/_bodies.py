"""What the pipeline needs to know about a tool body: async or not, may it suspend."""

from __future__ import annotations

import dis
import inspect
import types
from typing import Any, Final

__all__ = ["is_async", "mark_may_suspend", "may_suspend"]

_CO_COROUTINE: Final = inspect.CO_COROUTINE
_SUSPENDING_OPS: Final = frozenset(
    dis.opmap[name]
    for name in (
        "GET_AWAITABLE",
        "GET_AITER",
        "GET_ANEXT",
        "BEFORE_ASYNC_WITH",
        "SEND",
        "YIELD_VALUE",
    )
    if name in dis.opmap
)
_MAY_SUSPEND_ATTR: Final = "__toolnursery_may_suspend__"
_suspends: dict[types.CodeType, bool] = {}


def may_suspend(fn: Any) -> bool:
    """Whether an ``async def`` body can ever yield to trio (reach a checkpoint).

    A coroutine function whose code has no ``await``, ``async for`` or ``async with``
    runs to completion in one step: no cancellation can be delivered to it, so it needs
    no cancel scope. Wrappers that only await another body (``define_tool``'s,
    ``attach_output``'s) carry their body's answer in ``__toolnursery_may_suspend__``.
    Anything that cannot be inspected may suspend.
    """
    marked = getattr(fn, _MAY_SUSPEND_ATTR, None)
    if type(marked) is bool:
        return marked
    if type(fn) is not types.FunctionType:
        return True
    code = fn.__code__
    answer = _suspends.get(code)
    if answer is None:
        answer = _suspends[code] = any(
            instruction.opcode in _SUSPENDING_OPS for instruction in dis.get_instructions(code)
        )
    return answer


def mark_may_suspend(wrapper: Any, body: Any) -> None:
    """Record on ``wrapper`` (which only awaits ``body``) whether ``body`` may suspend."""
    try:
        setattr(wrapper, _MAY_SUSPEND_ATTR, may_suspend(body))
    except (AttributeError, TypeError):
        pass


def is_async(fn: Any) -> bool:
    """Whether calling ``fn`` returns a coroutine: the one test every module applies, so
    a wrapper is async exactly when its body is and runs where the body would have."""
    if type(fn) is types.FunctionType:
        return bool(fn.__code__.co_flags & _CO_COROUTINE)
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__)
