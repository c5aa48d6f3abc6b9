"""Deadlines as cancel scopes: the timeout policy's mechanism, in execute() and batches."""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from drivers import Driver, current, neutral
from support import always, live_tasks
from toolnursery import (
    CancelSignal,
    TextContent,
    ToolCall,
    ToolDefinition,
    ToolDispatchExecution,
    ToolErrorInfo,
    ToolExecution,
    ToolExecutionInput,
    ToolExecutionResult,
    ToolRegistry,
    ToolRunContext,
    install_retry_policy,
    install_timeout_policy,
    open_tool_batch,
    run_tool_calls,
)

TIMEOUT = ToolErrorInfo("ToolTimeoutError", "TOOL_TIMEOUT")
ABORTED = ToolErrorInfo("AbortError", "ABORTED")


def _tool(body: Any, timeout_ms: float | None = 100, **kw: Any) -> ToolDefinition:
    return ToolDefinition(
        "t",
        "t",
        {"type": "object"},
        neutral(body),
        timeout_ms=timeout_ms,
        is_concurrency_safe=always,
        **kw,
    )


async def slow(args: Any, ctx: ToolRunContext) -> str:
    await current().sleep(args.get("d", 10) if isinstance(args, dict) else 10)
    return "late"


def calls(*durations: float) -> list[ToolCall]:
    return [ToolCall(f"c{i}", "t", f'{{"d": {d}}}') for i, d in enumerate(durations, 1)]


@pytest.mark.spec("B168")
def test_own_deadline_in_a_batch_is_a_timeout_with_the_exact_text(driver: Driver) -> None:
    """B168: the call's own deadline scope catches its cancellation → TOOL_TIMEOUT."""

    async def main() -> None:
        registry = ToolRegistry()
        registry.register(_tool(slow, timeout_ms=250))
        install_timeout_policy(registry)
        start = driver.now()
        late, quick = await driver.run_tool_calls(registry, calls(10, 0.1))
        assert late.content == (TextContent("Error: tool call timed out after 250ms"),)
        assert late.error == TIMEOUT
        assert quick.content == (TextContent("late"),)
        assert driver.now() - start == pytest.approx(0.25)

    driver.run(main)


@pytest.mark.spec("B169")
@pytest.mark.parametrize("timeout_ms", [500, 5000], ids=["own scope", "deadline group"])
async def test_an_enclosing_abort_stays_aborted_in_a_batch(
    autojump_clock: trio.testing.MockClock, timeout_ms: float
) -> None:
    """B169: the batch abort (the pool's scope, enclosing the deadline) → ABORTED."""
    results = await _two_calls_aborted_at(0.2, slow, timeout_ms=timeout_ms)
    assert [r.error for r in results] == [ABORTED, ABORTED]


@pytest.mark.spec("B169")
async def test_an_enclosing_cancel_scope_around_execute_propagates() -> None:
    """An enclosing trio scope is not ours: Cancelled passes the deadline scope."""
    registry = ToolRegistry()
    registry.register(_tool(slow, timeout_ms=60_000))
    install_timeout_policy(registry)
    with trio.move_on_after(0.01) as outer:
        await registry.execute(ToolExecutionInput("c1", "t", {"d": 10}))
    assert outer.cancelled_caught


@pytest.mark.spec("B170")
@pytest.mark.parametrize(
    ("timeout_ms", "abort_at"), [(100, 0.3), (1000, 1.2)], ids=["own scope", "deadline group"]
)
async def test_deadline_first_then_batch_abort_during_cleanup_is_a_timeout(
    autojump_clock: trio.testing.MockClock, timeout_ms: float, abort_at: float
) -> None:
    """B170 in a batch: the deadline passed before the abort reached the cleaning body."""

    async def cleans_up(args: Any, ctx: ToolRunContext) -> str:
        try:
            await trio.sleep(10)
        finally:
            await current().sleep_shielded(0.5)
        return "late"

    results = await _two_calls_aborted_at(abort_at, cleans_up, timeout_ms=timeout_ms)
    assert [r.error for r in results] == [TIMEOUT, TIMEOUT]


