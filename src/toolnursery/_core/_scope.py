"""The type of the scope a call runs for, as the layers below the registry name it.

A call's ``agent`` is a :class:`~toolnursery.ToolScope` (or ``None``: the global view).
``ToolScope`` lives with the registry in ``_pipeline``, above the values of ``_core``
that carry it (:class:`~toolnursery.ToolExecutionInput`, the execution views, an
:class:`~toolnursery.ApprovalRequest`) and the pipeline modules that only pass it on;
those annotate it with :data:`AgentScope` instead of importing upwards.

``AgentScope`` is ``Any`` on purpose, not a protocol: nothing below the registry reads
a scope (it is compared with ``is`` and handed back to the registry), and a value
typed by a protocol would no longer type-check where the registry takes a
``ToolScope`` (``registry.get(execution.name, execution.agent)``, user code included).
The registry checks at run time that an agent is one of its scopes.
"""

from __future__ import annotations

from typing import Any, TypeAlias

__all__ = ["AgentScope", "check_agent"]

AgentScope: TypeAlias = Any
"""A :class:`~toolnursery.ToolScope`: the scope a call runs for (see the module docstring)."""


def check_agent(registry: object, agent: object) -> None:
    """Refuse a scope of another registry (its tools and guards are not ours).

    Raises:
        ValueError: ``agent`` is not a scope made by ``registry.scope()``.
    """
    if getattr(agent, "_registry", None) is not registry:
        raise ValueError(
            f"agent must be a ToolScope of this registry (made by its scope()), got {agent!r}"
        )
