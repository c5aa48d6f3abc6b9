"""The asyncio driver's task-level pieces: deadline groups, a task that cancels itself on
an abort, the checks and the wait of :mod:`toolnursery.aio`'s native batches.

See :mod:`toolnursery._aio._driver` for the driver itself.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Coroutine
from typing import Any, Final

from .._core._aiocancel import SelfCancel
from .._core._content import ToolExecutionResult
from .._core._errors import AbortError, ToolTimeoutError
from .._core._lifecycle import RESOLVED, Slot, cut_short
from .._core._outcomes import ABORTED_BEFORE_DISPATCH_RESULT, failure_result
from .._core._scope import check_agent
from .._core._signal import CancelSignal, link, unlink
from .._core._statistics import Counters
from .._core._statistics import now as _now
from .._machine._intake import check_batch_id
from .._pipeline._call import CallRecord
from .._pipeline._dispatch import BodyAwait, invoke, resolve_dispatch, settle
from .._pipeline._dispatch import start as start_dispatch
from .._pipeline._registry import ToolRegistry, ToolScope
from .._pipeline._waterfalls import check_hook_abort_grace

__all__ = [
    "CANCELLED_REASON",
    "BodyCancel",
    "DeadlineGroup",
    "SelfCancel",
    "check_batch",
    "dispatch_here",
    "prepared",
    "settle_task",
    "single",
]

CANCELLED_REASON: Final = "the awaiting asyncio task was cancelled"

_SETTLED = Slot.SETTLED
_CancelledError: Final = asyncio.CancelledError
_current_task: Final = asyncio.current_task


class DeadlineGroup:
    """The calls of one time budget that the driver placed in one pass: one timer.

    Each member's own deadline is the budget from its start; the last member to start
    sets the timer to the latest of them (asyncio starts them in one loop iteration).
    When it fires, every member still running is cancelled; a member whose own deadline
    had passed before the batch's abort is ``TOOL_TIMEOUT``.
    """

    __slots__ = ("budget", "deadline", "fired", "handle", "hit", "members", "unstarted")

    def __init__(self, budget: float) -> None:
        self.budget: float = budget
        self.members: dict[CallRecord, asyncio.Task[Any]] = {}
        self.unstarted: int = 0
        self.deadline: float = -math.inf
        self.handle: asyncio.TimerHandle | None = None
        self.fired: bool = False
        self.hit: set[CallRecord] = set()  # members the timer cancelled

    def leave(self, loop: asyncio.AbstractEventLoop) -> None:
        """A member placed in the group leaves it before it starts (its budget changed
        since): the last one to start, if it was that, sets the timer."""
        self.unstarted -= 1
        if not self.unstarted and self.members:
            self.handle = loop.call_at(self.deadline, self.expire)

    def expire(self) -> None:
        self.fired = True
        for call, task in self.members.items():
            self.hit.add(call)
            task.cancel()

    async def run(
        self, call: CallRecord, task: asyncio.Task[Any], aborted: Callable[[], float | None]
    ) -> None:
        """The dispatch of a member (its view's only execute wrapper is the timeout
        policy): the body awaited with the group's timer armed. ``aborted``: when the
        batch's abort came, if it did."""
        loop = task.get_loop()
        deadline = self
        budget = deadline.budget
        own = loop.time() + budget / 1000
        if own > deadline.deadline:
            deadline.deadline = own
        deadline.unstarted -= 1
        deadline.members[call] = task
        if not deadline.unstarted:
            deadline.handle = loop.call_at(deadline.deadline, deadline.expire)
        if call.caller.cancelled:
            resolve_dispatch(call, cut_short(call.invoked))
            return
        failed: ToolExecutionResult | None = None
        value: Any = None
        call.deadline = own  # the body's ctx.signal reads as fired once it passes (B166)
        try:
            value = await invoke(call, True)
        except Exception as exc:
            failed = failure_result(exc)
        finally:
            call.deadline = None
            if call.derived is not None:
                call.end_attempt()
        if call in deadline.hit:
            # The timer cancelled the body and it returned anyway: the deadline passed.
            task.uncancel()
            aborted_at = aborted()
            if aborted_at is None or aborted_at >= own:
                result = failure_result(ToolTimeoutError(budget))
                resolve_dispatch(call, result)
                return
        resolve_dispatch(call, failed if failed is not None else settle(call, value))


