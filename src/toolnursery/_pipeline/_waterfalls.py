"""The pre- and post-execute waterfalls, approval and result observers of one call.

The waterfall queues are small objects rather than recursive closures: a closure that
refers to itself is a reference cycle per call, left to the cyclic GC.

A hook phase (the pre-execute waterfall, the approval request, the post-execute
waterfall) gets ``hook_abort_grace`` seconds after an abort of its call — counted from
the abort, or from the phase's start if the abort came first — and is cancelled past
it (:func:`first_step`, :class:`Suspended`). A phase that finishes without suspending
(most policy hooks) costs no cancel scope: it is run up to its first suspension by
hand, and only a phase that does suspend is run on, in a cancel scope per suspension.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import math
from collections.abc import Awaitable, Generator
from types import CoroutineType
from typing import TYPE_CHECKING, Any, Final

import msgspec
import trio

from .._core._content import ToolExecutionResult, with_contexts
from .._core._decisions import Accept, Allow, Ask, Block, Deny, PostToolDecision, PreToolDecision
from .._core._execution import ApprovalRequest, ApprovalService, ToolExecution
from .._core._journal import journaled
from .._core._outcomes import (
    ABORTED_BEFORE_DISPATCH_RESULT,
    UnreachableError,
    error_message,
    text_result,
)
from .._core._signal import CancelSignal, link, unlink
from ._argcheck import check_before_asking

if TYPE_CHECKING:
    from ._call import CallRecord

__all__ = [
    "ACCEPT",
    "ALLOW",
    "CUT",
    "DEFAULT_HOOK_ABORT_GRACE",
    "PostQueue",
    "PreQueue",
    "Suspended",
    "accept_next",
    "allow_next",
    "apply_post",
    "check_hook_abort_grace",
    "first_step",
    "notify",
    "observer_failed",
    "observer_returned",
    "resolve_decision",
    "run_post",
    "run_pre",
    "steps",
]

logger = logging.getLogger("toolnursery")

ALLOW: Final = Allow()
"""The one ``Allow`` the waterfall's end gives (a pass-through waterfall's decision)."""
ACCEPT: Final = Accept()
"""The one ``Accept`` the post-execute waterfall's end gives: the result as it is."""


async def allow_next() -> PreToolDecision:
    """``next()`` of the last pre-execute listener: the waterfall's end allows."""
    return ALLOW


def run_pre(listeners: tuple[Any, ...], execution: ToolExecution) -> Awaitable[PreToolDecision]:
    """The pre-execute waterfall's awaitable: a single listener's own coroutine (no
    coroutine layer of ours), else the first step of a queue."""
    if len(listeners) == 1:
        awaitable: Awaitable[PreToolDecision] = listeners[0](execution, allow_next)
        return awaitable
    return PreQueue(listeners, execution)()


# The waterfall queues are small objects rather than recursive closures: a closure that
# refers to itself is a reference cycle per call, left to the cyclic GC (measured: ~3 µs
# per call of collector time on the hot path).


class PreQueue:
    """``next()`` of a pre-execute waterfall: each call runs the next listener."""

    __slots__ = ("execution", "index", "listeners")

    def __init__(self, listeners: tuple[Any, ...], execution: ToolExecution) -> None:
        self.listeners = listeners
        self.execution = execution
        self.index = 0

    async def __call__(self) -> PreToolDecision:
        index = self.index
        listeners = self.listeners
        if index < len(listeners):
            self.index = index + 1
            decision: PreToolDecision = await listeners[index](self.execution, self)
            return decision
        return ALLOW


async def resolve_decision(
    decision: object,
    execution: ToolExecution,
    approval: ApprovalService | None,
    call: CallRecord | None = None,
) -> ToolExecutionResult | None:
    """Turn a non-Allow decision into a denial result, or ``None`` when the call proceeds.

    ``call``: the execution's record; before the approval service is asked, the tool
    checks its arguments (:func:`~._argcheck.check_before_asking`).
    """
    if type(decision) is Deny:
        return text_result("Error: " + str(decision.reason))
    if type(decision) is not Ask:
        raise UnreachableError("PreToolDecision", decision)
    name = execution.name
    if approval is None:
        reason = (
            decision.reason
            if decision.reason is not None
            else f'tool "{name}" requires approval (not yet supported)'
        )
        return text_result("Error: " + reason)
    approval = journaled(approval)  # a batch with a log records the question and answer
    agent = execution.agent
    if agent is None:
        return text_result(
            f'Error: tool "{name}" requires approval, but the call has no agent to route it through'
        )
    if call is not None:
        refused = check_before_asking(call)
        if refused is not None:
            return refused
    outcome = await approval.request(
        ApprovalRequest(
            agent,
            name,
            execution.call_id,
            decision.reason,
            execution.signal,
            decision.provenance,
        )
    )
    if outcome == "allowed-once" or outcome == "cancelled":
        if execution.signal.cancelled:
            return ABORTED_BEFORE_DISPATCH_RESULT
        if outcome == "allowed-once":
            return None
        return text_result(f'Error: approval for tool "{name}" was cancelled')
    if outcome == "rejected":
        return text_result(f'Error: the user rejected tool "{name}"')
    if outcome == "unavailable":
        return text_result(
            f'Error: tool "{name}" requires approval, but no approval channel is available'
        )
    raise UnreachableError("ApprovalOutcome", outcome)