async def _two_calls_aborted_at(
    when: float, body: Any, *, timeout_ms: float
) -> list[ToolExecutionResult]:
    """Two 10 s calls of a timeout-policed tool in one batch whose signal fires at ``when``."""
    registry = ToolRegistry()
    registry.register(_tool(body, timeout_ms=timeout_ms))
    install_timeout_policy(registry)
    signal = CancelSignal()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_cancel_at, signal, when)
        results = await run_tool_calls(registry, calls(10, 10), signal=signal)
    return results


async def _cancel_at(signal: CancelSignal, when: float) -> None:
    await trio.sleep(when)
    signal.cancel("stop")


@pytest.mark.parametrize("order", ["retry-outside", "timeout-outside"])
async def test_retry_outside_timeout_gives_each_attempt_a_fresh_deadline(
    autojump_clock: trio.testing.MockClock, order: str
) -> None:
    """Retry installed first (outermost) re-enters the deadline per attempt; installed
    inside the timeout, every attempt shares one deadline."""
    starts: list[float] = []

    async def flaky(args: Any, ctx: ToolRunContext) -> str:
        starts.append(trio.current_time())
        if len(starts) < 3:
            await trio.sleep(10)  # times out
        await trio.sleep(0.05)
        return "ok"

    registry = ToolRegistry()
    registry.register(_tool(flaky, timeout_ms=100, idempotent=True))
    if order == "retry-outside":
        install_retry_policy(registry, codes=["TOOL_TIMEOUT"], backoff_ms=10, jitter=0)
        install_timeout_policy(registry)
    else:
        install_timeout_policy(registry)
        install_retry_policy(registry, codes=["TOOL_TIMEOUT"], backoff_ms=10, jitter=0)
    result = await registry.execute(ToolExecutionInput("c1", "t", {}))
    if order == "retry-outside":
        assert result.content == (TextContent("ok"),)
        assert result.meta == {"attempts": 3}
        # attempt k starts after k-1 deadlines of 0.1 s and backoffs of 0.01, 0.02 s
        assert starts == pytest.approx([0.0, 0.11, 0.23])
    else:
        # One deadline for the whole retry loop: the first attempt exhausts it.
        assert result.error == TIMEOUT
        assert len(starts) == 1


