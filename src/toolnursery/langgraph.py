"""A LangGraph node that runs a model's tool calls as one toolnursery batch.

Install the extra (``pip install -e '.[langgraph]'`` in a checkout) and put the node where
``langgraph.prebuilt.ToolNode`` was::

    from toolnursery.langgraph import ToolBatchNode

    graph.add_node("tools", ToolBatchNode(registry))

Same state in, ``ToolMessage``\\s (with ``status``) out in model order; the calls run
as one batch of the registry (keys, barriers, policies, the recorder), hosted on the
running asyncio loop by ``toolnursery.aio``; each result is written to the custom
stream as it commits. See ``docs/frameworks/langgraph.md``.
"""

from __future__ import annotations

try:
    import langgraph as _langgraph
except ImportError as _exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "toolnursery.langgraph needs LangGraph: install the extra with "
        "pip install -e '.[langgraph]'"
    ) from _exc

from ._bridges._langgraph import STREAM_KEY as STREAM_KEY
from ._bridges._langgraph import InterruptApproval as InterruptApproval
from ._bridges._langgraph import ToolBatchNode as ToolBatchNode
from ._bridges._langgraph import tool_message as tool_message
from ._core._homes import fixup_module_metadata as _fixup_module_metadata

del _langgraph

__all__ = ["STREAM_KEY", "InterruptApproval", "ToolBatchNode", "tool_message"]

_fixup_module_metadata(__name__, __all__)