async def accept_next() -> PostToolDecision:
    """``next()`` of the last post-execute listener: the waterfall's end accepts."""
    return ACCEPT


def run_post(
    listeners: tuple[Any, ...], execution: ToolExecution, result: ToolExecutionResult
) -> Awaitable[PostToolDecision]:
    """The post-execute waterfall's awaitable (as :func:`run_pre`)."""
    if len(listeners) == 1:
        awaitable: Awaitable[PostToolDecision] = listeners[0](execution, result, accept_next)
        return awaitable
    return PostQueue(listeners, execution, result)()


class PostQueue:
    """``next()`` of a post-execute waterfall: each call runs the next listener."""

    __slots__ = ("execution", "index", "listeners", "result")

    def __init__(
        self, listeners: tuple[Any, ...], execution: ToolExecution, result: ToolExecutionResult
    ) -> None:
        self.listeners = listeners
        self.execution = execution
        self.result = result
        self.index = 0

    async def __call__(self) -> PostToolDecision:
        index = self.index
        listeners = self.listeners
        if index < len(listeners):
            self.index = index + 1
            decision: PostToolDecision = await listeners[index](self.execution, self.result, self)
            return decision
        return ACCEPT


def apply_post(decision: object, result: ToolExecutionResult) -> ToolExecutionResult:
    t = type(decision)
    if t is Accept:
        content = decision.content  # type: ignore[attr-defined]
        contexts = decision.additional_contexts  # type: ignore[attr-defined]
        if content is None and not contexts:
            return result
        if content is None:  # the same content: what is known of it is kept
            return with_contexts(result, (*result.additional_contexts, *contexts))
        return msgspec.structs.replace(
            result,
            content=result.content if content is None else tuple(content),
            additional_contexts=(*result.additional_contexts, *contexts),
        )
    if t is Block:
        return ToolExecutionResult(
            tuple(decision.feedback),  # type: ignore[attr-defined]
            True,
            additional_contexts=tuple(decision.additional_contexts),  # type: ignore[attr-defined]
        )
    raise UnreachableError("PostToolDecision", decision)


def notify(
    observers: tuple[Any, ...], execution: ToolExecution, result: ToolExecutionResult
) -> None:
    for observer in observers:
        try:
            returned = observer(execution, result)
        except Exception as exc:
            observer_failed(execution, error_message(exc))
            continue
        if returned is not None:
            observer_returned(execution, returned)


def observer_returned(execution: ToolExecution, returned: object) -> None:
    """An observer returned something other than ``None``: an awaitable is closed and
    logged (observers are synchronous), anything else is ignored."""
    if inspect.isawaitable(returned):
        if inspect.iscoroutine(returned):
            returned.close()
        observer_failed(execution, "observer returned an awaitable; observers must be synchronous")


def observer_failed(execution: ToolExecution, message: str) -> None:
    """Log an observer's failure (observers never change or fail the call)."""
    logger.warning(
        'tool "%s" (%s): tools/result observer failed: %s',
        execution.name,
        execution.call_id,
        message,
    )


# -- the grace after an abort ---------------------------------------------------------

DEFAULT_HOOK_ABORT_GRACE: Final = 1.0
"""Seconds a hook phase may still run after its call's abort, unless configured."""

CUT: Final = object()
"""What :meth:`Suspended.rest` gives when the grace ran out and the phase was cancelled."""


def check_hook_abort_grace(value: object, where: str = "hook_abort_grace") -> float:
    """``value`` as a grace in seconds: a number, not NaN, at least 0 (``math.inf``:
    hooks are never cancelled).

    Raises:
        TypeError: ``value`` is not an ``int`` or a ``float``.
        ValueError: ``value`` is negative or NaN.
    """
    if type(value) is bool or not isinstance(value, int | float):
        raise TypeError(f"{where} must be a number of seconds, not {type(value).__name__}")
    grace = float(value)
    if math.isnan(grace) or grace < 0:
        raise ValueError(f"{where} must be a number of seconds of at least 0, got {value!r}")
    return grace


def steps(awaitable: object) -> Any:
    """The iterator ``await awaitable`` steps (a coroutine is its own).

    Raises:
        TypeError: ``awaitable`` is not awaitable (as ``await`` would).
    """
    if type(awaitable) is CoroutineType:
        return awaitable
    to_await = getattr(type(awaitable), "__await__", None)
    if to_await is None:
        raise TypeError(f"object {type(awaitable).__name__} can't be used in 'await' expression")
    return to_await(awaitable)


