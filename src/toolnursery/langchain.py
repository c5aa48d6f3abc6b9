"""LangChain tools both ways: import a ``BaseTool`` into a registry, export a registry.

Install the extra (``pip install -e '.[langchain]'`` in a checkout)::

    from toolnursery.langchain import from_langchain, to_langchain

    registry.register(from_langchain(search_tool))   # their tool, our pipeline
    tools = to_langchain(registry)                    # our tools, their agent

An imported tool's arguments are validated by toolnursery against the schema
LangChain advertises (one-line errors); its failures, ``ToolException`` included,
are one-line error results. Exported tools run through the registry's pipeline,
hosted on the running asyncio loop by ``toolnursery.aio``. See
``docs/frameworks/langchain.md``.
"""

from __future__ import annotations

try:
    import langchain_core as _langchain_core
except ImportError as _exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "toolnursery.langchain needs langchain-core: install the extra with "
        "pip install -e '.[langchain]'"
    ) from _exc

from ._bridges._langchain import LangChainToolError as LangChainToolError
from ._bridges._langchain import from_langchain as from_langchain
from ._bridges._langchain import to_langchain as to_langchain
from ._core._homes import fixup_module_metadata as _fixup_module_metadata

del _langchain_core

__all__ = ["LangChainToolError", "from_langchain", "to_langchain"]

_fixup_module_metadata(__name__, __all__)
