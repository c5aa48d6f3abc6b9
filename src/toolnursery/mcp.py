"""MCP both ways: mount MCP servers' tools into a registry, serve a registry over MCP.

Needs the ``mcp`` extra (``pip install -e '.[mcp]'`` in a checkout: the official MCP SDK,
2.x, and hypercorn for streamable HTTP). See ``docs/mcp.md``.

- :func:`open_mcp_mount` — an MCP server's tools (stdio command, streamable-HTTP URL,
  or an in-process SDK server) as tools of a registry or scope, for the block.
- :func:`mcp_server`, :func:`serve_mcp_stdio`, :func:`serve_mcp_http`,
  :func:`mcp_asgi_app` — a registry as an MCP server; every call runs the pipeline.
- :func:`close_sse_stream` — a served body lets its HTTP client's stream go, mid-call
  (the client resumes it).

:class:`~toolnursery.McpAnnotations` (a tool's ``mcp_annotations`` option) and
:func:`~toolnursery.install_destructive_ask` live in :mod:`toolnursery` itself and
need no SDK.
"""

from __future__ import annotations

from ._core._homes import fixup_module_metadata as _fixup_module_metadata
from ._mcp._answering import ElicitHandler as ElicitHandler
from ._mcp._answering import SampleHandler as SampleHandler
from ._mcp._asking import close_sse_stream as close_sse_stream
from ._mcp._convert import blocks_from_mcp as blocks_from_mcp
from ._mcp._convert import blocks_to_mcp as blocks_to_mcp
from ._mcp._http import RemoteServeError as RemoteServeError
from ._mcp._http import mcp_asgi_app as mcp_asgi_app
from ._mcp._http import serve_mcp_http as serve_mcp_http
from ._mcp._mount import McpMount as McpMount
from ._mcp._mount import open_mcp_mount as open_mcp_mount
from ._mcp._serve import ERROR_META_KEY as ERROR_META_KEY
from ._mcp._serve import mcp_server as mcp_server
from ._mcp._serve import serve_mcp_stdio as serve_mcp_stdio

__all__ = [
    "ERROR_META_KEY",
    "ElicitHandler",
    "McpMount",
    "RemoteServeError",
    "SampleHandler",
    "blocks_from_mcp",
    "blocks_to_mcp",
    "close_sse_stream",
    "mcp_asgi_app",
    "mcp_server",
    "open_mcp_mount",
    "serve_mcp_http",
    "serve_mcp_stdio",
]

_fixup_module_metadata(__name__, __all__)
