"""The batch driver, :class:`ToolBatch`, through ``open_tool_batch``: submit, close,
iterate, statistics, duplicate ids and the batch id.

The scheduling rules themselves (groups, barriers, caps, aborts) are in
``test_scheduler.py``; this file is the batch's own contract. Every test runs on both
drivers (the ``driver`` fixture, ``tests/drivers.py``): ``toolnursery.open_tool_batch`` under
trio and ``toolnursery.aio.open_tool_batch`` on the native asyncio driver, each on a
virtual clock.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from drivers import Driver
from support import always, code, registry_with, text
from support import tool as define
from toolnursery import (
    TextContent,
    ToolCall,
    ToolDefinition,
    ToolExecutionResult,
    ToolRunContext,
)


async def _ok_body(args: Any, ctx: ToolRunContext) -> list[TextContent]:
    return [TextContent("ok")]


def tool(driver: Driver, name: str = "echo", body: Any = None, **kwargs: Any) -> ToolDefinition:
    """``support.tool`` with its body given as ``driver``'s batches take it."""
    return define(name, driver.tool(body or _ok_body), **kwargs)


def sleeper(driver: Driver, log: list[str], name: str = "nap") -> Any:
    """A parallel tool that sleeps ``args["s"]`` (virtual) seconds and logs start and end."""

    async def body(args: Any, ctx: ToolRunContext) -> str:
        log.append(f"start {ctx.call_id}")
        await driver.sleep(args["s"])
        log.append(f"end {ctx.call_id}")
        return f"slept {ctx.call_id}"

    return tool(driver, name, body, is_concurrency_safe=always)


def nap(call_id: str, seconds: float) -> ToolCall:
    return ToolCall(call_id, "nap", f'{{"s": {seconds}}}')


def test_submit_returns_model_order_indices_and_pairs_come_in_that_order(
    driver: Driver,
) -> None:
    log: list[str] = []
    registry = registry_with(sleeper(driver, log))
    pairs: list[tuple[str, str]] = []

    async def main() -> list[int]:
        async with driver.open_tool_batch(registry) as batch:
            indices = [batch.submit(nap(f"c{i}", s)) for i, s in enumerate((3, 1, 2))]
            batch.close()
            async for call, result in batch:
                pairs.append((call.id, text(result)))
        return indices

    assert driver.run(main) == [0, 1, 2]
    # c1 ends first, but pairs come in model order.
    assert log.index("end c1") < log.index("end c0")
    assert pairs == [("c0", "slept c0"), ("c1", "slept c1"), ("c2", "slept c2")]


def test_a_call_starts_while_submission_is_still_open(driver: Driver) -> None:
    log: list[str] = []
    registry = registry_with(sleeper(driver, log))

    async def main() -> None:
        async with driver.open_tool_batch(registry) as batch:
            batch.submit(nap("c0", 5))
            await driver.wait_all_tasks_blocked()
            assert log == ["start c0"]  # the model may still be streaming
            batch.submit(nap("c1", 1))
            await driver.wait_all_tasks_blocked()
            assert log == ["start c0", "start c1"]
            batch.close()

    driver.run(main)
    assert sorted(log) == ["end c0", "end c1", "start c0", "start c1"]


def test_pairs_arrive_as_they_commit_while_calls_are_submitted(driver: Driver) -> None:
    log: list[str] = []
    registry = registry_with(sleeper(driver, log))
    seen: list[tuple[str, float]] = []

    async def main() -> float:
        async with driver.open_tool_batch(registry) as batch:

            async def consume() -> None:
                async for call, _ in batch:
                    seen.append((call.id, driver.now()))

            async with driver.open_nursery() as nursery:
                nursery.start_soon(consume)
                begun = driver.now()
                batch.submit(nap("c0", 1))
                await driver.sleep(2)
                assert [call_id for call_id, _ in seen] == ["c0"]  # before more submissions
                batch.submit(nap("c1", 1))
                batch.close()
        return begun

    begun = driver.run(main)
    assert [(call_id, at - begun) for call_id, at in seen] == [("c0", 1), ("c1", 3)]


