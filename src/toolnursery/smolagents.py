"""smolagents and toolnursery: smolagents tools in a registry, a registry's tools in smolagents.

Install the extra (``pip install -e '.[smolagents]'`` in a checkout), then::

    from toolnursery.smolagents import from_smolagents, to_smolagents

    registry.register(from_smolagents(tool))                      # their tool, our pipeline
    agent = ToolCallingAgent(tools=to_smolagents(registry), model=model)  # our tools, their agent

The tool's ``inputs`` become JSON Schema (``nullable`` → not required), our validator
checks every call, and ``forward`` runs in a worker thread. See
``docs/frameworks/smolagents.md``.
"""

from __future__ import annotations

try:
    # the framework (untyped): absolute imports never find this module
    import smolagents as _smolagents  # type: ignore[import-untyped,unused-ignore]
except ImportError as _exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "toolnursery.smolagents needs smolagents: install the extra with "
        "pip install -e '.[smolagents]'"
    ) from _exc

from ._bridges._smolagents import RegistrySmolTool as RegistrySmolTool
from ._bridges._smolagents import from_smolagents as from_smolagents
from ._bridges._smolagents import inputs_schema as inputs_schema
from ._bridges._smolagents import to_smolagents as to_smolagents
from ._core._homes import fixup_module_metadata as _fixup_module_metadata

del _smolagents

__all__ = ["RegistrySmolTool", "from_smolagents", "inputs_schema", "to_smolagents"]

_fixup_module_metadata(__name__, __all__)
