"""openai-agents and toolnursery: a registry as an agent's tools, ``FunctionTool``s in.

Install the extra (``pip install -e '.[openai-agents]'`` in a checkout). Give an agent a
registry's tools (each call runs through the registry's pipeline)::

    from agents import Agent
    from toolnursery.openai_agents import function_tools

    agent = Agent(name="assistant", tools=function_tools(registry))

Bring an SDK ``FunctionTool`` into a registry with
``registry.register(from_function_tool(tool))``. See ``docs/frameworks/openai-agents.md``
(also: serving a registry as an MCP server the SDK mounts).
"""

from __future__ import annotations

try:
    import agents as _agents  # the SDK: absolute imports never find this module
except ImportError as _exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "toolnursery.openai_agents needs openai-agents: install the extra with "
        "pip install -e '.[openai-agents]'"
    ) from _exc

from ._bridges._openai_agents import from_function_tool as from_function_tool
from ._bridges._openai_agents import function_tools as function_tools
from ._core._homes import fixup_module_metadata as _fixup_module_metadata

del _agents

__all__ = ["from_function_tool", "function_tools"]

_fixup_module_metadata(__name__, __all__)
