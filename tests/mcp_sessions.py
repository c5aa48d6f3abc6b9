"""Raw streamable-HTTP requests for the MCP tests that drive a session by hand (open
it, call a tool and drop the stream at its priming event), on either loop."""

from __future__ import annotations

import httpx2

ACCEPT = {"Accept": "application/json, text/event-stream"}


async def open_session(http: httpx2.AsyncClient, url: str, name: str) -> dict[str, str]:
    opened = await http.post(
        url,
        headers=ACCEPT,
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": name, "version": "1"},
            },
        },
    )
    session = {
        **ACCEPT,
        "Mcp-Session-Id": opened.headers["mcp-session-id"],
        "MCP-Protocol-Version": "2025-11-25",
    }
    await http.post(
        url, headers=session, json={"jsonrpc": "2.0", "method": "notifications/initialized"}
    )
    return session


async def call_and_drop(
    http: httpx2.AsyncClient, url: str, session: dict[str, str], word: str
) -> str:
    """POST ``whisper`` as request id 2, read the priming event, drop the stream;
    the priming event's id."""
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "whisper", "arguments": {"word": word}, "_meta": {"progressToken": 7}},
    }
    first = b""
    async with http.stream("POST", url, headers=session, json=call) as stream:
        async for chunk in stream.aiter_bytes():
            first += chunk
            if b"\n\n" in first.replace(b"\r\n", b"\n"):
                break  # the priming event: then the stream drops
    return next(
        line.removeprefix("id:").strip()
        for line in first.decode().splitlines()
        if line.startswith("id:")
    )
