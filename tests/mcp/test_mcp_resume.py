"""Resuming a dropped SSE stream over real HTTP on 127.0.0.1: a session gets back
its own stream's events, and never another session's.

Every wait is bounded by ``trio.fail_after``; nothing sleeps to synchronise.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio

pytest.importorskip("mcp")

import httpx2

from mcp_sessions import call_and_drop, open_session
from toolnursery import ToolRegistry, define_tool
from toolnursery.mcp import serve_mcp_http

pytestmark = [
    pytest.mark.filterwarnings("ignore:Async generator 'http:ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

LIMIT = 30


async def test_a_resumed_stream_never_carries_another_sessions_events() -> None:
    registry = ToolRegistry()
    gates = {"alice": trio.Event(), "bob": trio.Event()}
    done = {"alice": trio.Event(), "bob": trio.Event()}

    async def whisper(args: Any, ctx: Any) -> str:
        word = args["word"]
        await gates[word].wait()
        ctx.report_progress(1, 2, message=f"progress-{word}")
        ctx.log("info", f"log-{word}")
        return f"secret-{word}"

    registry.register(
        define_tool(
            name="whisper",
            description="d",
            parameters={"word": {"type": "string"}},
            execute=whisper,
        )
    )
    registry.on_result(lambda execution, result: done[execution.arguments["word"]].set())
    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            url = await nursery.start(serve_mcp_http, registry, "127.0.0.1", 0)
            async with httpx2.AsyncClient() as http:
                alice = await open_session(http, url, "alice")
                bob = await open_session(http, url, "bob")
                alice_event = await call_and_drop(http, url, alice, "alice")
                bob_event = await call_and_drop(http, url, bob, "bob")
                # Bob's events are stored between Alice's priming event and her result.
                gates["bob"].set()
                await done["bob"].wait()
                gates["alice"].set()
                await done["alice"].wait()
                replays: dict[str, bytes] = {}
                for word, session, event_id in (
                    ("alice", alice, alice_event),
                    ("bob", bob, bob_event),
                ):
                    replayed = b""
                    async with http.stream(
                        "GET", url, headers={**session, "Last-Event-ID": event_id}
                    ) as stream:
                        async for chunk in stream.aiter_bytes():
                            replayed += chunk
                            if f"secret-{word}".encode() in replayed:
                                break
                    replays[word] = replayed
            nursery.cancel_scope.cancel()
    for word, other in (("alice", "bob"), ("bob", "alice")):
        replayed = replays[word]
        assert f"secret-{word}".encode() in replayed
        assert b'"id":2' in replayed
        for leaked in (f"secret-{other}", f"progress-{other}", f"log-{other}"):
            assert leaked.encode() not in replayed


async def test_a_body_closes_its_stream_mid_call_and_the_result_follows_on_resumption() -> None:
    """SEP-1699 polling, as the conformance suite's ``server-sse-polling`` does it."""
    import mcp_conformance_tools
    from toolnursery.mcp import close_sse_stream

    registry = mcp_conformance_tools.make()
    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            url = await nursery.start(serve_mcp_http, registry, "127.0.0.1", 0)
            async with httpx2.AsyncClient() as http:
                session = await open_session(http, url, "poller")
                call = {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "tools/call",
                    "params": {"name": "test_reconnection", "arguments": {}},
                }
                posted = b""
                async with http.stream("POST", url, headers=session, json=call) as stream:
                    async for chunk in stream.aiter_bytes():  # to its end: the body closes it
                        posted += chunk
                event_id = [
                    line.removeprefix("id:").strip()
                    for line in posted.decode().splitlines()
                    if line.startswith("id:")
                ][-1]
                replayed = b""
                async with http.stream(
                    "GET", url, headers={**session, "Last-Event-ID": event_id}
                ) as stream:
                    async for chunk in stream.aiter_bytes():
                        replayed += chunk
                        if b"Reconnection test completed" in replayed:
                            break
            nursery.cancel_scope.cancel()
    assert b"retry:" in posted  # the priming event tells the client when to come back
    assert b'"result"' not in posted  # closed before the result
    assert b'"id":1' in replayed
    assert b"the stream was closed mid-call and resumed" in replayed
    assert await close_sse_stream() is False  # outside a served call: nothing to close