def test_leaving_the_block_closes_submission_and_waits_for_every_call(driver: Driver) -> None:
    log: list[str] = []
    registry = registry_with(sleeper(driver, log))

    async def main() -> Any:
        begun = driver.now()
        async with driver.open_tool_batch(registry) as batch:
            batch.submit(nap("c0", 4))
            batch.submit(nap("c1", 2))
        assert driver.now() - begun == 4
        return batch

    batch = driver.run(main)
    assert [text(r) for r in batch.results] == ["slept c0", "slept c1"]
    with pytest.raises(RuntimeError, match="this batch is closed"):
        batch.submit(nap("c2", 1))


def test_submit_after_close_is_refused(driver: Driver) -> None:
    registry = registry_with(tool(driver, "echo"))

    async def main() -> Any:
        async with driver.open_tool_batch(registry) as batch:
            batch.submit(ToolCall("c0", "echo", "{}"))
            batch.close()
            with pytest.raises(RuntimeError, match=r"submit\(\) takes calls only before close\(\)"):
                batch.submit(ToolCall("c1", "echo", "{}"))
        return batch

    assert len(driver.run(main).results) == 1


@pytest.mark.parametrize("bad", [{"id": "c0", "name": "echo"}, ("c0", "echo", "{}"), None])
def test_submit_takes_only_tool_calls(driver: Driver, bad: Any) -> None:
    registry = registry_with(tool(driver, "echo"))

    async def main() -> Any:
        async with driver.open_tool_batch(registry) as batch:
            with pytest.raises(TypeError, match="a batch takes ToolCall values, not"):
                batch.submit(bad)
            batch.close()
        return batch

    assert driver.run(main).results == []


def test_a_repeated_call_id_gets_an_error_and_its_body_never_runs(driver: Driver) -> None:
    ran: list[Any] = []

    async def body(args: Any, ctx: ToolRunContext) -> str:
        ran.append(args["n"])
        return f"ran {args['n']}"

    registry = registry_with(tool(driver, "echo", body))

    async def main() -> tuple[Any, list[tuple[Any, ToolExecutionResult]]]:
        async with driver.open_tool_batch(registry) as batch:
            for n in (1, 2, 3):
                batch.submit(ToolCall("same" if n != 2 else "other", "echo", f'{{"n": {n}}}'))
            batch.close()
            pairs = [(call.arguments, result) async for call, result in batch]
        return batch, pairs

    batch, pairs = driver.run(main)
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


def test_arguments_that_cannot_be_arguments_get_an_error_without_running(
    driver: Driver,
) -> None:
    ran: list[Any] = []

    async def body(args: Any, ctx: ToolRunContext) -> str:
        ran.append(args)
        return "ran"

    registry = registry_with(tool(driver, "echo", body))

    async def main() -> Any:
        async with driver.open_tool_batch(registry) as batch:
            batch.submit(ToolCall("c0", "echo", 42))  # type: ignore[arg-type]
            batch.submit(ToolCall("c1", "echo", "{}"))
        return batch

    first, second = driver.run(main).results
    assert code(first) == "INVALID_ARGS"
    assert text(first).startswith("Error: invalid arguments")
    assert text(second) == "ran"
    assert ran == [{}]


