"""The destructive-tool policy: ``Ask`` before a tool whose MCP hints say it may destroy."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from .._core._decisions import Ask, PreToolDecision
from .._core._execution import ToolExecution
from .._pipeline._registry import Disposer, ToolRegistry, ToolScope

__all__ = ["install_destructive_ask"]


def install_destructive_ask(
    owner: ToolRegistry | ToolScope, *, reason: str | None = None
) -> Disposer:
    """Ask before every call of a tool whose MCP annotations say it may destroy.

    A pre-execute listener: a call of a tool declaring :class:`McpAnnotations` that
    is not read-only and not ``destructive=False`` gets ``Ask`` (the registry's
    approval service decides; without one the call is denied). Tools without
    annotations pass through unchanged.

    Args:
        owner: the registry (every call) or a scope (that scope's calls).
        reason: the ``Ask`` reason (default: names the tool and its title).

    Returns:
        A :class:`Disposer` that removes the listener.
    """
    registry = owner if isinstance(owner, ToolRegistry) else owner.registry

    async def destructive_ask(
        execution: ToolExecution, next: Callable[[], Awaitable[PreToolDecision]]
    ) -> PreToolDecision:
        definition = registry.get(execution.name, execution.agent)
        hints = None if definition is None else definition.mcp_annotations
        if hints is not None and hints.may_destroy:
            label = f"{hints.title} ({execution.name})" if hints.title else execution.name
            return Ask(reason if reason is not None else f"{label} may make destructive changes")
        return await next()

    return owner.on_pre_execute(destructive_ask)
