"""Tools served to fastmcp's client (tests/mcp/test_mcp_fastmcp.py), fastmcp-style bodies."""

from __future__ import annotations

from toolnursery import McpAnnotations, ToolRegistry, ToolRunContext, tool


@tool(is_concurrency_safe=lambda args: True)
def greet(name: str) -> str:
    """Greet someone."""
    return f"hello {name}"


@tool
def count() -> int:
    """Count nothing."""
    return 0


@tool
def shape() -> dict[str, list[int]]:
    """A small object."""
    return {"sides": [3, 4]}


@tool
def digits() -> str:
    """Text that reads as a JSON number: still text for the client."""
    return "42"


@tool(mcp_annotations=McpAnnotations(title="Slow work", destructive=False))
async def work(ctx: ToolRunContext) -> str:
    """Work, reporting progress as fastmcp code does (awaited) and as ours does."""
    await ctx.report_progress(1, 3, "awaited")
    ctx.report_progress(2, 3, "called")
    await ctx.log("info", "halfway")
    return "done"


@tool(
    is_concurrency_safe=lambda args: True,
    mcp_annotations=McpAnnotations(read_only=False),
)
def poke() -> str:
    """Parallel-safe, yet says it is not read-only: its own hint wins."""
    return "poked"


registry = ToolRegistry()
for definition in (greet, count, shape, digits, work, poke):
    registry.register(definition)
