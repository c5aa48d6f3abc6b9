"""A small MCP server written with the official SDK, for the mount tests.

Run as ``python mcp_fixture_server.py MODE``:

- ``stdio`` (default): serve over stdio.
- ``http``: serve streamable HTTP on 127.0.0.1 at ``/mcp`` (hypercorn on trio) on a
  free port and print the URL as the first line of stdout.
- ``garbage``: answer every line on stdin with text that is not JSON-RPC.
- ``hang``: read stdin and never answer.
- ``badschema`` / ``dupe``: list a tool whose inputSchema is not an object schema /
  the same tool twice.

It is also importable: :func:`build` returns the server for the in-process form.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp.types as types
import trio
from mcp.server.lowlevel import NotificationOptions, Server

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA="

_OBJECT = {"type": "object", "properties": {}}


def _tools(mode: str, grown: bool) -> list[types.Tool]:
    ro = types.ToolAnnotations(readOnlyHint=True)
    tools = [
        types.Tool(
            name="echo",
            description="Echo the text.",
            inputSchema={
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
                "additionalProperties": False,
            },
            annotations=ro,
        ),
        types.Tool(
            name="meet",
            description="Wait until n calls of meet are in flight at once.",
            inputSchema={"type": "object", "properties": {"n": {"type": "integer"}}},
            annotations=ro,
        ),
        types.Tool(name="block", description="Run until cancelled.", inputSchema=_OBJECT),
        types.Tool(name="crash", description="Exit the server process.", inputSchema=_OBJECT),
        types.Tool(name="grow", description="Add the tool extra.", inputSchema=_OBJECT),
        types.Tool(name="kinds", description="Every content kind.", inputSchema=_OBJECT),
        types.Tool(
            name="struct",
            description="A structured result.",
            inputSchema={"type": "object", "properties": {"n": {"type": "integer"}}},
            outputSchema={
                "type": "object",
                "properties": {"n": {"type": "integer"}},
                "required": ["n"],
            },
        ),
        types.Tool(name="fail", description="Report an error.", inputSchema=_OBJECT),
        types.Tool(name="progress", description="Report progress.", inputSchema=_OBJECT),
        types.Tool(
            name="destroy",
            title="Destroyer",
            description="Destroy things.",
            inputSchema=_OBJECT,
            annotations=types.ToolAnnotations(destructiveHint=True, openWorldHint=False),
        ),
        types.Tool(
            name="idem",
            description="Idempotent.",
            inputSchema=_OBJECT,
            annotations=types.ToolAnnotations(idempotentHint=True, readOnlyHint=False),
        ),
    ]
    if grown:
        tools.append(types.Tool(name="extra", description="Added later.", inputSchema=_OBJECT))
    if mode == "badschema":
        tools.append(types.Tool(name="bad", inputSchema={"type": "string"}))
    if mode == "dupe":
        tools.append(tools[0])
    return tools


@asynccontextmanager
async def process_printing_url(argv: list[str]) -> AsyncIterator[tuple[str, trio.Process]]:
    """Run ``argv`` (a server that prints its URL as its first line); yield the URL.

    The process is killed when the block ends.
    """
    async with trio.open_nursery() as nursery:
        process: trio.Process = await nursery.start(
            functools.partial(trio.run_process, argv, stdout=subprocess.PIPE, check=False)
        )
        assert process.stdout is not None
        line = b""
        while not line.endswith(b"\n"):
            chunk = await process.stdout.receive_some(1)
            assert chunk, f"{argv} exited before printing its URL"
            line += chunk
        try:
            yield line.decode().strip(), process
        finally:
            process.kill()


def build(mode: str = "stdio") -> Server[Any, Any]:
    """The fixture server."""
    server: Server[Any, Any] = Server("fixture", version="1.0")
    state: dict[str, Any] = {"grown": False, "meeting": 0, "met": trio.Event()}

    @server.list_tools()
    async def list_tools() -> list[types.Tool]:
        return _tools(mode, state["grown"])

    @server.call_tool(validate_input=False)
    async def call_tool(name: str, arguments: dict[str, Any]) -> Any:
        ctx = server.request_context
        session = ctx.session
        if name == "echo":
            return [types.TextContent(type="text", text=arguments["text"])]
        if name == "meet":
            start = time.monotonic()
            state["meeting"] += 1
            if state["meeting"] >= arguments.get("n", 2):
                state["met"].set()
            with trio.fail_after(20):
                await state["met"].wait()
            return [types.TextContent(type="text", text=json.dumps([start, time.monotonic()]))]
        if name == "block":
            await session.send_log_message("info", "block started", logger="fixture")
            try:
                await trio.sleep_forever()
            finally:
                with trio.CancelScope(shield=True):
                    await session.send_log_message("info", "block cleanup", logger="fixture")
        if name == "crash":
            os._exit(3)
        if name == "grow":
            state["grown"] = True
            await session.send_tool_list_changed()
            return [types.TextContent(type="text", text="grown")]
        if name == "kinds":
            return [
                types.TextContent(
                    type="text", text="hello", annotations=types.Annotations(priority=0.5)
                ),
                types.ImageContent(type="image", data=PNG, mimeType="image/png"),
                types.AudioContent(type="audio", data=WAV, mimeType="audio/wav"),
                types.ResourceLink(
                    type="resource_link",
                    uri="file:///notes.txt",
                    name="notes",
                    mimeType="text/plain",
                ),
                types.EmbeddedResource(
                    type="resource",
                    resource=types.TextResourceContents(
                        uri="file:///a.txt", text="alpha", mimeType="text/plain"
                    ),
                ),
                types.EmbeddedResource(
                    type="resource",
                    resource=types.BlobResourceContents(
                        uri="file:///b.bin", blob="AAEC", mimeType="application/octet-stream"
                    ),
                ),
            ]
        if name == "struct":
            n = arguments.get("n", 1)
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=str(n))],
                structuredContent={"n": n},
            )
        if name == "fail":
            return types.CallToolResult(
                content=[types.TextContent(type="text", text="it broke")], isError=True
            )
        if name == "progress":
            token = ctx.meta.progressToken if ctx.meta else None
            if token is not None:
                for step in (1, 2, 3):
                    await session.send_progress_notification(
                        token,
                        step,
                        total=3,
                        message=f"step {step}",
                        related_request_id=ctx.request_id,
                    )
            return [types.TextContent(type="text", text="done")]
        return [types.TextContent(type="text", text=name)]

    return server


async def _stdio(mode: str) -> None:
    from mcp.server.stdio import stdio_server

    server = build(mode)
    options = server.create_initialization_options(NotificationOptions(tools_changed=True))
    async with stdio_server() as (read, write):
        await server.run(read, write, options)


async def _http() -> None:
    from hypercorn.config import Config
    from hypercorn.trio import serve
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    manager = StreamableHTTPSessionManager(app=build("http"))

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        await manager.handle_request(scope, receive, send)

    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.loglevel = "WARNING"
    async with manager.run(), trio.open_nursery() as nursery:
        urls = await nursery.start(serve, app, config)
        print(urls[0] + "/mcp", flush=True)


async def _garbage() -> None:
    stdin = anyio.wrap_file(sys.stdin)
    async for _line in stdin:
        print("this is not json-rpc", flush=True)


async def _hang() -> None:
    stdin = anyio.wrap_file(sys.stdin)
    async for _line in stdin:
        pass


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if mode == "http":
        trio.run(_http)
    elif mode == "garbage":
        trio.run(_garbage)
    elif mode == "hang":
        trio.run(_hang)
    else:
        trio.run(_stdio, mode)


if __name__ == "__main__":
    main()
