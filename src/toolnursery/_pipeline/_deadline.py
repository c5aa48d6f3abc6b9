"""A call's deadline: a trio cancel scope with a deadline, entered around its dispatch.

The timeout policy registers a :class:`DeadlinePolicy` in the execute chain. When it is
the view's only wrapper, dispatch enters the deadline scope itself (no wrapper chain,
no task, no timer); otherwise the policy keeps its position in the chain (so a retry
policy outside it gives every attempt its own deadline): as the outermost wrapper,
dispatch enters its scope around the rest of the chain; as the innermost, the chain's
end enters it around the base dispatch; elsewhere it runs as a wrapper. Either way
:func:`enter`, :func:`timed_out` and :func:`unwound` are the mechanism: the scope's
``cancelled_caught`` — or a deadline that passed before any enclosing abort while the
body cleaned up or ignored it — makes the result ``TOOL_TIMEOUT``; an enclosing
cancellation stays an abort.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

import trio

from .._core._content import ToolExecutionResult
from .._core._errors import ToolTimeoutError
from .._core._execution import record_of
from .._core._outcomes import failure_result
from .._core._signal import fired_before

if TYPE_CHECKING:
    from .._core._execution import ToolDispatchExecution
    from .._core._signal import CancelSignal
    from .._tools._definition import ToolDefinition

__all__ = ["DeadlinePolicy", "TimedCall", "current_definition", "enter", "timed_out", "unwound"]


class _Resolved(Protocol):
    @property
    def definition(self) -> ToolDefinition | None: ...


class TimedCall(Protocol):
    """What a deadline reads and writes of a call's record (a ``CallRecord``).

    A protocol, so that the plan, which holds the timeout policy, and the record, which
    holds the plan, need not import each other through this module.
    """

    caller: CancelSignal  # the caller's (or the batch's) signal
    deadline: float | None  # the innermost deadline now in force
    timed_out: float | None  # the budget whose deadline ended the call

    @property
    def plan(self) -> object:
        """The call's plan (``None`` before it has one)."""
        ...

    def current_plan(self) -> _Resolved:
        """The call's plan, recompiled if the registry changed since."""
        ...


class DeadlinePolicy:
    """The timeout policy's entry in the execute chain (internal).

    Called as a wrapper ``(view, next)`` when other wrappers share the chain.
    """

    __slots__ = ("__weakref__", "default_ms", "resolve")

    def __init__(
        self,
        default_ms: float | None,
        resolve: Callable[[str, Any], ToolDefinition | None],
    ) -> None:
        self.default_ms: float | None = default_ms
        self.resolve: Callable[[str, Any], ToolDefinition | None] = resolve

    def budget(self, definition: ToolDefinition) -> float | None:
        """The budget of one tool: its own ``timeout_ms``, else the policy's default."""
        budget = definition.timeout_ms
        return self.default_ms if budget is None else budget

    async def __call__(
        self,
        view: ToolDispatchExecution,
        next: Callable[[], Awaitable[ToolExecutionResult]],
    ) -> ToolExecutionResult:
        definition = current_definition(view, self.resolve)
        budget = None if definition is None else self.budget(definition)
        record = record_of(view)
        if budget is None or record is None:
            return await next()
        # ``next()`` under a deadline ``budget`` from now; TOOL_TIMEOUT if it passes.
        # While it runs, the body's ``ctx.signal`` reads as fired once the deadline has
        # passed (a thread body or a shielded body polls it). Inline, not a helper
        # coroutine: every resume of the body passes through each layer.
        scope, outer = enter(record, budget)
        try:
            with scope:
                result = await next()
        except trio.Cancelled:
            unwound(record, scope, budget)
            raise
        finally:
            record.deadline = outer
        return timed_out(record, scope, budget) or result


def current_definition(
    view: ToolDispatchExecution, resolve: Callable[[str, Any], ToolDefinition | None]
) -> ToolDefinition | None:
    """The definition ``view``'s tool resolves to now: its call's current plan's, else
    (a view without a call) ``resolve(name, agent)``."""
    record = record_of(view)
    if record is not None and record.plan is not None:
        definition: ToolDefinition | None = record.current_plan().definition
        return definition
    return resolve(view.name, view.agent)


def enter(record: TimedCall, budget_ms: float) -> tuple[trio.CancelScope, float | None]:
    """A deadline scope ``budget_ms`` from now (to enter), and the record's outer deadline
    (to restore when it exits); the record's deadline is the innermost one meanwhile."""
    deadline = trio.current_time() + budget_ms / 1000
    outer = record.deadline
    record.deadline = deadline if outer is None or deadline < outer else outer
    return trio.CancelScope(deadline=deadline), outer


def timed_out(
    record: TimedCall, scope: trio.CancelScope, budget_ms: float
) -> ToolExecutionResult | None:
    """After the scope exited normally: the timeout result if its deadline won.

    It won if the scope caught its own cancellation, or if the deadline passed (the
    body ignored it, or polled its signal and stopped) before any abort of the caller.
    """
    if scope.cancelled_caught or (
        scope.cancel_called and not fired_before(record.caller, scope.deadline)
    ):
        return failure_result(ToolTimeoutError(budget_ms))
    return None


def unwound(record: TimedCall, scope: trio.CancelScope, budget_ms: float) -> None:
    """An enclosing abort unwinds the call: if the deadline had passed before it fired,
    the call still timed out (the batch worker that maps the abort reads this)."""
    if scope.cancel_called and not fired_before(record.caller, scope.deadline):
        record.timed_out = budget_ms
