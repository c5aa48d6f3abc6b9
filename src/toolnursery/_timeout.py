"""The timeout policy: a ``tools/execute`` wrapper that enforces ``timeout_ms``.

For a tool with a budget, the wrapper replaces the dispatch signal with a deadline
signal derived from the upstream one, and a timer task fires it when the budget runs
out. The registry fuses it into the body's cancel scope, so trio cancels the body at
its next checkpoint (a thread body polls ``ctx.signal``). If the deadline signal fired
with the policy's own reason, the result becomes ``TOOL_TIMEOUT`` whatever the body
returned; if the upstream signal fired first, its reason is inherited and the
registry's ``ABORTED`` stands.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import trio

from ._content import ToolExecutionResult
from ._definition import timeout_problem
from ._errors import RegistrationError, ToolTimeoutError
from ._execution import ToolDispatchExecution
from ._outcomes import _failure
from ._registry import Disposer, ToolRegistry, ToolScope
from ._signal import fuse

__all__ = ["install_timeout_policy"]


class _Deadline:
    """The policy's own cancellation reason (compared by identity)."""

    __slots__ = ("timeout_ms",)

    def __init__(self, timeout_ms: float) -> None:
        self.timeout_ms = timeout_ms

    def __repr__(self) -> str:
        return f"<timeout after {self.timeout_ms}ms>"


def install_timeout_policy(
    owner: ToolRegistry | ToolScope, *, default_timeout_ms: float | None = None
) -> Disposer:
    """Enforce every visible tool's ``timeout_ms`` on calls through ``owner``.

    Args:
        owner: the registry (every call) or a scope (that scope's calls).
        default_timeout_ms: a budget for tools that declare none (``None``: such tools
            run without a deadline).

    Returns:
        A :class:`Disposer` that uninstalls the policy (budgeted bodies then see the
        caller's signal again).

    Raises:
        RegistrationError: ``default_timeout_ms`` is not a positive finite number of at
            most a year.
    """
    if default_timeout_ms is not None and timeout_problem(default_timeout_ms) is not None:
        raise RegistrationError(
            "default_timeout_ms must be a positive finite number (at most one year)"
        )
    registry = owner if isinstance(owner, ToolRegistry) else owner.registry

    async def timeout_wrapper(
        execution: ToolDispatchExecution, next: Callable[[], Awaitable[ToolExecutionResult]]
    ) -> ToolExecutionResult:
        definition = registry.get(execution.name, execution.agent)
        budget = definition.timeout_ms if definition is not None else None
        if budget is None:
            budget = default_timeout_ms
        if budget is None:
            return await next()
        upstream = execution.signal
        derived = fuse(upstream)
        deadline = derived.signal
        reason = _Deadline(budget)

        async def timer() -> None:
            await trio.sleep(budget / 1000)
            deadline.cancel(reason)

        execution.signal = deadline
        failure: Exception | None = None
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(timer)
                try:
                    result = await next()
                except Exception as exc:  # re-raised below, outside the timer's nursery
                    failure = exc
                nursery.cancel_scope.cancel()
        finally:
            execution.signal = upstream
            derived.close()
        if failure is not None:
            raise failure
        if deadline.reason is reason:
            return _failure(ToolTimeoutError(budget))
        return result

    return owner.on_execute(timeout_wrapper)
