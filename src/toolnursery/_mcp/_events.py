"""Resumable HTTP streams: the SDK's event store, in memory and bounded.

With an event store, the SDK's streamable-HTTP transport numbers every message it
sends on an SSE stream (and primes each stream with an event the client can resume
from); a client whose stream drops reconnects with ``Last-Event-ID`` and gets what
it missed, the result included. Events are kept in arrival order, at most
``max_events`` of them (the oldest are forgotten first).

One store serves every session of a server, but each session sees only its own
events: the SDK names a POST stream by its JSON-RPC request id, which two sessions
may share, so every session writes and replays through its own view
(:meth:`MemoryEventStore.for_session`), and an event is replayed only to the view
that stored it. Event ids carry 128 random bits besides: an id of another
session's is neither guessable nor of any use.
"""

from __future__ import annotations

import itertools
import secrets
from collections import OrderedDict

from mcp.server.streamable_http import EventCallback, EventMessage, EventStore
from mcp.types import JSONRPCMessage

__all__ = ["MemoryEventStore"]


class MemoryEventStore(EventStore):
    """The events of a server's SSE streams, the latest ``max_events`` of them.

    Used directly, it is one owner's store; :meth:`for_session` gives each session
    its own view of the same bounded memory.
    """

    def __init__(self, max_events: int = 10_000) -> None:
        if max_events < 1:
            raise ValueError(f"MemoryEventStore(): max_events must be >= 1, got {max_events!r}")
        self._max = max_events
        self._count = itertools.count()
        # event id -> (owner, stream id, message)
        self._events: OrderedDict[str, tuple[object, str, JSONRPCMessage | None]] = OrderedDict()
        self._owner = object()

    def for_session(self) -> EventStore:
        """A view of this store for one session: it replays only what it stored."""
        return _SessionEvents(self, object())

    async def store_event(self, stream_id: str, message: JSONRPCMessage | None) -> str:
        return self.store(self._owner, stream_id, message)

    async def replay_events_after(
        self, last_event_id: str, send_callback: EventCallback
    ) -> str | None:
        return await self.replay(self._owner, last_event_id, send_callback)

    def store(self, owner: object, stream_id: str, message: JSONRPCMessage | None) -> str:
        """Keep ``message`` as ``owner``'s on ``stream_id``; its new event id."""
        event_id = f"{next(self._count)}-{secrets.token_hex(16)}"
        self._events[event_id] = (owner, stream_id, message)
        if len(self._events) > self._max:
            self._events.popitem(last=False)
        return event_id

    async def replay(
        self, owner: object, last_event_id: str, send_callback: EventCallback
    ) -> str | None:
        """Send ``owner``'s events after ``last_event_id`` on its stream; the stream id.

        ``None`` (nothing sent) when the id is unknown, forgotten, or another owner's.
        """
        entry = self._events.get(last_event_id)
        if entry is None or entry[0] is not owner:
            return None
        stream_id = entry[1]
        after = False
        for event_id, (who, stream, message) in list(self._events.items()):
            if after and who is owner and stream == stream_id and message is not None:
                await send_callback(EventMessage(message, event_id))
            elif event_id == last_event_id:
                after = True
        return stream_id


class _SessionEvents(EventStore):
    """One session's view of a :class:`MemoryEventStore`."""

    def __init__(self, store: MemoryEventStore, owner: object) -> None:
        self._store = store
        self._owner = owner

    async def store_event(self, stream_id: str, message: JSONRPCMessage | None) -> str:
        return self._store.store(self._owner, stream_id, message)

    async def replay_events_after(
        self, last_event_id: str, send_callback: EventCallback
    ) -> str | None:
        return await self._store.replay(self._owner, last_event_id, send_callback)