class BodyCancel(SelfCancel):
    """:class:`SelfCancel` for a call whose execute wrappers run in the task: the abort
    cancels the task only while it awaits the body that a ``next()`` reached (:meth:`body`),
    as trio cancels only the body's scope. A wrapper awaiting outside ``next()`` goes
    on; a ``next()`` it calls after the abort returns the abort's result at once."""

    __slots__ = ("inside",)

    def __init__(self, task: asyncio.Task[Any]) -> None:
        super().__init__(task)
        self.inside: bool = False

    def fire(self) -> None:
        self.handle = None
        if self.inside and not self.sent:
            self.sent = True
            self.task.cancel()

    async def body(self, call: CallRecord) -> ToolExecutionResult:
        """A plain body awaited at the end of the chain (as the trio dispatch's own,
        whose scope absorbs only its own cancellation: ``ABORTED`` to the wrapper)."""
        task = self.task
        self.inside = True
        try:
            try:
                value = await invoke(call, True)
            finally:
                self.inside = False
                if call.derived is not None:
                    call.end_attempt()  # the body read its deadline signal
        except _CancelledError:
            if not self.sent and task.cancelling() == 0:
                return failure_result(AbortError())  # the body raised it itself
            if self.taken_back():
                return cut_short(True)  # the abort's own cancellation
            raise  # from outside (as well)
        except Exception as exc:
            return failure_result(exc)
        self.returned()  # the body may have caught the abort's cancellation
        return settle(call, value)


async def dispatch_here(call: CallRecord, signal: CancelSignal, chain: bool = False) -> None:
    """Dispatch in the driver's own task, which the abort then cancels: counted, and
    taken back with ``uncancel()`` when it comes back (an outside cancellation
    passes as itself). ``chain`` (one ``aio.execute``): the abort cancels only the
    body of an execute wrapper chain (:class:`BodyCancel`), not the wrappers."""
    task = _current_task()
    assert task is not None
    native: bool | BodyAwait = True
    if chain and call.current_plan().hooks.chained:
        inner = BodyCancel(task)
        cancel: SelfCancel = inner
        native = inner.body
    else:
        cancel = SelfCancel(task)
    link(signal, cancel)
    try:
        awaitable, ending = start_dispatch(call, native)
        try:
            outcome = await awaitable
        except Exception as exc:
            ending.raised(call, exc)
        else:
            ending.returned(call, outcome)
    except _CancelledError:
        if not cancel.sent and task.cancelling() == 0:
            # The body raised CancelledError itself: the call is aborted, as on trio.
            call.resolve(failure_result(AbortError()), RESOLVED)
            return
        call.resolve(call.aborted(), RESOLVED)
        if cancel.taken_back():
            return  # the abort's own cancellation
        call.slot = _SETTLED
        raise  # from outside: the caller drains, commits, re-raises
    finally:
        unlink(signal, cancel)
        cancel.close()
    cancel.returned()  # the body may have caught the abort's cancellation


def single(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one failure a task group wrapped (the driver's own: tasks raise none)."""
    exceptions = group.exceptions
    while len(exceptions) == 1 and isinstance(exceptions[0], BaseExceptionGroup):
        exceptions = exceptions[0].exceptions
    return exceptions[0] if len(exceptions) == 1 else group


def check_batch(
    registry: ToolRegistry,
    signal: object,
    agent: ToolScope | None,
    max_parallel: object,
    batch_id: object = None,
    grace: object = None,
) -> None:
    """The checks of the trio API's batch arguments (its errors, word for word)."""
    if type(max_parallel) is not int or max_parallel < 1:
        raise ValueError(f"max_parallel must be a positive integer, got {max_parallel!r}")
    if signal is not None and not isinstance(signal, CancelSignal):
        raise TypeError(f"signal must be a CancelSignal, not {type(signal).__name__}")
    if agent is not None:
        check_agent(registry, agent)
    if batch_id is not None:
        check_batch_id(batch_id)
    if grace is not None:
        check_hook_abort_grace(grace)


async def prepared(
    call: CallRecord, rest: Coroutine[Any, Any, None], stats: Counters | None
) -> None:
    """Await the rest of ``call``'s policy (a hook suspended), timed into ``stats``.

    Cancelled from outside there, the call never dispatches: it settles as
    ``ABORTED_BEFORE_DISPATCH``, as when the abort's grace cuts its policy, and the
    drain that follows the cancellation commits it.
    """
    begun = _now() if stats is not None else 0
    try:
        await rest
    except _CancelledError:
        call.resolve(ABORTED_BEFORE_DISPATCH_RESULT, RESOLVED)  # the policy never ended
        call.slot = _SETTLED
        raise
    if stats is not None:
        stats.prepare += _now() - begun


async def settle_task(task: asyncio.Task[Any], abort: CancelSignal, close: Any) -> None:
    """Await a batch's driver task to its end, whatever cancellations arrive.

    A cancellation of the awaiting task aborts the batch (``abort`` fires, ``close()``
    ends submission) and keeps waiting; it propagates once the driver has ended, unless
    the driver failed, whose failure then wins (the cancellation as its context).
    """
    cancelled: BaseException | None = None
    while not task.done():
        try:
            await asyncio.shield(task)
        except _CancelledError as exc:
            if task.done() and task.cancelled():
                raise  # the driver's own task was cancelled (the loop shuts down)
            cancelled = exc
            if not task.done():
                abort.cancel(CANCELLED_REASON)
                close()
        except Exception:
            break  # the driver failed: raised below
    if cancelled is not None:
        failure = None if task.cancelled() else task.exception()
        if failure is not None:
            failure.__context__ = cancelled
            raise failure
        raise cancelled
    task.result()
