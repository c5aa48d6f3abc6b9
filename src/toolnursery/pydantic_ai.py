"""pydantic-ai and toolnursery: a registry as an agent's tools, pydantic-ai tools in.

Install the extra (``pip install -e '.[pydantic-ai]'`` in a checkout). Give an agent a
registry's tools, each model response's calls run as one toolnursery batch::

    from pydantic_ai import Agent
    from toolnursery.pydantic_ai import ToolnurseryCapability

    agent = Agent(model, capabilities=[ToolnurseryCapability(registry)])

(:class:`ToolnurseryToolset` alone runs each call through the pipeline, without the
scheduler.) Bring a pydantic-ai tool into a registry with
``registry.register(from_pydantic_ai(tool))``. See ``docs/frameworks/pydantic-ai.md``.
"""

from __future__ import annotations

try:
    import pydantic_ai as _pydantic_ai  # the framework: absolute imports never find this module
except ImportError as _exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "toolnursery.pydantic_ai needs pydantic-ai: install the extra with "
        "pip install -e '.[pydantic-ai]'"
    ) from _exc

from ._bridges._pydantic_ai import ToolnurseryCapability as ToolnurseryCapability
from ._bridges._pydantic_ai import ToolnurseryToolset as ToolnurseryToolset
from ._bridges._pydantic_ai import from_pydantic_ai as from_pydantic_ai
from ._core._homes import fixup_module_metadata as _fixup_module_metadata

del _pydantic_ai

__all__ = [
    "ToolnurseryCapability",
    "ToolnurseryToolset",
    "from_pydantic_ai",
]

_fixup_module_metadata(__name__, __all__)
