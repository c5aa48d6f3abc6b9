"""The in-memory event store behind resumable HTTP streams."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("mcp")

import mcp.types as types
from mcp.server.streamable_http import EventStore

from toolnursery._mcp._events import MemoryEventStore


def message(n: int) -> Any:
    return types.JSONRPCNotification(jsonrpc="2.0", method=f"m{n}")


async def replayed(store: EventStore, after: str) -> tuple[str | None, list[str]]:
    seen: list[str] = []

    async def send(event: Any) -> None:
        seen.append(event.message.method)

    return await store.replay_events_after(after, send), seen


async def test_replay_gives_the_streams_later_events_in_order() -> None:
    store = MemoryEventStore()
    prime = await store.store_event("a", None)
    await store.store_event("a", message(1))
    await store.store_event("b", message(2))
    await store.store_event("a", message(3))
    assert await replayed(store, prime) == ("a", ["m1", "m3"])


async def test_the_oldest_events_are_forgotten_first() -> None:
    store = MemoryEventStore(max_events=2)
    first = await store.store_event("a", None)
    second = await store.store_event("a", message(1))
    await store.store_event("a", message(2))
    assert await replayed(store, first) == (None, [])
    assert await replayed(store, second) == ("a", ["m2"])


async def test_event_ids_are_not_guessable() -> None:
    store = MemoryEventStore()
    ids = [await store.store_event("a", None) for _ in range(3)]
    assert len(set(ids)) == 3
    assert all(len(event_id.partition("-")[2]) == 32 for event_id in ids)
    assert await replayed(store, "0") == (None, [])


def test_a_store_needs_room_for_an_event() -> None:
    with pytest.raises(ValueError, match="max_events must be >= 1"):
        MemoryEventStore(max_events=0)


async def test_a_sessions_view_replays_only_its_own_events() -> None:
    store = MemoryEventStore(max_events=5)
    alice, bob = store.for_session(), store.for_session()
    prime_a = await alice.store_event("2", None)
    prime_b = await bob.store_event("2", None)
    await bob.store_event("2", message(1))
    await alice.store_event("2", message(2))
    assert await replayed(alice, prime_a) == ("2", ["m2"])
    assert await replayed(bob, prime_b) == ("2", ["m1"])
    # another session's event id is unknown to a view, as is the bare store's
    assert await replayed(bob, prime_a) == (None, [])
    assert await replayed(store, prime_a) == (None, [])
    # the views share one bound
    for n in range(5):
        await bob.store_event("2", message(n))
    assert await replayed(alice, prime_a) == (None, [])
