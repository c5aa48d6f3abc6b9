"""``toolnursery serve``: a registry as an MCP server, over stdio or streamable HTTP.

The MCP SDK is imported only when the command runs, so the rest of the command
works without the ``mcp`` extra.
"""

from __future__ import annotations

import argparse
from contextlib import ExitStack
from functools import partial
from typing import Any

import trio

from .._pipeline._registry import ToolRegistry
from ._common import EXIT_OK, UsageError, load_registry, sandbox_registry, say

__all__ = ["add_serve_parser", "parse_host_port", "serve_command"]


def add_serve_parser(commands: Any) -> None:
    """Add the ``serve`` subcommand to the command's subparsers."""
    serve = commands.add_parser(
        "serve",
        help="serve a registry's tools over MCP (stdio, or streamable HTTP with --http)",
        description="Serve the tools of --tools as an MCP server: over stdio (the default; "
        "an MCP client starts this command) or, with --http HOST:PORT, over streamable "
        "HTTP at /mcp. Every call runs through the registry's pipeline. Needs the mcp "
        "extra.",
    )
    serve.add_argument(
        "--tools",
        metavar="MODULE:ATTR",
        help="a ToolRegistry, or a callable returning one, as for run (default: the "
        "bundled example tools)",
    )
    serve.add_argument(
        "--root",
        metavar="DIR",
        help="the directory the example tools work in (default: a temporary sandbox)",
    )
    serve.add_argument(
        "--http",
        metavar="HOST:PORT",
        type=parse_host_port,
        help="serve streamable HTTP on HOST:PORT (PORT 0: any free port) instead of stdio",
    )
    serve.add_argument("--name", default="toolnursery", help="the server name MCP clients see")


def parse_host_port(text: str) -> tuple[str, int]:
    """``HOST:PORT`` as a pair (``[::1]:8000`` for IPv6)."""
    host, colon, port = text.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not colon or not host or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, e.g. 127.0.0.1:8000, got {text!r}")
    return host, int(port)


def serve_command(options: argparse.Namespace) -> int:
    """Run ``toolnursery serve`` with parsed ``options`` until it is stopped.

    Returns:
        The exit code: 0 once the server has stopped.

    Raises:
        UsageError: the options are unusable, or the ``mcp`` extra is not installed.
    """
    if options.tools is not None and options.root is not None:
        raise UsageError("--root applies to the bundled example tools, not to --tools")
    try:
        from .._mcp import _serve as tn_mcp
    except ImportError as exc:
        raise UsageError(
            f"serve needs the MCP SDK: pip install 'toolnursery[mcp]' ({exc})"
        ) from None
    registry = load_registry(options.tools) if options.tools is not None else None
    with ExitStack() as stack:
        if registry is None:
            registry = sandbox_registry(options.root, stack)
        if options.http is None:
            trio.run(partial(tn_mcp.serve_mcp_stdio, registry, name=options.name))
            return EXIT_OK
        host, port = options.http

        async def serve_http() -> None:
            async with trio.open_nursery() as nursery:
                url = await nursery.start(
                    _serve_http, tn_mcp.serve_mcp_http, registry, host, port, options.name
                )
                say(f"serving MCP at {url}")
                print(url, flush=True)

        trio.run(serve_http)
    return EXIT_OK


async def _serve_http(
    serve: Any,
    registry: ToolRegistry,
    host: str,
    port: int,
    name: str,
    *,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
) -> None:
    await serve(registry, host, port, name=name, task_status=task_status)
