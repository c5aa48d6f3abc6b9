"""MCP both ways (private; behind :mod:`toolnursery.mcp`; the SDK is imported only here)."""

__all__: list[str] = []