async def test_a_wrapper_inside_the_timeout_still_runs_under_its_deadline(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """With another wrapper in the chain the policy runs at its position, as a wrapper."""
    seen: list[str] = []

    async def inner(view: ToolDispatchExecution, next_: Any) -> ToolExecutionResult:
        try:
            return await next_()
        except trio.Cancelled:
            seen.append("inner saw Cancelled")
            raise

    registry = ToolRegistry()
    registry.register(_tool(slow, timeout_ms=100))
    install_timeout_policy(registry)
    registry.on_execute(inner)
    result = await registry.execute(ToolExecutionInput("c1", "t", {}))
    assert result.error == TIMEOUT
    assert seen == ["inner saw Cancelled"]


async def test_a_timed_batch_starts_no_timer_task_per_call(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The deadline is a scope's: the only tasks are one per call and the host of the
    deadline group the 20 calls share (no timer task anywhere, no pool host)."""
    spawned: list[str] = []

    class Count(trio.abc.Instrument):
        def task_spawned(self, task: trio.lowlevel.Task) -> None:
            spawned.append(task.name)

    registry = ToolRegistry()
    registry.register(_tool(slow, timeout_ms=1_000))
    install_timeout_policy(registry)
    trio.lowlevel.add_instrument(Count())
    results = await run_tool_calls(registry, calls(*[0.1] * 20), max_parallel=20)
    assert all(not r.is_error for r in results)
    assert sorted(set(spawned)) == [
        "toolnursery._batch._pool.WorkerPool._host_group",
        "toolnursery._batch._pool.WorkerPool._member",
    ]
    assert len(spawned) == 20 + 1


async def test_a_body_sees_a_derived_signal_that_reads_as_fired_past_the_deadline(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """B166: the budgeted body's signal is derived; polled past the deadline it fired."""
    seen: list[tuple[bool, bool]] = []
    caller = CancelSignal()

    async def polls(args: Any, ctx: ToolRunContext) -> str:
        before = ctx.signal.cancelled
        await current().sleep_shielded(0.2)
        seen.append((before, ctx.signal.cancelled))
        assert ctx.signal is not caller
        return "stopped"

    registry = ToolRegistry()
    registry.register(_tool(polls, timeout_ms=100))
    install_timeout_policy(registry)
    result = await registry.execute(ToolExecutionInput("c1", "t", {}, caller))
    assert seen == [(False, True)]
    assert result.error == TIMEOUT
    assert not caller.cancelled


async def test_a_deadline_signal_the_body_read_is_unlinked_when_the_call_ends() -> None:
    """Reading ctx.signal under a deadline links a derived signal to the caller's; the
    link goes when the body settles (no link left behind per call)."""

    async def reads(args: Any, ctx: ToolRunContext) -> str:
        assert not ctx.signal.cancelled
        await trio.lowlevel.checkpoint()
        return "ok"

    registry = ToolRegistry()
    registry.register(_tool(reads, timeout_ms=1_000))
    install_timeout_policy(registry)
    caller = CancelSignal()
    for i in range(3):
        await registry.execute(ToolExecutionInput(f"c{i}", "t", {}, caller))
    assert not caller._callbacks


async def _passthrough(view: ToolDispatchExecution, next_: Any) -> ToolExecutionResult:
    result: ToolExecutionResult = await next_()
    return result


@pytest.mark.parametrize("position", ["outermost", "innermost", "middle"])
async def test_the_timeout_policy_at_any_position_in_a_chain_times_out_in_a_batch(
    autojump_clock: trio.testing.MockClock, position: str
) -> None:
    """B168/B169: outermost, innermost or between wrappers, the policy's deadline ends a
    slow call as a timeout and a fast one keeps its result; a batch abort stays ABORTED."""

    def build(timeout_ms: float) -> ToolRegistry:
        registry = ToolRegistry()
        registry.register(_tool(slow, timeout_ms=timeout_ms))
        if position != "outermost":
            registry.on_execute(_passthrough)
        install_timeout_policy(registry)
        if position != "innermost":
            registry.on_execute(_passthrough)
        return registry

    results = await run_tool_calls(build(100), calls(0.05, 10), max_parallel=2)
    assert results[0].content == (TextContent("late"),)
    assert results[1].error == TIMEOUT

    signal = CancelSignal()

    async def abort_soon() -> None:
        await trio.sleep(0.1)
        signal.cancel()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(abort_soon)
        aborted = await run_tool_calls(build(60_000), calls(10), signal=signal)
    assert aborted[0].error == ABORTED


# -- deadline groups: the calls of one budget placed in one pass share one scope ------


def _ends(log: dict[str, float]) -> Any:
    """A body that sleeps ``d`` seconds and logs the trio time its call ended at."""

    async def body(args: Any, ctx: ToolRunContext) -> str:
        try:
            await current().sleep(args["d"])
        finally:
            log[ctx.call_id] = current().now()
        return "done"

    return body


def _hosts(spawned: list[str]) -> int:
    return spawned.count("toolnursery._batch._pool.WorkerPool._host_group")


class _Spawned(trio.abc.Instrument):
    def __init__(self) -> None:
        self.names: list[str] = []

    def task_spawned(self, task: trio.lowlevel.Task) -> None:
        self.names.append(task.name)


async def test_a_group_holds_at_most_64_calls_and_each_times_out_at_its_budget(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """150 calls placed in one pass: three groups (64, 64, 22), every call cut at 1 s."""
    ends: dict[str, float] = {}
    registry = ToolRegistry()
    registry.register(_tool(_ends(ends), timeout_ms=1000))
    install_timeout_policy(registry)
    spawned = _Spawned()
    trio.lowlevel.add_instrument(spawned)
    start = trio.current_time()
    try:
        results = await run_tool_calls(registry, calls(*[100] * 150), max_parallel=150)
    finally:
        trio.lowlevel.remove_instrument(spawned)
    assert [r.error for r in results] == [TIMEOUT] * 150
    assert _hosts(spawned.names) == 3
    assert {round(end - start, 9) for end in ends.values()} == {1.0}


def test_calls_of_other_budgets_or_later_passes_keep_their_own_deadlines(driver: Driver) -> None:
    """Groups are per budget and per pass: a call placed later is not cut by an earlier
    group's deadline, and a longer budget is not cut by a shorter one."""

    async def main() -> None:
        ends: dict[str, float] = {}
        registry = ToolRegistry()
        registry.register(_tool(_ends(ends), timeout_ms=1000))
        registry.register(
            ToolDefinition(
                "long",
                "long",
                {"type": "object"},
                neutral(_ends(ends)),
                timeout_ms=3000,
                is_concurrency_safe=always,
            )
        )
        install_timeout_policy(registry)
        start = driver.now()
        async with driver.open_tool_batch(registry, max_parallel=10) as batch:
            batch.submit(ToolCall("a", "t", '{"d": 100}'))
            batch.submit(ToolCall("b", "long", '{"d": 100}'))
            await driver.sleep(0.5)
            batch.submit(ToolCall("c", "t", '{"d": 100}'))  # a later pass: a group of its own
            batch.close()
            results = [result async for _, result in batch]
        assert [r.error for r in results] == [TIMEOUT] * 3
        assert {k: round(v - start, 9) for k, v in ends.items()} == {"a": 1.0, "b": 3.0, "c": 1.5}

    driver.run(main)


def test_a_grouped_call_that_ignores_its_deadline_still_times_out(driver: Driver) -> None:
    """A body that shields itself past the shared deadline and returns is TOOL_TIMEOUT."""

    async def main() -> None:

        async def shielded(args: Any, ctx: ToolRunContext) -> str:
            await current().sleep_shielded(args["d"])
            return "ignored the deadline"

        registry = ToolRegistry()
        registry.register(_tool(shielded, timeout_ms=1000))
        install_timeout_policy(registry)
        late, quick = await driver.run_tool_calls(registry, calls(5, 0.5))
        assert late.error == TIMEOUT
        assert quick.content == (TextContent("ignored the deadline"),)

    driver.run(main)


def test_a_call_whose_budget_changed_before_it_started_leaves_its_group(driver: Driver) -> None:
    """The registry changes between placing c1 and c1's start (c2's pre-execute hook
    re-registers the tool with a longer budget): c1 runs under the budget current when
    its dispatch starts (3 s), not its group's (1 s)."""

    async def main() -> None:
        ends: dict[str, float] = {}
        registry = ToolRegistry()
        body = _ends(ends)
        dispose = [registry.register(_tool(body, timeout_ms=1000))]

        async def pre(execution: ToolExecution, next_: Any) -> Any:
            if execution.call_id == "c2":
                dispose[0]()
                dispose[0] = registry.register(_tool(body, timeout_ms=3000))
                await driver.checkpoint()  # c1's group starts now
            return await next_()

        registry.on_pre_execute(pre)
        install_timeout_policy(registry)
        start = driver.now()
        results = await driver.run_tool_calls(registry, calls(100, 100))
        assert [r.error for r in results] == [TIMEOUT, TIMEOUT]
        assert {k: round(v - start, 9) for k, v in ends.items()} == {"c1": 3.0, "c2": 3.0}

    driver.run(main)


def test_the_last_member_leaving_its_group_still_sets_the_group_timer(driver: Driver) -> None:
    """Two tools of one budget share a group; the registry changes the second one's
    budget before its call starts, and that call (the group's last to start) leaves:
    the member that did start still times out at its own deadline."""

    async def main() -> None:
        ends: dict[str, float] = {}
        registry = ToolRegistry()
        body = _ends(ends)

        def definition(name: str, timeout_ms: float) -> ToolDefinition:
            return ToolDefinition(
                name,
                name,
                {"type": "object"},
                neutral(body),
                timeout_ms=timeout_ms,
                is_concurrency_safe=always,
            )

        registry.register(definition("a", 1000))
        dispose = [registry.register(definition("b", 1000))]

        async def pre(execution: ToolExecution, next_: Any) -> Any:
            if execution.call_id == "c3":
                dispose[0]()
                dispose[0] = registry.register(definition("b", 3000))
                await driver.checkpoint()  # the group of c1 and c2 starts now
            return await next_()

        registry.on_pre_execute(pre)
        install_timeout_policy(registry)
        start = driver.now()
        batch = [ToolCall("c1", "a", '{"d": 100}'), ToolCall("c2", "b", '{"d": 100}')]
        results = await driver.run_tool_calls(registry, [*batch, ToolCall("c3", "b", '{"d": 100}')])
        assert [r.error for r in results] == [TIMEOUT, TIMEOUT, TIMEOUT]
        assert {k: round(v - start, 9) for k, v in ends.items()} == {
            "c1": 1.0,
            "c2": 3.0,
            "c3": 3.0,
        }

    driver.run(main, deadlock=50)


async def test_a_capped_batch_times_out_waiting_calls_from_their_own_start(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Calls that wait for a slot are not grouped: each budget counts from its start."""
    ends: dict[str, float] = {}
    registry = ToolRegistry()
    registry.register(_tool(_ends(ends), timeout_ms=1000))
    install_timeout_policy(registry)
    start = trio.current_time()
    results = await run_tool_calls(registry, calls(100, 100, 100), max_parallel=2)
    assert [r.error for r in results] == [TIMEOUT] * 3
    assert {k: round(v - start, 9) for k, v in ends.items()} == {
        "c1": 1.0,
        "c2": 1.0,
        "c3": 2.0,
    }


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["t", "long", "short"]),  # budgets of 1 s, 3 s and 100 ms
            st.sampled_from([0.05, 0.5, 1.5, 2.5, 5.0]),  # how long the body sleeps
            st.sampled_from([0.0, 0.0, 0.7]),  # when it is submitted after the last one
        ),
        min_size=1,
        max_size=90,
    ),
    st.sampled_from([1, 3, 10, 100]),
)
def test_every_timed_call_ends_at_its_own_budget_or_duration(
    script: list[tuple[str, float, float]], cap: int
) -> None:
    """Over random streamed batches of three budgets (two of them long enough to share
    deadline scopes, one not) and any cap: each call ends at the
    smaller of its duration and its budget, counted from its own start (exactly, on a
    mock clock), and only the calls that outlive their budget are TOOL_TIMEOUT."""
    budgets = {"t": 1.0, "long": 3.0, "short": 0.1}

    async def main() -> None:
        starts: dict[str, float] = {}
        ends: dict[str, float] = {}

        async def body(args: Any, ctx: ToolRunContext) -> str:
            starts[ctx.call_id] = trio.current_time()
            try:
                await trio.sleep(args["d"])
            finally:
                ends[ctx.call_id] = trio.current_time()
            return "done"

        registry = ToolRegistry()
        for name, budget in budgets.items():
            registry.register(
                ToolDefinition(
                    name,
                    name,
                    {"type": "object"},
                    body,
                    timeout_ms=budget * 1000,
                    is_concurrency_safe=always,
                )
            )
        install_timeout_policy(registry)
        before = live_tasks()
        async with open_tool_batch(registry, max_parallel=cap) as batch:
            for i, (name, duration, delay) in enumerate(script):
                if delay:
                    await trio.sleep(delay)
                batch.submit(ToolCall(f"c{i}", name, json.dumps({"d": duration})))
            batch.close()
            results = [result async for _, result in batch]
        assert len(results) == len(script)
        for i, ((name, duration, _), result) in enumerate(zip(script, results, strict=True)):
            call_id = f"c{i}"
            elapsed = round(ends[call_id] - starts[call_id], 9)
            if duration < budgets[name]:
                assert result.content == (TextContent("done"),), (call_id, result)
                assert elapsed == duration
            else:
                assert result.error == TIMEOUT, (call_id, result)
                assert elapsed == budgets[name]
        assert live_tasks() == before  # nothing the batch started is left

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


@pytest.mark.spec("B166")
def test_a_grouped_body_sees_its_own_deadline_in_its_signal(driver: Driver) -> None:
    """B166 in a deadline group: a body's ``ctx.signal`` is derived, reads as fired once
    its deadline has passed (and not before), and the call that outlived it times out."""

    async def main() -> None:
        seen: dict[str, tuple[bool, bool]] = {}

        async def polls(args: Any, ctx: ToolRunContext) -> str:
            before = ctx.signal.cancelled
            await current().sleep_shielded(args["d"])
            seen[ctx.call_id] = (before, ctx.signal.cancelled)
            return "stopped"

        registry = ToolRegistry()
        registry.register(_tool(polls, timeout_ms=1000))
        install_timeout_policy(registry)
        results = await driver.run_tool_calls(registry, calls(2, 0.5))
        assert seen == {"c1": (False, True), "c2": (False, False)}
        assert [r.error for r in results] == [TIMEOUT, None]

    driver.run(main)
