"""asyncio tools: a body written for asyncio, run on the host loop, awaited from trio.

An ``async def`` does not say which event loop it was written for, so an asyncio body
is declared with :func:`asyncio_tool`. On the asyncio driver the declared body is just
awaited (it runs in an asyncio task already). In the trio guest run it becomes a trio
``async def`` that starts the asyncio coroutine as a task on the loop hosting the trio
run and parks the trio task until the asyncio task is done (both loops share one
thread, so the asyncio task's done-callback reschedules the trio task directly). A trio
cancellation cancels the asyncio task and keeps waiting until it has finished — its
``except CancelledError``/``finally`` blocks run before the call settles — and then
delivers ``trio.Cancelled``, so the pipeline maps it exactly as a trio body's.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from typing import Any, Final, ParamSpec, TypeVar, overload

import msgspec
import trio

from .._core._bodies import is_async
from .._core._errors import AbortError, AsyncioHostError, RegistrationError
from .._core._execution import ToolRunContext
from .._pipeline._plan import NATIVE_ATTR
from .._tools._definition import ToolDefinition
from ._host import HOST, Host

__all__ = [
    "AsyncioHostError",
    "asyncio_tool",
    "in_asyncio_task",
    "is_asyncio_tool",
    "runs_on_either_loop",
]

P = ParamSpec("P")
R = TypeVar("R")

_MARK: Final = "__toolnursery_asyncio_tool__"


@overload
def asyncio_tool(target: ToolDefinition, /) -> ToolDefinition: ...
@overload
def asyncio_tool(
    target: Callable[P, Coroutine[Any, Any, R]], /
) -> Callable[P, Coroutine[Any, Any, R]]: ...
def asyncio_tool(target: Any, /) -> Any:
    """Declare a tool body as asyncio code: it runs as a task on the host asyncio loop.

    Takes a :class:`ToolDefinition` (its ``execute`` is wrapped; a new definition is
    returned) or an asyncio coroutine function (a wrapper with the same signature is
    returned, usable as a raw ``execute``, as ``define_tool(execute=...)``, or under
    ``@tool``). Idempotent.

    Example::

        @asyncio_tool
        @tool
        async def fetch(url: str) -> str:
            \"\"\"Fetch a URL.\"\"\"
            async with aiohttp.ClientSession() as session:
                async with session.get(url) as response:
                    return await response.text()

    Args:
        target: the definition or the ``async def`` body to declare.

    Returns:
        The same kind of object, whose body runs on the host loop.

    Raises:
        RegistrationError: ``target`` (or the definition's ``execute``) is not an
            ``async def``; a plain ``def`` body already runs in a worker thread
            without being declared.
    """
    if isinstance(target, ToolDefinition):
        execute = target.execute
        if is_asyncio_tool(execute):
            return target
        _check_coroutine_function(execute, f'asyncio_tool(): tool "{target.name}" execute')
        return msgspec.structs.replace(target, execute=_bridge(execute, target.name))
    if is_asyncio_tool(target):
        return target
    _check_coroutine_function(target, "asyncio_tool()")
    return _bridge(target, None)


def is_asyncio_tool(fn: object) -> bool:
    """Whether ``fn`` is a body made by :func:`asyncio_tool`."""
    return getattr(fn, _MARK, False) is True


def runs_on_either_loop(
    fn: Callable[P, Coroutine[Any, Any, R]], /
) -> Callable[P, Coroutine[Any, Any, R]]:
    """Mark ``fn``, a body that checks which loop runs it and does the right thing on
    each, as an asyncio body: the asyncio driver awaits it in its task (a bridge's body
    that awaits its framework's asyncio code there, and crosses to the host loop or a
    thread itself under trio). Returns ``fn`` itself."""
    setattr(fn, _MARK, True)
    return fn


def in_asyncio_task() -> bool:
    """Whether this runs in an asyncio task (not in a trio task of the guest run)."""
    return _in_asyncio_task()


def _check_coroutine_function(fn: object, what: str) -> None:
    if not callable(fn):
        raise RegistrationError(f"{what} must be an async def, got {type(fn).__name__}")
    if not is_async(fn):
        raise RegistrationError(
            f"{what} must be an async def (an asyncio coroutine function), got a plain "
            f"callable {getattr(fn, '__qualname__', type(fn).__name__)!r}; a plain def "
            "body already runs in a worker thread, register it without asyncio_tool()"
        )


def _bridge(fn: Callable[..., Any], tool_name: str | None) -> Any:
    @functools.wraps(fn)
    async def run_on_asyncio(*args: Any, **kwargs: Any) -> Any:
        if _in_asyncio_task():
            # Awaited from an asyncio task (the asyncio driver's dispatch, or a test of
            # the body): just run it.
            return await fn(*args, **kwargs)
        host = HOST.get()
        if host is None:
            raise AsyncioHostError(_name(tool_name, fn, args, kwargs))
        return await run_on_host(host, fn(*args, **kwargs), _name(tool_name, fn, args, kwargs))

    setattr(run_on_asyncio, _MARK, True)
    # The asyncio driver calls ``fn`` itself (it runs in an asyncio task: no check).
    setattr(run_on_asyncio, NATIVE_ATTR, fn)
    return run_on_asyncio


def _in_asyncio_task() -> bool:
    """Whether this runs in an asyncio task (a trio task of the guest run does not: its
    steps are callbacks of the loop, outside any task). Cheaper than asking trio."""
    try:
        return _current_task() is not None
    except RuntimeError:  # no asyncio loop runs here (plain trio.run)
        return False


_current_task: Final = asyncio.current_task


def _name(
    tool_name: str | None, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> str:
    if tool_name is not None:
        return tool_name
    for value in (*args, *kwargs.values()):
        if isinstance(value, ToolRunContext):
            return value.name
    return getattr(fn, "__name__", "?")


async def run_on_host(host: Host, coro: Coroutine[Any, Any, Any], name: str) -> Any:
    """Run ``coro`` as a task on the host loop; await it from the calling trio task.

    Raises:
        trio.Cancelled: the trio side was cancelled; raised only after the asyncio task
            (cancelled in turn) has finished.
        AbortError: the asyncio task was cancelled by someone else (e.g. loop shutdown).
        Exception: whatever the asyncio task raised.
    """
    task = host.loop.create_task(coro, name=f"toolnursery:{name}")
    trio_task = trio.lowlevel.current_task()

    def wake(_: asyncio.Future[Any]) -> None:
        trio.lowlevel.reschedule(trio_task)

    cancel_requested = False

    def abort(_: Any) -> trio.lowlevel.Abort:
        # Stay parked until the asyncio task has unwound; the cancellation is
        # delivered by the checkpoint below. trio may ask again (another enclosing
        # scope cancelled): cancel the task once, so its cleanup is not interrupted.
        nonlocal cancel_requested
        if not cancel_requested:
            cancel_requested = True
            task.cancel()
        return trio.lowlevel.Abort.FAILED

    task.add_done_callback(wake)
    await trio.lowlevel.wait_task_rescheduled(abort)
    if task.cancelled():
        await trio.lowlevel.checkpoint_if_cancelled()
        raise AbortError()
    failure = task.exception()  # retrieved even when trio's cancellation wins below
    await trio.lowlevel.checkpoint_if_cancelled()
    if failure is not None:
        raise failure
    return task.result()
