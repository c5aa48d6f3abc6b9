"""Per-call cost of MCP both ways, beside calling the MCP SDK directly.

What it measures (µs per call; the median of ``--repeat`` timed runs of N calls, one
after another on one session; every run in this process on trio). In-process rows
are this process's CPU time (steady on a busy machine: nothing else runs in it);
stdio rows are wall-clock time (the server is another process):

* **sdk in-process**: the SDK's ``Client.call_tool`` against an SDK low-level server
  over in-memory streams (the 2025-11-25 handshake) — the floor for a mounted
  in-process server, and for a served one.
* **served in-process**: the same client against ``mcp_server(registry)`` (a no-op
  tool through the whole pipeline).
* **sdk / served in-process 2026**: the same two at 2026-07-28 (the SDK's direct,
  stateless in-process dispatch).
* **mounted in-process**: ``registry.execute`` of the same server's tool mounted with
  ``open_mcp_mount(server=...)`` — the pipeline plus the mount on top of the floor.
* **sdk stdio**: ``call_tool`` against an SDK server in a subprocess over stdio.
* **serve stdio**: ``call_tool`` against ``toolnursery serve`` (a no-op tool through
  the whole pipeline) in a subprocess over stdio.
* **bare nursery**: the same no-op body run in a trio nursery (the house baseline;
  MCP's IPC dwarfs it, it is here for scale).

Ratios: mounted / sdk in-process, served / sdk in-process (each revision), serve
stdio / sdk stdio.

Run: ``python benchmarks/bench_mcp.py`` (``--quick`` for fewer calls; ``--serve`` for
the serve rows only).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import mcp.types as types
import trio
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.server.lowlevel import Server

from toolnursery import ToolDefinition, ToolExecutionInput, ToolRegistry
from toolnursery.mcp import mcp_server, open_mcp_mount

SDK_SERVER = """
import anyio, mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

async def list_tools(ctx, params):
    return types.ListToolsResult(tools=[types.Tool(name="noop", input_schema={"type": "object"})])

async def call_tool(ctx, params):
    return types.CallToolResult(content=[types.TextContent(type="text", text="ok")])

server = Server("bench", on_list_tools=list_tools, on_call_tool=call_tool)

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


def sdk_server() -> Server[Any]:
    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[types.Tool(name="noop", input_schema={"type": "object"})]
        )

    async def call_tool(ctx: Any, params: Any) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text="ok")])

    return Server("bench", on_list_tools=list_tools, on_call_tool=call_tool)


def noop_registry() -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(ToolDefinition("noop", "does nothing", {"type": "object"}, _noop))
    return registry


async def timed(
    run: Callable[[], Awaitable[object]], n: int, repeat: int, clock: Callable[[], float]
) -> float:
    await run()  # warm-up
    samples = []
    for _ in range(repeat):
        start = clock()
        await run()
        samples.append((clock() - start) / n * 1e6)
    return statistics.median(samples)


def sequential(call: Callable[[], Awaitable[object]], n: int) -> Callable[[], Awaitable[None]]:
    async def run() -> None:
        for _ in range(n):
            await call()

    return run


async def bench_client(
    server: Any, mode: str, n: int, repeat: int, clock: Callable[[], float] = time.process_time
) -> float:
    async with Client(server, mode=mode) as client:
        return await timed(sequential(lambda: client.call_tool("noop", {}), n), n, repeat, clock)


async def bench_mounted_in_process(n: int, repeat: int) -> float:
    registry = ToolRegistry()
    async with open_mcp_mount(registry, server=sdk_server()):
        execution = ToolExecutionInput("c", "noop", {})
        return await timed(
            sequential(lambda: registry.execute(execution), n), n, repeat, time.process_time
        )


async def bench_stdio(args: list[str], n: int, repeat: int) -> float:
    params = StdioServerParameters(command=sys.executable, args=args, env=dict(os.environ))
    return await bench_client(params, "legacy", n, repeat, time.perf_counter)


async def bench_bare_nursery(n: int, repeat: int) -> float:
    definition = ToolDefinition("noop", "", {"type": "object"}, _noop)

    async def run() -> None:
        async with trio.open_nursery() as nursery:
            for _ in range(n):
                nursery.start_soon(definition.execute, {}, None)

    return await timed(run, n, repeat, time.process_time)


async def _noop(args: Any, ctx: Any) -> str:
    return "ok"


async def main(n: int, repeat: int, serve_only: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        server_py = Path(tmp, "sdk_server.py")
        server_py.write_text(SDK_SERVER)
        tools_py = Path(tmp, "bench_tools.py")
        tools_py.write_text(TOOLS)
        rows = {
            "sdk in-process": await bench_client(sdk_server(), "legacy", n, repeat),
            "served in-process": await bench_client(
                mcp_server(noop_registry()), "legacy", n, repeat
            ),
            "sdk in-process 2026": await bench_client(sdk_server(), "2026-07-28", n, repeat),
            "served in-process 2026": await bench_client(
                mcp_server(noop_registry()), "2026-07-28", n, repeat
            ),
            "sdk stdio": await bench_stdio([str(server_py)], n, repeat),
            "serve stdio": await bench_stdio(
                ["-m", "toolnursery", "serve", "--tools", f"{tools_py}:make"], n, repeat
            ),
            "bare nursery": await bench_bare_nursery(n, repeat),
        }
        if not serve_only:
            rows["mounted in-process"] = await bench_mounted_in_process(n, repeat)
    print(f"N = {n} sequential calls on one session, median of {repeat} runs")
    for name, us in rows.items():
        print(f"  {name:<24} {us:9.1f} µs/call")
    ratios = [
        ("served / sdk in-process", "served in-process", "sdk in-process"),
        ("served / sdk in-process 2026", "served in-process 2026", "sdk in-process 2026"),
        ("serve / sdk over stdio", "serve stdio", "sdk stdio"),
        ("mounted / sdk in-process", "mounted in-process", "sdk in-process"),
    ]
    for label, numerator, denominator in ratios:
        if numerator in rows:
            print(f"  {label:<30} {rows[numerator] / rows[denominator]:.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls and runs")
    parser.add_argument("--serve", action="store_true", help="the serve rows only")
    options = parser.parse_args()
    n, repeat = (100, 3) if options.quick else (500, 7)
    trio.run(main, n, repeat, options.serve)
