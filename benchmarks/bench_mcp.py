"""Per-call cost of MCP both ways, beside calling the MCP SDK directly.

What it measures (µs per call; the median of ``--repeat`` timed runs of N calls, one
after another on one session; every run in this process on trio):

* **sdk in-process**: the SDK's ``ClientSession.call_tool`` against an SDK low-level
  server over in-memory streams — the floor for a mounted in-process server.
* **mounted in-process**: ``registry.execute`` of the same server's tool mounted with
  ``open_mcp_mount(server=...)`` — the pipeline plus the mount on top of the floor.
* **sdk stdio**: ``call_tool`` against an SDK server in a subprocess over stdio.
* **serve stdio**: ``call_tool`` against ``toolnursery serve`` (a no-op tool through
  the whole pipeline) in a subprocess over stdio.
* **bare nursery**: the same no-op body run in a trio nursery (the house baseline;
  MCP's IPC dwarfs it, it is here for scale).

Ratios: mounted / sdk in-process, serve stdio / sdk stdio.

Run: ``python benchmarks/bench_mcp.py`` (``--quick`` for fewer calls).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import mcp.types as types
import trio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.server.lowlevel import Server
from mcp.shared.memory import create_connected_server_and_client_session

from toolnursery import ToolDefinition, ToolExecutionInput, ToolRegistry
from toolnursery.mcp import open_mcp_mount

SDK_SERVER = """
import anyio, mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
server = Server("bench")

async def list_tools(request):
    return types.ServerResult(types.ListToolsResult(tools=[
        types.Tool(name="noop", inputSchema={"type": "object"})]))

async def call_tool(request):
    return types.ServerResult(types.CallToolResult(
        content=[types.TextContent(type="text", text="ok")]))

server.request_handlers[types.ListToolsRequest] = list_tools
server.request_handlers[types.CallToolRequest] = call_tool

async def main():
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())

anyio.run(main, backend="trio")
"""

TOOLS = """
from toolnursery import ToolDefinition, ToolRegistry

async def noop(args, ctx):
    return "ok"

def make():
    registry = ToolRegistry()
    registry.register(ToolDefinition("noop", "does nothing", {"type": "object"}, noop))
    return registry
"""


def sdk_server() -> Server[Any, Any]:
    server: Server[Any, Any] = Server("bench")

    async def list_tools(request: types.ListToolsRequest) -> types.ServerResult:
        return types.ServerResult(
            types.ListToolsResult(tools=[types.Tool(name="noop", inputSchema={"type": "object"})])
        )

    async def call_tool(request: types.CallToolRequest) -> types.ServerResult:
        return types.ServerResult(
            types.CallToolResult(content=[types.TextContent(type="text", text="ok")])
        )

    server.request_handlers[types.ListToolsRequest] = list_tools
    server.request_handlers[types.CallToolRequest] = call_tool
    return server


async def timed(run: Callable[[], Awaitable[object]], n: int, repeat: int) -> float:
    await run()  # warm-up
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        await run()
        samples.append((time.perf_counter() - start) / n * 1e6)
    return statistics.median(samples)


def sequential(call: Callable[[], Awaitable[object]], n: int) -> Callable[[], Awaitable[None]]:
    async def run() -> None:
        for _ in range(n):
            await call()

    return run


async def bench_sdk_in_process(n: int, repeat: int) -> float:
    async with create_connected_server_and_client_session(sdk_server()) as session:
        return await timed(sequential(lambda: session.call_tool("noop", {}), n), n, repeat)


async def bench_mounted_in_process(n: int, repeat: int) -> float:
    registry = ToolRegistry()
    async with open_mcp_mount(registry, server=sdk_server()):
        execution = ToolExecutionInput("c", "noop", {})
        return await timed(sequential(lambda: registry.execute(execution), n), n, repeat)


async def bench_stdio(args: list[str], n: int, repeat: int) -> float:
    params = StdioServerParameters(command=sys.executable, args=args)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return await timed(sequential(lambda: session.call_tool("noop", {}), n), n, repeat)


async def bench_bare_nursery(n: int, repeat: int) -> float:
    definition = ToolDefinition("noop", "", {"type": "object"}, _noop)

    async def run() -> None:
        async with trio.open_nursery() as nursery:
            for _ in range(n):
                nursery.start_soon(definition.execute, {}, None)

    return await timed(run, n, repeat)


async def _noop(args: Any, ctx: Any) -> str:
    return "ok"


async def main(n: int, repeat: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        server_py = Path(tmp, "sdk_server.py")
        server_py.write_text(SDK_SERVER)
        tools_py = Path(tmp, "bench_tools.py")
        tools_py.write_text(TOOLS)
        rows = {
            "sdk in-process": await bench_sdk_in_process(n, repeat),
            "mounted in-process": await bench_mounted_in_process(n, repeat),
            "sdk stdio": await bench_stdio([str(server_py)], n, repeat),
            "serve stdio": await bench_stdio(
                ["-m", "toolnursery", "serve", "--tools", f"{tools_py}:make"], n, repeat
            ),
            "bare nursery": await bench_bare_nursery(n, repeat),
        }
    print(f"N = {n} sequential calls on one session, median of {repeat} runs")
    for name, us in rows.items():
        print(f"  {name:<20} {us:9.1f} µs/call")
    print(f"  mounted / sdk in-process: {rows['mounted in-process'] / rows['sdk in-process']:.2f}x")
    print(f"  serve / sdk over stdio:   {rows['serve stdio'] / rows['sdk stdio']:.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls and runs")
    options = parser.parse_args()
    trio.run(main, 100 if options.quick else 500, 3 if options.quick else 7)