def first_step(awaitable: Awaitable[Any]) -> Any:
    """Run ``awaitable`` up to its first suspension, as ``await`` would begin it.

    Returns its value when it finished without suspending, else a :class:`Suspended`
    to await for the rest. Raises what it raised.
    """
    step = steps(awaitable)
    try:
        trap = step.send(None)
    except StopIteration as done:
        return done.value
    return Suspended(step, trap)


class Suspended:
    """A hook phase that suspended: :meth:`rest` runs it on under the abort's grace.

    The phase's own cancel scopes may be open at any suspension, so no scope of ours
    can enclose the rest of it; instead each suspension is parked in a cancel scope of
    its own (the innermost), whose deadline is the abort's time plus the grace. Past
    it, trio cancels the parked wait and the phase sees ``trio.Cancelled`` where it
    waits; the ``Cancelled`` is handed to it as ``yield from`` would hand it, and every
    later wait of the phase is cancelled at once, so it cannot wait past the grace.
    """

    __slots__ = ("deadline", "grace", "scope", "step", "trap")

    def __init__(self, step: Any, trap: Any) -> None:
        self.step = step
        self.trap = trap
        self.deadline = math.inf
        self.grace = 0.0
        self.scope: trio.CancelScope | None = None

    def __call__(self, _: CancelSignal) -> None:
        """The link to the call's signal: the abort came, the grace starts now."""
        deadline = trio.current_time() + self.grace
        if deadline < self.deadline:
            self.deadline = deadline
            scope = self.scope
            if scope is not None:
                scope.deadline = deadline

    async def rest(self, signal: CancelSignal, grace: float) -> Any:
        """Run the phase to its end: its value, or :data:`CUT` when the grace ran out
        and the phase ended in the ``Cancelled`` of the grace."""
        if not trio.lowlevel.in_trio_task():  # the asyncio driver's phase
            return await _AsyncioRest(self, signal, grace)
        self.grace = grace
        link(signal, self)
        try:
            return await self
        finally:
            unlink(signal, self)
            self.scope = None

    def __await__(self) -> Generator[Any, Any, Any]:
        step, trap = self.step, self.trap
        while True:
            scope = self.scope = trio.CancelScope(deadline=self.deadline)
            thrown: BaseException | None = None
            with scope:
                try:
                    sent = yield trap
                except GeneratorExit:
                    step.close()
                    raise
                except BaseException as exc:  # handed on to the phase, as ``yield from`` does
                    thrown = exc
            self.scope = None
            try:
                trap = step.send(sent) if thrown is None else step.throw(thrown)
            except StopIteration as done:
                return done.value
            except trio.Cancelled:
                # Ours when the grace ran out and no enclosing scope is cancelled too
                # (then it is the enclosing scope's to catch).
                if (
                    self.deadline <= trio.current_time()
                    and trio.current_effective_deadline() != -math.inf
                ):
                    return CUT
                raise


class _AsyncioRest:
    """:meth:`Suspended.rest` on asyncio (the asyncio driver's batches).

    asyncio has no cancel scope to park each suspension in: when the abort's grace runs
    out, the phase's task is cancelled once (counted, and uncounted with ``uncancel()``
    when that cancellation comes back), every later wait of the phase is cancelled at
    once, and the phase ending in that ``CancelledError`` is :data:`CUT`. A cancellation
    from anyone else passes through as itself.
    """

    __slots__ = ("expired", "grace", "handle", "phase", "signal", "task")

    def __init__(self, phase: Suspended, signal: CancelSignal, grace: float) -> None:
        self.phase = phase
        self.signal = signal
        self.grace = grace
        self.expired = False
        self.handle: asyncio.TimerHandle | None = None
        self.task: asyncio.Task[Any] | None = None

    def __call__(self, _: CancelSignal) -> None:
        """The abort came: the grace starts now."""
        if self.handle is None and self.task is not None:
            self.handle = self.task.get_loop().call_later(self.grace, self._expire)

    def _expire(self) -> None:
        self.expired = True
        task = self.task
        assert task is not None
        task.cancel()

    def __await__(self) -> Generator[Any, Any, Any]:
        task = self.task = asyncio.current_task()
        phase = self.phase
        step, trap = phase.step, phase.trap
        signal = self.signal
        link(signal, self)
        counted = True  # our one cancellation (if it came) is still counted on the task
        try:
            while True:
                sent: Any = None
                thrown: BaseException | None = None
                if self.expired:
                    thrown = asyncio.CancelledError()  # past the grace: no more waiting
                else:
                    try:
                        sent = yield trap
                    except GeneratorExit:
                        step.close()
                        raise
                    except BaseException as exc:  # handed on to the phase
                        thrown = exc
                try:
                    trap = step.send(sent) if thrown is None else step.throw(thrown)
                except StopIteration as done:
                    return done.value
                except asyncio.CancelledError:
                    if self.expired and task is not None:
                        counted = False
                        if task.uncancel() == 0:
                            return CUT
                    raise
        finally:
            unlink(signal, self)
            handle = self.handle
            if handle is not None:
                handle.cancel()
            if self.expired and counted and task is not None:
                task.uncancel()
