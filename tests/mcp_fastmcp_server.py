"""A server written with fastmcp (a third-party MCP framework), for the mount tests.

Run as ``python mcp_fastmcp_server.py`` to serve over stdio.
"""

from __future__ import annotations

import anyio
from fastmcp import FastMCP

app = FastMCP("third-party")


@app.tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@app.tool
async def block() -> str:
    """Run until cancelled."""
    await anyio.sleep_forever()
    return "never"


if __name__ == "__main__":
    app.run(show_banner=False)
