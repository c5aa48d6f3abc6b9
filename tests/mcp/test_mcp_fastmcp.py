"""fastmcp 4 beside toolnursery: its servers mount in process, its client reads our tools.

fastmcp's habits hold across the boundary: ``open_mcp_mount(server=FastMCP(...))``, a
body's ``await ctx.report_progress(...)``, a served ``str`` tool's text as the fastmcp
client's ``r.data``, parallel-safe tools listed with ``readOnlyHint``.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

pytest.importorskip("fastmcp")

from fastmcp import Client, Context, FastMCP
from fastmcp.client.transports import StdioTransport

from toolnursery import (
    McpMountError,
    ToolCall,
    ToolRegistry,
    ToolRunContext,
    reporting,
    run_tool_calls,
    tool,
)
from toolnursery.mcp import open_mcp_mount

LIMIT = 30
TOOLS = str(Path(__file__).parents[1] / "mcp_fastmcp_client_tools.py") + ":registry"


def third_party() -> FastMCP:
    app = FastMCP("third-party")

    @app.tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @app.tool
    async def halves(ctx: Context) -> str:
        """Report progress, fastmcp-style."""
        await ctx.report_progress(1, 2, "half")
        return "whole"

    @app.tool(annotations={"readOnlyHint": True})
    def peek() -> str:
        """Read only."""
        return "seen"

    return app


async def test_a_fastmcp_server_mounts_in_process() -> None:
    registry = ToolRegistry()
    app = third_party()
    with trio.fail_after(LIMIT):
        async with open_mcp_mount(registry, server=app) as mount:
            assert mount.names == ("add", "halves", "peek")
            added, halves, peek = await run_tool_calls(
                registry,
                [
                    ToolCall("1", "add", {"a": 1, "b": 2}),
                    ToolCall("2", "halves", {}),
                    ToolCall("3", "peek", {}),
                ],
            )
    assert (added.text, halves.text, peek.text) == ("3", "whole", "seen")
    # fastmcp lists an output schema for `-> int`: the value it declares is kept
    assert added.structured_content == {"result": 3}
    assert registry.get("add") is None  # the mount's tools left with it


async def test_a_fastmcp_servers_read_only_hint_makes_its_tool_parallel_safe() -> None:
    registry = ToolRegistry()
    with trio.fail_after(LIMIT):
        async with open_mcp_mount(registry, server=third_party()):
            peek = registry.get("peek")
            add = registry.get("add")
            assert peek is not None
            assert add is not None
            assert peek.is_concurrency_safe is not None
            assert peek.is_concurrency_safe({}) is True
            assert add.is_concurrency_safe is None


async def test_something_else_is_still_refused_in_one_line() -> None:
    with pytest.raises(McpMountError, match="could not connect"):
        async with open_mcp_mount(ToolRegistry(), server=object()):
            pass  # pragma: no cover


async def test_awaiting_report_progress_works_and_so_does_calling_it() -> None:
    @tool
    async def work(ctx: ToolRunContext) -> str:
        """Work."""
        await ctx.report_progress(1, 2, "awaited")
        ctx.report_progress(2, 2)
        await ctx.log("info", "logged")
        return "done"

    @tool
    def sync_work(ctx: ToolRunContext) -> str:
        """Sync work: the plain call."""
        ctx.report_progress(1)
        return "done"

    registry = ToolRegistry()
    registry.register(work)
    registry.register(sync_work)
    seen: list[Any] = []
    with reporting(seen.append):
        results = await run_tool_calls(
            registry, [ToolCall("a", "work", {}), ToolCall("b", "sync_work", {})]
        )
    assert [r.text for r in results] == ["done", "done"]
    assert [(type(r).__name__, r.call_id) for r in seen] == [
        ("ProgressReport", "a"),
        ("ProgressReport", "a"),
        ("LogReport", "a"),
        ("ProgressReport", "b"),
    ]


def _client() -> Client[Any]:
    transport = StdioTransport(
        command=sys.executable,
        args=["-m", "toolnursery", "serve", "--tools", TOOLS],
        env=dict(os.environ),
    )
    return Client(transport)


def test_fastmcp_s_client_reads_our_served_tools_the_fastmcp_way() -> None:
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    async def main() -> dict[str, Any]:
        async with asyncio.timeout(LIMIT), _client() as client:
            tools = {t.name: t for t in await client.list_tools()}
            data = {}
            for name, args in (
                ("greet", {"name": "Ann"}),
                ("count", {}),
                ("shape", {}),
                ("digits", {}),
            ):
                data[name] = (await client.call_tool(name, args)).data
            work = await client.call_tool("work", {}, progress_handler=on_progress)
            data["work"] = work.data
            data["hints"] = {
                name: (t.annotations.read_only_hint if t.annotations else None, t.title)
                for name, t in tools.items()
            }
            return data

    data = asyncio.run(main())
    assert data["greet"] == "hello Ann"  # a str tool's text, as fastmcp's own give it
    assert data["count"] == 0  # and a number stays a number
    assert data["shape"] == {"sides": [3, 4]}
    assert data["digits"] == "42"  # text that reads as JSON stays the text the body returned
    assert data["work"] == "done"
    assert progress == [(1, 3, "awaited"), (2, 3, "called")]
    assert data["hints"] == {
        "greet": (True, None),  # parallel-safe: readOnlyHint
        "count": (None, None),
        "shape": (None, None),
        "digits": (None, None),
        "work": (None, "Slow work"),  # declared hints pass through
        "poke": (False, None),  # its own hint wins
    }
