"""One ledger, calls in several threads at once (smolagents runs a step's calls so; any
host may): every answer is the one a single thread would get."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from typing import Annotated

import pytest
import trio

from toolnursery import (
    Sink,
    ToolCall,
    ToolRegistry,
    install_provenance_guard,
    run_tool_calls,
    tool,
)


@tool(records=("[].email",), is_concurrency_safe=lambda a: True)
def contacts(n: int) -> list[dict[str, str]]:
    """An address book of its own per read."""
    return [{"email": f"p{i}.{n}@corp.example"} for i in range(30)]


@tool
def send(to: Annotated[str, Sink.PARTY], body: Annotated[str, Sink.CONTENT]) -> str:
    """Send a message."""
    return "sent"


@pytest.fixture
def switch_often() -> Iterator[None]:
    # threads switch every microsecond: a ledger that is not one-at-a-time shows it
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


@pytest.mark.timeout(120)
@pytest.mark.usefixtures("switch_often")
def test_calls_in_threads_get_the_answers_one_thread_would() -> None:
    registry = ToolRegistry()
    registry.register(contacts)
    registry.register(send)
    scope = registry.scope()
    install_provenance_guard(scope, request="Tell people.", unattended=True)
    failed: list[str] = []

    def agent(k: int) -> None:
        async def turns() -> None:
            for j in range(60):
                n = k * 1000 + j
                read = [ToolCall(f"r{n}", "contacts", {"n": n})]
                await run_tool_calls(registry, read, agent=scope)
                body = f"see p4.{n}@corp.example"
                call = ToolCall(f"s{n}", "send", {"to": f"p3.{n}@corp.example", "body": body})
                (result,) = await run_tool_calls(registry, [call], agent=scope)
                if result.is_error:
                    failed.append(result.text)

        trio.run(turns)

    threads = [threading.Thread(target=agent, args=(k,)) for k in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # every recipient and address is a record its own thread read a turn earlier
    assert failed == []
    assert scope.provenance.results == 6 * 60 * 2
