"""Per-call cost of MCP both ways, beside calling the MCP SDK directly, on trio and
on asyncio.

What it measures (µs per call; N calls one after another on one session, repeated).
In-process rows are this process's CPU time (steady on a busy machine: nothing else
runs in it); stdio rows are wall-clock time (the server is another process):

* **sdk in-process**: the SDK's ``Client.call_tool`` against an SDK low-level server
  over in-memory streams (the 2025-11-25 handshake) — the floor for a mounted
  in-process server, and for a served one.
* **served in-process**: the same client against ``mcp_server(registry)`` (a no-op
  tool through the whole pipeline).
* **sdk / served in-process 2026**: the same two at 2026-07-28 (the SDK's direct,
  stateless in-process dispatch).
* the same four **(asyncio)**, under ``anyio.run(..., backend="asyncio")``: the served
  calls run on toolnursery's native asyncio driver (the no-op is an ``asyncio_tool``
  body); **served in-process 2026, trio body (asyncio)** serves an undeclared
  ``async def`` no-op instead, which runs in the trio guest run.
* **mounted in-process**: ``registry.execute`` of the same server's tool mounted with
  ``open_mcp_mount(server=...)`` — the pipeline plus the mount on top of the floor.
* **sdk stdio**: ``call_tool`` against an SDK server in a subprocess over stdio.
* **serve stdio**: ``call_tool`` against ``toolnursery serve`` (a no-op tool through
  the whole pipeline) in a subprocess over stdio.
* **bare nursery**: the same no-op body run in a trio nursery (the house baseline;
  MCP's IPC dwarfs it, it is here for scale).

The in-process rows of one loop are interleaved: every client is open at once, and
each round times N calls on each, in an order that alternates round by round; a row
is the median of its rounds. Ratios: served / sdk in-process (each revision, each
loop), serve stdio / sdk stdio, mounted / sdk in-process.

Run: ``python benchmarks/bench_mcp.py`` (``--quick`` for fewer calls; ``--serve`` for
the serve rows only; ``--in-process`` for the in-process rows only, both loops).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import trio
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.server.lowlevel import Server

from toolnursery import ToolDefinition, ToolExecutionInput, ToolRegistry, aio
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


def noop_registry(body: Any = None) -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(ToolDefinition("noop", "does nothing", {"type": "object"}, body or _noop))
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


async def interleaved(servers: dict[str, tuple[Any, str]], n: int, repeat: int) -> dict[str, float]:
    """µs per call of each ``name: (server, mode)``: every client open at once, each
    round timing ``n`` calls on each, in an order that alternates; medians."""
    samples: dict[str, list[float]] = {name: [] for name in servers}
    async with contextlib.AsyncExitStack() as stack:
        clients = {
            name: await stack.enter_async_context(Client(server, mode=mode))
            for name, (server, mode) in servers.items()
        }
        for client in clients.values():  # warm-up
            for _ in range(n):
                await client.call_tool("noop", {})
        names = list(clients)
        for round_ in range(repeat):
            for name in names if round_ % 2 == 0 else names[::-1]:
                client = clients[name]
                start = time.process_time()
                for _ in range(n):
                    await client.call_tool("noop", {})
                samples[name].append((time.process_time() - start) / n * 1e6)
    return {name: statistics.median(values) for name, values in samples.items()}


async def in_process_rows(n: int, repeat: int, on_asyncio: bool) -> dict[str, float]:
    """The in-process rows on the running loop (named ``… (asyncio)`` on asyncio)."""
    body = _asyncio_noop if on_asyncio else _noop
    servers: dict[str, tuple[Any, str]] = {
        "sdk in-process": (sdk_server(), "legacy"),
        "served in-process": (mcp_server(noop_registry(body)), "legacy"),
        "sdk in-process 2026": (sdk_server(), "2026-07-28"),
        "served in-process 2026": (mcp_server(noop_registry(body)), "2026-07-28"),
    }
    if on_asyncio:
        servers["served in-process 2026, trio body"] = (
            mcp_server(noop_registry(_noop)),
            "2026-07-28",
        )
    rows = await interleaved(servers, n, repeat)
    if on_asyncio:
        await aio.aclose()  # the trio guest run the trio body started
        return {f"{name} (asyncio)": us for name, us in rows.items()}
    return rows


async def _noop(args: Any, ctx: Any) -> str:
    return "ok"


@aio.asyncio_tool
async def _asyncio_noop(args: Any, ctx: Any) -> str:
    return "ok"


async def main(n: int, repeat: int, serve_only: bool, in_process_only: bool) -> dict[str, float]:
    rows = await in_process_rows(n, repeat, on_asyncio=False)
    if in_process_only:
        return rows
    with tempfile.TemporaryDirectory() as tmp:
        server_py = Path(tmp, "sdk_server.py")
        server_py.write_text(SDK_SERVER)
        tools_py = Path(tmp, "bench_tools.py")
        tools_py.write_text(TOOLS)
        rows["sdk stdio"] = await bench_stdio([str(server_py)], n, repeat)
        rows["serve stdio"] = await bench_stdio(
            ["-m", "toolnursery", "serve", "--tools", f"{tools_py}:make"], n, repeat
        )
        rows["bare nursery"] = await bench_bare_nursery(n, repeat)
        if not serve_only:
            rows["mounted in-process"] = await bench_mounted_in_process(n, repeat)
    return rows


RATIOS = [
    ("served / sdk in-process", "served in-process", "sdk in-process"),
    ("served / sdk in-process 2026", "served in-process 2026", "sdk in-process 2026"),
    ("served / sdk (asyncio)", "served in-process (asyncio)", "sdk in-process (asyncio)"),
    (
        "served / sdk 2026 (asyncio)",
        "served in-process 2026 (asyncio)",
        "sdk in-process 2026 (asyncio)",
    ),
    (
        "served, trio body / sdk 2026 (asyncio)",
        "served in-process 2026, trio body (asyncio)",
        "sdk in-process 2026 (asyncio)",
    ),
    ("serve / sdk over stdio", "serve stdio", "sdk stdio"),
    ("mounted / sdk in-process", "mounted in-process", "sdk in-process"),
]


def report(rows: dict[str, float], n: int, repeat: int) -> None:
    print(f"N = {n} sequential calls on one session, median of {repeat} interleaved rounds")
    print("  load average:", " ".join(f"{x:.2f}" for x in os.getloadavg()))
    for name, us in rows.items():
        print(f"  {name:<45} {us:9.1f} µs/call")
    for label, numerator, denominator in RATIOS:
        if numerator in rows:
            print(f"  {label:<45} {rows[numerator] / rows[denominator]:9.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls and runs")
    parser.add_argument("--serve", action="store_true", help="the serve rows only")
    parser.add_argument(
        "--in-process", action="store_true", help="the in-process rows only (both loops)"
    )
    options = parser.parse_args()
    n, repeat = (100, 3) if options.quick else (500, 7)
    found = trio.run(main, n, repeat, options.serve, options.in_process)
    found.update(anyio.run(in_process_rows, n, repeat, True, backend="asyncio"))
    report(found, n, repeat)
