"""The timeout policy: a ``tools/execute`` entry that enforces ``timeout_ms``.

For a tool with a budget, the call's dispatch runs inside a trio cancel scope whose
deadline is the budget from now (no timer task): trio cancels the body at its next
checkpoint, and the body's ``ctx.signal`` reads as fired once the deadline has passed
(a thread body or a shielded body polls it). If the deadline passed before any abort
of the caller, the result becomes ``TOOL_TIMEOUT`` whatever the body returned; if the
caller aborted first, the registry's ``ABORTED`` stands.
"""

from __future__ import annotations

from .._core._errors import RegistrationError
from .._tools._definition import timeout_problem
from ._deadline import DeadlinePolicy
from ._registry import Disposer, ToolRegistry, ToolScope

__all__ = ["install_timeout_policy"]


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
    return owner.on_execute(DeadlinePolicy(default_timeout_ms, registry.get))
