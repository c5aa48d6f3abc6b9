"""Resumable HTTP streams: the SDK's event store, in memory and bounded.

With an event store, the SDK's streamable-HTTP transport numbers every message it
sends on an SSE stream (and primes each stream with an event the client can resume
from); a client whose stream drops reconnects with ``Last-Event-ID`` and gets what
it missed, the result included. Events are kept in arrival order, at most
``max_events`` of them (the oldest are forgotten first). Event ids carry 128 random
bits: the store is shared by every session of a server, so an id must not be
guessable by another session.
"""

from __future__ import annotations

import itertools
import secrets
from collections import OrderedDict

from mcp.server.streamable_http import EventCallback, EventMessage, EventStore
from mcp.types import JSONRPCMessage

__all__ = ["MemoryEventStore"]


class MemoryEventStore(EventStore):
    """The events of a server's SSE streams, the latest ``max_events`` of them."""

    def __init__(self, max_events: int = 10_000) -> None:
        if max_events < 1:
            raise ValueError(f"MemoryEventStore(): max_events must be >= 1, got {max_events!r}")
        self._max = max_events
        self._count = itertools.count()
        self._events: OrderedDict[str, tuple[str, JSONRPCMessage | None]] = OrderedDict()

    async def store_event(self, stream_id: str, message: JSONRPCMessage | None) -> str:
        event_id = f"{next(self._count)}-{secrets.token_hex(16)}"
        self._events[event_id] = (stream_id, message)
        if len(self._events) > self._max:
            self._events.popitem(last=False)
        return event_id

    async def replay_events_after(
        self, last_event_id: str, send_callback: EventCallback
    ) -> str | None:
        entry = self._events.get(last_event_id)
        if entry is None:
            return None
        stream_id = entry[0]
        after = False
        for event_id, (stream, message) in list(self._events.items()):
            if after and stream == stream_id and message is not None:
                await send_callback(EventMessage(message, event_id))
            elif event_id == last_event_id:
                after = True
        return stream_id
