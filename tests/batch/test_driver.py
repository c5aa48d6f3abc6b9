"""The batch driver, :class:`ToolBatch`, through ``open_tool_batch``: submit, close,
iterate, statistics, duplicate ids and the batch id.

The scheduling rules themselves (groups, barriers, caps, aborts) are in
``test_scheduler.py``; this file is the driver's own contract, on trio's autojump clock.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
import trio
import trio.testing

from support import always, code, registry_with, text, tool
from toolnursery import (
    ToolCall,
    ToolExecutionResult,
    ToolRunContext,
    open_tool_batch,
)


def sleeper(log: list[str], name: str = "nap") -> Any:
    """A parallel tool that sleeps ``args["s"]`` (virtual) seconds and logs start and end."""

    async def body(args: Any, ctx: ToolRunContext) -> str:
        log.append(f"start {ctx.call_id}")
        await trio.sleep(args["s"])
        log.append(f"end {ctx.call_id}")
        return f"slept {ctx.call_id}"

    return tool(name, body, is_concurrency_safe=always)


def nap(call_id: str, seconds: float) -> ToolCall:
    return ToolCall(call_id, "nap", f'{{"s": {seconds}}}')


async def test_submit_returns_model_order_indices_and_pairs_come_in_that_order(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[str] = []
    registry = registry_with(sleeper(log))
    pairs: list[tuple[str, str]] = []
    async with open_tool_batch(registry) as batch:
        indices = [batch.submit(nap(f"c{i}", s)) for i, s in enumerate((3, 1, 2))]
        batch.close()
        async for call, result in batch:
            pairs.append((call.id, text(result)))
    assert indices == [0, 1, 2]
    # c1 ends first, but pairs come in model order.
    assert log.index("end c1") < log.index("end c0")
    assert pairs == [("c0", "slept c0"), ("c1", "slept c1"), ("c2", "slept c2")]


async def test_a_call_starts_while_submission_is_still_open(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[str] = []
    registry = registry_with(sleeper(log))
    async with open_tool_batch(registry) as batch:
        batch.submit(nap("c0", 5))
        await trio.testing.wait_all_tasks_blocked()
        assert log == ["start c0"]  # the model may still be streaming
        batch.submit(nap("c1", 1))
        await trio.testing.wait_all_tasks_blocked()
        assert log == ["start c0", "start c1"]
        batch.close()
    assert sorted(log) == ["end c0", "end c1", "start c0", "start c1"]


async def test_pairs_arrive_as_they_commit_while_calls_are_submitted(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[str] = []
    registry = registry_with(sleeper(log))
    seen: list[tuple[str, float]] = []
    async with open_tool_batch(registry) as batch:

        async def consume() -> None:
            async for call, _ in batch:
                seen.append((call.id, trio.current_time()))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(consume)
            begun = trio.current_time()
            batch.submit(nap("c0", 1))
            await trio.sleep(2)
            assert [call_id for call_id, _ in seen] == ["c0"]  # before any more submissions
            batch.submit(nap("c1", 1))
            batch.close()
    assert [(call_id, at - begun) for call_id, at in seen] == [("c0", 1), ("c1", 3)]


async def test_leaving_the_block_closes_submission_and_waits_for_every_call(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[str] = []
    registry = registry_with(sleeper(log))
    begun = trio.current_time()
    async with open_tool_batch(registry) as batch:
        batch.submit(nap("c0", 4))
        batch.submit(nap("c1", 2))
    assert trio.current_time() - begun == 4
    assert [text(r) for r in batch.results] == ["slept c0", "slept c1"]
    with pytest.raises(RuntimeError, match="this batch is closed"):
        batch.submit(nap("c2", 1))


async def test_submit_after_close_is_refused() -> None:
    registry = registry_with(tool("echo"))
    async with open_tool_batch(registry) as batch:
        batch.submit(ToolCall("c0", "echo", "{}"))
        batch.close()
        with pytest.raises(RuntimeError, match=r"submit\(\) takes calls only before close\(\)"):
            batch.submit(ToolCall("c1", "echo", "{}"))
    assert len(batch.results) == 1


@pytest.mark.parametrize("bad", [{"id": "c0", "name": "echo"}, ("c0", "echo", "{}"), None])
async def test_submit_takes_only_tool_calls(bad: Any) -> None:
    registry = registry_with(tool("echo"))
    async with open_tool_batch(registry) as batch:
        with pytest.raises(TypeError, match="a batch takes ToolCall values, not"):
            batch.submit(bad)
        batch.close()
    assert batch.results == []


async def test_a_repeated_call_id_gets_an_error_and_its_body_never_runs() -> None:
    ran: list[Any] = []

    async def body(args: Any, ctx: ToolRunContext) -> str:
        ran.append(args["n"])
        return f"ran {args['n']}"

    registry = registry_with(tool("echo", body))
    async with open_tool_batch(registry) as batch:
        for n in (1, 2, 3):
            batch.submit(ToolCall("same" if n != 2 else "other", "echo", f'{{"n": {n}}}'))
        batch.close()
        pairs = [(call.arguments, result) async for call, result in batch]
    assert ran == [1, 2]
    assert [text(result) for _, result in pairs] == [
        "ran 1",
        "ran 2",
        'Error: duplicate tool call id "same" in this batch',
    ]
    duplicate = pairs[2][1]
    assert duplicate.is_error
    assert duplicate.error is not None
    assert (duplicate.error.name, duplicate.error.code) == (
        "DuplicateCallIdError",
        "DUPLICATE_CALL_ID",
    )
    assert pairs[2][0] == '{"n": 3}'  # the pair carries the call as submitted
    stats = batch.statistics()
    assert (stats.started, stats.committed) == (3, 3)
    assert dict(stats.results_by_code) == {"ok": 2, "DUPLICATE_CALL_ID": 1}


async def test_arguments_that_cannot_be_arguments_get_an_error_without_running() -> None:
    ran: list[Any] = []

    async def body(args: Any, ctx: ToolRunContext) -> str:
        ran.append(args)
        return "ran"

    registry = registry_with(tool("echo", body))
    async with open_tool_batch(registry) as batch:
        batch.submit(ToolCall("c0", "echo", 42))  # type: ignore[arg-type]
        batch.submit(ToolCall("c1", "echo", "{}"))
    first, second = batch.results
    assert code(first) == "INVALID_ARGS"
    assert text(first).startswith("Error: invalid arguments")
    assert text(second) == "ran"
    assert ran == [{}]


async def test_statistics_count_the_batch_as_it_runs(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[str] = []

    async def fails(args: Any, ctx: ToolRunContext) -> str:
        raise ValueError("no")

    registry = registry_with(sleeper(log), tool("fails", fails, is_concurrency_safe=always))
    async with open_tool_batch(registry) as batch:
        assert batch.statistics().started == 0
        batch.submit(nap("c0", 2))
        batch.submit(ToolCall("c1", "fails", "{}"))
        batch.submit(nap("c2", 1))
        await trio.testing.wait_all_tasks_blocked()
        during = batch.statistics()
        batch.close()
    after = batch.statistics()
    assert (during.started, during.committed, during.in_flight) == (3, 0, 3)
    assert dict(during.results_by_code) == {}
    assert (after.started, after.committed, after.in_flight, after.abandoned) == (3, 3, 0, 0)
    assert sum(after.results_by_code.values()) == 3
    assert after.results_by_code["ok"] == 2
    # The registry's own statistics count what passed it, the same three calls here.
    assert registry.statistics().committed == 3


async def test_results_are_a_snapshot_of_what_committed() -> None:
    gate = trio.Event()

    async def waits(args: Any, ctx: ToolRunContext) -> str:
        await gate.wait()
        return "late"

    registry = registry_with(tool("echo"), tool("waits", waits))
    async with open_tool_batch(registry) as batch:
        batch.submit(ToolCall("c0", "echo", "{}"))
        batch.submit(ToolCall("c1", "waits", "{}"))
        batch.close()
        await trio.testing.wait_all_tasks_blocked()
        snapshot = batch.results
        assert [text(r) for r in snapshot] == ["ok"]
        snapshot.append(ToolExecutionResult((), True))  # a copy: the batch is unaffected
        gate.set()
    assert [text(r) for r in batch.results] == ["ok", "late"]
    assert len(snapshot) == 2


async def test_iterating_a_finished_batch_ends_after_the_unread_pairs() -> None:
    registry = registry_with(tool("echo"))
    async with open_tool_batch(registry) as batch:
        batch.submit(ToolCall("c0", "echo", "{}"))
        batch.submit(ToolCall("c1", "echo", "{}"))
    assert [call.id async for call, _ in batch] == ["c0", "c1"]
    assert [call.id async for call, _ in batch] == []  # each pair is read once


async def test_the_batch_id_is_random_hex_unless_given() -> None:
    seen: list[str] = []

    async def body(args: Any, ctx: ToolRunContext) -> str:
        seen.append(ctx.idempotency_key)
        return "ok"

    registry = registry_with(tool("echo", body))
    async with open_tool_batch(registry) as first, open_tool_batch(registry) as second:
        pass
    assert re.fullmatch(r"[0-9a-f]{32}", first.id)
    assert first.id != second.id
    async with open_tool_batch(registry, batch_id="resumed") as batch:
        batch.submit(ToolCall("c0", "echo", "{}"))
    assert batch.id == "resumed"
    assert len(seen) == 1
    assert "resumed" in seen[0]


@pytest.mark.parametrize("bad", ["", 7, None])
async def test_an_explicit_batch_id_must_be_a_non_empty_string(bad: Any) -> None:
    registry = registry_with(tool("echo"))
    if bad is None:  # None is the default: a fresh id
        async with open_tool_batch(registry, batch_id=bad) as batch:
            pass
        assert len(batch.id) == 32
        return
    with pytest.raises(ValueError, match="batch_id must be a non-empty string"):
        async with open_tool_batch(registry, batch_id=bad):
            pass  # pragma: no cover