def test_statistics_count_the_batch_as_it_runs(driver: Driver) -> None:
    log: list[str] = []

    async def fails(args: Any, ctx: ToolRunContext) -> str:
        raise ValueError("no")

    registry = registry_with(
        sleeper(driver, log), tool(driver, "fails", fails, is_concurrency_safe=always)
    )

    async def main() -> tuple[Any, Any]:
        async with driver.open_tool_batch(registry) as batch:
            assert batch.statistics().started == 0
            batch.submit(nap("c0", 2))
            batch.submit(ToolCall("c1", "fails", "{}"))
            batch.submit(nap("c2", 1))
            await driver.wait_all_tasks_blocked()
            during = batch.statistics()
            batch.close()
        return during, batch.statistics()

    during, after = driver.run(main)
    assert (during.started, during.committed, during.in_flight) == (3, 0, 3)
    assert dict(during.results_by_code) == {}
    assert (after.started, after.committed, after.in_flight, after.abandoned) == (3, 3, 0, 0)
    assert sum(after.results_by_code.values()) == 3
    assert after.results_by_code["ok"] == 2
    # The registry's own statistics count what passed it, the same three calls here.
    assert registry.statistics().committed == 3


def test_results_are_a_snapshot_of_what_committed(driver: Driver) -> None:
    gates: list[Any] = []

    async def waits(args: Any, ctx: ToolRunContext) -> str:
        await gates[0].wait()
        return "late"

    registry = registry_with(tool(driver, "echo"), tool(driver, "waits", waits))

    async def main() -> tuple[Any, list[ToolExecutionResult]]:
        gates.append(driver.event())
        async with driver.open_tool_batch(registry) as batch:
            batch.submit(ToolCall("c0", "echo", "{}"))
            batch.submit(ToolCall("c1", "waits", "{}"))
            batch.close()
            await driver.wait_all_tasks_blocked()
            snapshot = batch.results
            assert [text(r) for r in snapshot] == ["ok"]
            snapshot.append(ToolExecutionResult((), True))  # a copy: the batch is unaffected
            gates[0].set()
        return batch, snapshot

    batch, snapshot = driver.run(main)
    assert [text(r) for r in batch.results] == ["ok", "late"]
    assert len(snapshot) == 2


def test_iterating_a_finished_batch_ends_after_the_unread_pairs(driver: Driver) -> None:
    registry = registry_with(tool(driver, "echo"))

    async def main() -> None:
        async with driver.open_tool_batch(registry) as batch:
            batch.submit(ToolCall("c0", "echo", "{}"))
            batch.submit(ToolCall("c1", "echo", "{}"))
        assert [call.id async for call, _ in batch] == ["c0", "c1"]
        assert [call.id async for call, _ in batch] == []  # each pair is read once

    driver.run(main)


def test_the_batch_id_is_random_hex_unless_given(driver: Driver) -> None:
    seen: list[str] = []

    async def body(args: Any, ctx: ToolRunContext) -> str:
        seen.append(ctx.idempotency_key)
        return "ok"

    registry = registry_with(tool(driver, "echo", body))

    async def main() -> tuple[Any, Any, Any]:
        async with (
            driver.open_tool_batch(registry) as first,
            driver.open_tool_batch(registry) as second,
        ):
            pass
        async with driver.open_tool_batch(registry, batch_id="resumed") as batch:
            batch.submit(ToolCall("c0", "echo", "{}"))
        return first, second, batch

    first, second, batch = driver.run(main)
    assert re.fullmatch(r"[0-9a-f]{32}", first.id)
    assert first.id != second.id
    assert batch.id == "resumed"
    assert len(seen) == 1
    assert "resumed" in seen[0]


@pytest.mark.parametrize("bad", ["", 7, None])
def test_an_explicit_batch_id_must_be_a_non_empty_string(driver: Driver, bad: Any) -> None:
    registry = registry_with(tool(driver, "echo"))

    async def main() -> None:
        if bad is None:  # None is the default: a fresh id
            async with driver.open_tool_batch(registry, batch_id=bad) as batch:
                pass
            assert len(batch.id) == 32
            return
        with pytest.raises(ValueError, match="batch_id must be a non-empty string"):
            async with driver.open_tool_batch(registry, batch_id=bad):
                pass  # pragma: no cover

    driver.run(main)
