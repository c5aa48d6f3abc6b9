"""DNS rebinding protection of ``serve_mcp_http`` bound to loopback, over real HTTP.

The conformance scenario ``dns-rebinding-protection`` sends an ``initialize`` with
``Host: evil.example.com`` and ``Origin: http://evil.example.com`` and expects a 4xx;
these tests send the same requests, header by header, to a server on 127.0.0.1.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio

pytest.importorskip("mcp")

import httpx2

import mcp_conformance_tools
from toolnursery.mcp import serve_mcp_http

pytestmark = [
    pytest.mark.filterwarnings("ignore:Async generator 'http:ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

LIMIT = 30
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "rebinding-test", "version": "1"},
    },
}


async def initialize_with(headers: dict[str, str]) -> list[int]:
    """The status of an ``initialize`` POST for each header set, to one server."""
    statuses: list[int] = []
    registry = mcp_conformance_tools.make()
    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            url: str = await nursery.start(serve_mcp_http, registry, "127.0.0.1", 0)
            port = url.split(":")[2].split("/")[0]
            async with httpx2.AsyncClient() as client:
                for name, value in headers.items():
                    sent: dict[str, Any] = {"Accept": "application/json, text/event-stream"}
                    sent[name] = value.replace("PORT", port)
                    response = await client.post(url, json=INITIALIZE, headers=sent)
                    statuses.append(response.status_code)
            nursery.cancel_scope.cancel()
    return statuses


async def test_a_foreign_host_or_origin_is_refused_on_loopback() -> None:
    """A Host that is not a loopback name gets 421; a foreign Origin gets 403."""
    assert await initialize_with(
        {"Host": "evil.example.com", "Origin": "http://evil.example.com"}
    ) == [421, 403]


async def test_loopback_names_are_accepted_on_loopback() -> None:
    """127.0.0.1, localhost and [::1], with the port, as Host and as Origin."""
    statuses = await initialize_with(
        {"Host": "localhost:PORT", "Origin": "http://127.0.0.1:PORT", "host": "[::1]:PORT"}
    )
    assert statuses == [200, 200, 200]
