"""``toolnursery serve``: a registry as an MCP server, over stdio or streamable HTTP.

The MCP SDK is imported only when the command runs, so the rest of the command
works without the ``mcp`` extra.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
from contextlib import ExitStack
from functools import partial
from typing import Any, Final

import trio

from ._common import EXIT_OK, UsageError, load_registry, sandbox_registry, say

__all__ = ["TOKEN_ENV", "add_serve_parser", "parse_host_port", "serve_command"]

TOKEN_ENV: Final = "TOOLNURSERY_SERVE_TOKEN"
"""The environment variable holding ``serve --http``'s bearer token (without --token-file)."""


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
    serve.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow --http on an address beyond loopback (needs a token: --token-file or "
        f"{TOKEN_ENV})",
    )
    serve.add_argument(
        "--token-file",
        metavar="PATH",
        help="a file holding the bearer token every HTTP request must carry (Authorization: "
        f"Bearer TOKEN); default: the {TOKEN_ENV} environment variable",
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
    token = _token(options)
    if options.http is None and (options.allow_remote or token is not None):
        raise UsageError("--allow-remote and a token apply to --http only")
    try:
        from .._mcp import _http as tn_http
        from .._mcp import _serve as tn_mcp
    except ImportError as exc:
        if importlib.util.find_spec("mcp") is None:
            raise UsageError(f"serve needs the MCP SDK: pip install -e '.[mcp]' ({exc})") from None
        raise UsageError(
            f"serve could not load its MCP support: {type(exc).__name__}: {exc}"
        ) from exc
    if options.http is not None:
        host, _ = options.http
        try:
            tn_http.check_bind(host, allow_remote=options.allow_remote, token=token)
        except tn_http.RemoteServeError:
            raise UsageError(
                f"refusing to serve MCP on {host!r}: beyond loopback the tools are open to "
                f"the network; pass --allow-remote and a bearer token (--token-file or "
                f"{TOKEN_ENV})"
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
                    partial(
                        tn_http.serve_mcp_http,
                        registry,
                        host,
                        port,
                        name=options.name,
                        allow_remote=options.allow_remote,
                        token=token,
                    )
                )
                say(f"serving MCP at {url}")
                print(url, flush=True)

        trio.run(serve_http)
    return EXIT_OK


def _token(options: argparse.Namespace) -> str | None:
    """The bearer token: --token-file's content, else the environment's, else none."""
    if options.token_file is not None:
        try:
            with open(options.token_file, encoding="utf-8") as file:
                text = file.read().strip()
        except OSError as exc:
            raise UsageError(f"--token-file: cannot read {options.token_file!r}: {exc}") from None
        if not text:
            raise UsageError(f"--token-file: {options.token_file!r} is empty")
        return text
    text = os.environ.get(TOKEN_ENV, "").strip()
    return text or None
