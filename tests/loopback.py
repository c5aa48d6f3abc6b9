"""A scripted model on 127.0.0.1: an ASGI app served by hypercorn on trio.

It speaks the streaming wire formats of OpenAI Chat Completions
(``POST /v1/chat/completions``), OpenAI Responses (``POST /v1/responses``) and
Anthropic Messages (``POST /v1/messages``) as server-sent events. Each request takes
the next scripted reply for its route (a script of :mod:`provider_events`) and is
kept, decoded, in :attr:`ScriptedModel.requests`, so a test can check what the SDK
client sent back (the tool results).
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import trio
from hypercorn.config import Config
from hypercorn.trio import serve

from provider_events import BUILDERS, Step

ROUTES = {"/v1/chat/completions": "chat", "/v1/responses": "responses", "/v1/messages": "anthropic"}


class Reply:
    """One scripted reply: the steps, and where (if anywhere) to break the connection."""

    def __init__(self, steps: Sequence[Step], *, break_after: int | None = None) -> None:
        self.steps = list(steps)
        self.break_after = break_after


class ScriptedModel:
    """The ASGI app. ``script(fmt, *replies)`` queues replies for one format."""

    def __init__(self) -> None:
        self.replies: dict[str, deque[Reply]] = {fmt: deque() for fmt in BUILDERS}
        self.requests: dict[str, list[dict[str, Any]]] = {fmt: [] for fmt in BUILDERS}

    def script(self, fmt: str, *replies: Reply | Sequence[Step]) -> None:
        for reply in replies:
            self.replies[fmt].append(reply if isinstance(reply, Reply) else Reply(reply))

    async def __call__(
        self, scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]
    ) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        fmt = ROUTES.get(scope["path"])
        if fmt is None or not self.replies[fmt]:
            await _respond(send, 404, b'{"error": {"message": "no scripted reply"}}')
            return
        self.requests[fmt].append(json.loads(body))
        reply = self.replies[fmt].popleft()
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"text/event-stream"),
                    (b"cache-control", b"no-cache"),
                ],
            }
        )
        events = BUILDERS[fmt](reply.steps)
        for number, event in enumerate(events):
            if reply.break_after is not None and number == reply.break_after:
                # Drop the connection mid-response, as a network failure would.
                raise ConnectionAbortedError("scripted break")
            if fmt == "chat":
                chunk = f"data: {json.dumps(event)}\n\n"
            else:
                chunk = f"event: {event['type']}\ndata: {json.dumps(event)}\n\n"
            await send({"type": "http.response.body", "body": chunk.encode(), "more_body": True})
        tail = b"data: [DONE]\n\n" if fmt == "chat" else b""
        await send({"type": "http.response.body", "body": tail, "more_body": False})


async def _respond(send: Callable[..., Any], status: int, body: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": body})


@asynccontextmanager
async def serve_model(model: ScriptedModel) -> AsyncIterator[str]:
    """Serve ``model`` on 127.0.0.1 (a free port); yields its base URL."""
    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.accesslog = None
    config.errorlog = None
    config.graceful_timeout = 0.5
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        binds = await nursery.start(partial(serve, model, config, shutdown_trigger=stop.wait))  # type: ignore[arg-type]
        try:
            yield binds[0]
        finally:
            stop.set()
