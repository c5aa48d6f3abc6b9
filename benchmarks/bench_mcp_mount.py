"""Per-call cost of a mounted MCP tool, beside the MCP SDK's own client in the same run.

What it measures (µs per call; the fastest of ``--repeat`` timed runs of N calls, one
after another on one connection — on a shared machine the fastest run is the least
disturbed one, as with ``timeit``; every run in this process on trio):

* **sdk client in-process**: ``mcp.Client(server).call_tool`` against an SDK
  low-level server in this process — the floor for a mounted in-process server.
* **mounted in-process**: ``registry.execute`` of the same tool mounted with
  ``open_mcp_mount(server=...)`` — the pipeline plus the mount on top of the floor.
* **body**: the mounted definition's ``execute`` called directly (the mount without
  the pipeline), to tell the mount's share from the pipeline's.
* **sdk client stdio** / **mounted stdio**: the same two against the server in a
  subprocess over stdio.

In-process rows count this process's CPU time (client and server both run here, so
other processes' load does not enter); stdio rows count wall time.

The runs of a pair alternate (sdk, mounted, sdk, ...), so a busy machine slows both
alike. Ratios: mounted / sdk client, per transport (target: at most 1.2x).

Run: ``python benchmarks/bench_mcp_mount.py`` (``--quick`` for fewer calls).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import trio
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from toolnursery import ToolExecutionInput, ToolRegistry
from toolnursery.mcp import open_mcp_mount

SERVER = """
from typing import Any

import mcp.types as types
import trio
from mcp.server import Server, ServerRequestContext


def sdk_server() -> Server[Any]:
    \"\"\"An SDK low-level server with one tool, ``noop``, that answers ``ok``.\"\"\"

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(name="noop", input_schema={"type": "object"})])

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text="ok")])

    return Server("bench", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    from mcp.server.stdio import stdio_server

    server = sdk_server()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    trio.run(main)
"""
"""The server, as a program (over stdio) and, executed here, in-process."""

Call = Callable[[], Awaitable[object]]


def sdk_server() -> Any:
    """A fresh in-process copy of :data:`SERVER`'s server."""
    namespace: dict[str, Any] = {}
    exec(compile(SERVER, "<bench server>", "exec"), namespace)
    return namespace["sdk_server"]()


@asynccontextmanager
async def sdk_client(target: Any) -> AsyncIterator[Call]:
    async with Client(target) as client:
        yield lambda: client.call_tool("noop", {})


@asynccontextmanager
async def mounted(*, body_only: bool = False, **source: Any) -> AsyncIterator[Call]:
    registry = ToolRegistry()
    async with open_mcp_mount(registry, **source):
        execution = ToolExecutionInput("c", "noop", {})
        definition = registry.get("noop")
        assert definition is not None

        async def call() -> object:
            result = await registry.execute(execution)
            assert not result.is_error, result
            return result

        async def body() -> object:
            return await definition.execute({}, None)  # type: ignore[arg-type]

        yield body if body_only else call


async def run_n(call: Call, n: int, clock: Callable[[], float] = time.perf_counter) -> float:
    start = clock()
    for _ in range(n):
        await call()
    return (clock() - start) / n * 1e6


async def pair(
    sdk: AbstractAsyncContextManager[Call],
    mine: AbstractAsyncContextManager[Call],
    n: int,
    repeat: int,
    clock: Callable[[], float],
) -> tuple[float, float]:
    async with sdk as sdk_call, mine as mount_call:
        await run_n(sdk_call, n, clock)  # warm-up
        await run_n(mount_call, n, clock)
        sdk_samples, mount_samples = [], []
        for _ in range(repeat):
            sdk_samples.append(await run_n(sdk_call, n, clock))
            mount_samples.append(await run_n(mount_call, n, clock))
    return min(sdk_samples), min(mount_samples)


async def main(n: int, repeat: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        server_py = Path(tmp, "server.py")
        server_py.write_text(SERVER)
        command = [sys.executable, str(server_py)]
        params = StdioServerParameters(command=command[0], args=command[1:])
        rows = {
            "in-process": await pair(
                sdk_client(sdk_server()),
                mounted(server=sdk_server()),
                n,
                repeat,
                time.process_time,
            ),
            "in-process body": await pair(
                sdk_client(sdk_server()),
                mounted(server=sdk_server(), body_only=True),
                n,
                repeat,
                time.process_time,
            ),
            "stdio": await pair(
                sdk_client(params), mounted(command=command), n, repeat, time.perf_counter
            ),
        }
    print(f"N = {n} sequential calls on one connection, fastest of {repeat} runs")
    print(f"  {'row':<16} {'sdk client':>12} {'mounted':>12} {'ratio':>7}")
    for name, (sdk, mine) in rows.items():
        print(f"  {name:<16} {sdk:9.1f} µs {mine:9.1f} µs {mine / sdk:6.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls and runs")
    options = parser.parse_args()
    trio.run(main, 100 if options.quick else 200, 5 if options.quick else 25)
