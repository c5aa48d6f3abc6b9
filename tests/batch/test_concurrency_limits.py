"""Per-tool concurrency limits: ``max_concurrency`` on a definition.

Validation at definition and registration time; then, on trio's autojump clock: the
limit holds inside a batch's cap, across batches and ``execute()`` calls sharing the
registry; a call waiting for its tool gives its pool slot back; barriers, aborts,
timeouts and enclosing cancel scopes never deadlock or leak a token.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
import pytest
import trio
import trio.testing

from support import no_deadlock, registry_with, text
from support import noop as _noop
from toolnursery import (
    CancelSignal,
    RegistrationError,
    TextContent,
    ToolCall,
    ToolDefinition,
    ToolDispatchExecution,
    ToolErrorInfo,
    ToolExecutionInput,
    ToolExecutionResult,
    ToolRegistry,
    ToolRunContext,
    define_tool,
    install_timeout_policy,
    open_tool_batch,
    run_tool_calls,
    tool,
)

ABORTED_BEFORE_DISPATCH = ToolExecutionResult(
    (TextContent("Error: tool call aborted before dispatch"),),
    True,
    ToolErrorInfo("AbortError", "ABORTED_BEFORE_DISPATCH"),
)


class Log:
    """``(event, call_id, time since creation)``; counts bodies running per tool."""

    def __init__(self) -> None:
        self.t0 = trio.current_time()
        self.entries: list[tuple[str, str, float]] = []
        self.running: dict[str, int] = {}
        self.peak: dict[str, int] = {}

    def add(self, event: str, call_id: str) -> None:
        self.entries.append((event, call_id, trio.current_time() - self.t0))

    def at(self, event: str, call_id: str) -> float:
        (time,) = [t for e, c, t in self.entries if e == event and c == call_id]
        return time

    def ids(self, event: str) -> list[str]:
        return [c for e, c, _ in self.entries if e == event]

    def enter(self, name: str) -> None:
        self.running[name] = self.running.get(name, 0) + 1
        self.peak[name] = max(self.peak.get(name, 0), self.running[name])
        total = sum(self.running.values())
        self.peak["*"] = max(self.peak.get("*", 0), total)

    def leave(self, name: str) -> None:
        self.running[name] -= 1


def limited(
    log: Log, name: str = "lim", limit: int | None = 1, *, parallel: bool = True
) -> ToolDefinition:
    """A tool whose body sleeps ``args["d"]`` (default 1) and logs start/end."""

    async def body(args: Any, ctx: ToolRunContext) -> str:
        log.add("start", ctx.call_id)
        log.enter(name)
        try:
            await trio.sleep(args.get("d", 1) if isinstance(args, dict) else 1)
        finally:
            log.leave(name)
            log.add("end", ctx.call_id)
        return f"{name}:{ctx.call_id}"

    return ToolDefinition(
        name,
        name,
        {"type": "object"},
        body,
        is_concurrency_safe=(lambda args: True) if parallel else None,
        max_concurrency=limit,
    )


def call(call_id: str, name: str = "lim", d: float = 1) -> ToolCall:
    return ToolCall(call_id, name, json.dumps({"d": d}))


# -- validation ---------------------------------------------------------------------


BAD_LIMITS = [0, -1, True, False, 1.5, 2.0, "2", [1]]


@pytest.mark.parametrize("limit", BAD_LIMITS)
def test_register_rejects_a_limit_that_is_not_a_positive_int(limit: Any) -> None:
    """0, negatives, bools and non-ints are RegistrationErrors; nothing is registered."""
    registry = ToolRegistry()
    definition = ToolDefinition("t", "t", {}, _noop, max_concurrency=limit)
    with pytest.raises(
        RegistrationError, match=r'tool "t" max_concurrency must be a positive integer, got '
    ):
        registry.register(definition)
    assert registry.get("t") is None
    scope = registry.scope()
    with pytest.raises(RegistrationError, match="max_concurrency"):
        scope.register(definition)


@pytest.mark.parametrize("limit", BAD_LIMITS)
def test_define_tool_and_tool_reject_a_bad_limit_eagerly(limit: Any) -> None:
    """The typed constructors check the limit when the definition is made."""
    with pytest.raises(
        RegistrationError, match=r"define_tool\(t\): max_concurrency must be a positive integer"
    ):
        define_tool(name="t", description="d", parameters={}, execute=_noop, max_concurrency=limit)
    with pytest.raises(RegistrationError, match=r"@tool f: max_concurrency must be a positive"):

        @tool(max_concurrency=limit)
        async def f() -> str:
            return "ok"


def test_define_tool_and_tool_carry_the_limit() -> None:
    """A valid limit lands on the definition; the default is unlimited."""
    defined = define_tool(
        name="t", description="d", parameters={}, execute=_noop, max_concurrency=3
    )
    assert defined.max_concurrency == 3
    assert not defined.idempotent
    both = define_tool(
        name="t", description="d", parameters={}, execute=_noop, idempotent=True, max_concurrency=2
    )
    assert (both.idempotent, both.max_concurrency) == (True, 2)

    @tool(max_concurrency=1)
    async def fetch(url: str) -> str:
        """Fetch a page."""
        return url

    assert fetch.max_concurrency == 1
    assert (
        define_tool(name="t", description="d", parameters={}, execute=_noop).max_concurrency is None
    )
    assert ToolRegistry().register(defined) is not None


# -- the limit in a batch -------------------------------------------------------------


@no_deadlock
async def test_never_more_bodies_than_the_limit_inside_the_batch_cap(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Limit 2 under cap 10: six one-second calls take three seconds, two at a time."""
    log = Log()
    registry = registry_with(limited(log, limit=2))
    results = await run_tool_calls(registry, [call(f"c{i}") for i in range(6)])
    assert [text(r) for r in results] == [f"lim:c{i}" for i in range(6)]
    assert log.peak["lim"] == 2
    assert [log.at("start", f"c{i}") for i in range(6)] == [0, 0, 1, 1, 2, 2]


@no_deadlock
async def test_the_batch_cap_still_applies_under_a_larger_limit(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Limit 5, cap 2: two at a time."""
    log = Log()
    registry = registry_with(limited(log, limit=5))
    await run_tool_calls(registry, [call(f"c{i}") for i in range(4)], max_parallel=2)
    assert log.peak["*"] == 2
    assert [log.at("start", f"c{i}") for i in range(4)] == [0, 0, 1, 1]


@no_deadlock
async def test_a_call_waiting_for_its_tool_gives_its_pool_slot_back(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Cap 2, limit 1: while lim#2 waits for lim#1, another tool's call takes its slot."""
    log = Log()
    registry = registry_with(limited(log, limit=1), limited(log, "other", None))
    calls = [call("l1", d=2), call("l2", d=1), call("o1", "other"), call("o2", "other")]
    results = await run_tool_calls(registry, calls, max_parallel=2)
    assert [text(r) for r in results] == ["lim:l1", "lim:l2", "other:o1", "other:o2"]
    assert log.at("start", "o1") == 0  # l2 is waiting, not holding a slot
    assert log.at("start", "o2") == 1
    assert log.at("start", "l2") == 2
    assert log.peak["*"] == 2
    assert log.peak["lim"] == 1


@no_deadlock
async def test_a_call_that_got_its_token_waits_for_a_slot_without_exceeding_the_cap(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The token frees (another batch) while the pool is full: the call waits for a slot."""
    log = Log()
    registry = registry_with(limited(log, limit=1), limited(log, "other", None))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(run_tool_calls, registry, [call("held", d=1)])
        await trio.testing.wait_all_tasks_blocked()
        results = await run_tool_calls(
            registry,
            [call("l", d=1), call("o1", "other", 3), call("o2", "other", 3)],
            max_parallel=2,
        )
    assert [text(r) for r in results] == ["lim:l", "other:o1", "other:o2"]
    # t=0: l waits for the token (its slot given back), so o1 and o2 fill the pool.
    # t=1: "held" ends in the other batch; l has the token but no slot until t=3.
    assert (log.at("start", "o1"), log.at("start", "o2")) == (0, 0)
    assert log.at("start", "l") == 3
    assert log.peak["other"] == 2
    assert log.peak["lim"] == 1


@no_deadlock
async def test_the_limit_is_shared_across_batches_and_execute(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Two batches and a direct execute() on one registry: one body of lim at a time."""
    log = Log()
    registry = registry_with(limited(log, limit=1))

    async def batch(prefix: str) -> None:
        await run_tool_calls(registry, [call(f"{prefix}{i}") for i in range(2)])

    async def direct() -> None:
        result = await registry.execute(ToolExecutionInput("e", "lim", {"d": 1}))
        assert text(result) == "lim:e"

    async with trio.open_nursery() as nursery:
        nursery.start_soon(batch, "a")
        nursery.start_soon(batch, "b")
        nursery.start_soon(direct)
    assert log.peak["lim"] == 1
    assert len(log.ids("start")) == 5
    assert log.entries[-1][2] == 5  # strictly one after another


@no_deadlock
async def test_a_limited_exclusive_call_waits_for_another_batch_without_deadlock(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A barrier (run inline by the driver) of a limited tool waits for the token."""
    log = Log()
    registry = registry_with(limited(log, "x", 1, parallel=False), limited(log, "p", None))

    async def first() -> None:
        await run_tool_calls(registry, [call("x1", "x", 3)])

    async with trio.open_nursery() as nursery:
        nursery.start_soon(first)
        await trio.sleep(1)
        results = await run_tool_calls(
            registry, [call("p1", "p"), call("x2", "x"), call("p2", "p")], max_parallel=1
        )
    assert [text(r) for r in results] == ["p:p1", "x:x2", "p:p2"]
    assert log.at("start", "x2") == 3  # after x1 (the other batch) released the token
    assert log.at("start", "p2") == 4


@no_deadlock
async def test_limits_barriers_and_the_cap_mixed_in_one_batch_finish(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A barrier between limited calls: every group drains; the limit holds throughout."""
    log = Log()
    registry = registry_with(
        limited(log, limit=2), limited(log, "x", 1, parallel=False), limited(log, "p", None)
    )
    calls = [
        call("a", d=2),
        call("b", d=2),
        call("c", d=2),
        call("p", "p", d=1),
        call("x", "x", d=1),
        call("d"),
        call("e"),
        call("f"),
    ]
    with trio.fail_after(100):
        results = await run_tool_calls(registry, calls, max_parallel=3)
    assert [r.is_error for r in results] == [False] * 8
    assert log.peak["lim"] == 2
    assert log.at("start", "c") == 2
    assert log.at("start", "x") == 4
    assert (log.at("start", "d"), log.at("start", "e"), log.at("start", "f")) == (5, 5, 6)


# Not @no_deadlock: while a worker thread starts, every task is blocked and the
# autojump clock would jump to that deadline.
async def test_sync_bodies_respect_the_limit(autojump_clock: trio.testing.MockClock) -> None:
    """A plain-def body (run in a thread) acquires the token before its thread starts."""
    live: list[int] = []
    peak: list[int] = [0]

    def body(args: Any, ctx: ToolRunContext) -> str:
        live.append(1)
        peak[0] = max(peak[0], len(live))
        trio.from_thread.run(trio.sleep, 1)
        live.pop()
        return "done"

    registry = registry_with(
        ToolDefinition("s", "s", {}, body, is_concurrency_safe=lambda a: True, max_concurrency=1)
    )
    results = await run_tool_calls(registry, [ToolCall(f"c{i}", "s", "{}") for i in range(3)])
    assert [text(r) for r in results] == ["done"] * 3
    assert peak == [1]


@no_deadlock
async def test_a_resized_limit_applies_to_the_name(autojump_clock: trio.testing.MockClock) -> None:
    """Re-registering the name with another limit resizes the one limiter of the name."""
    log = Log()
    registry = ToolRegistry()
    dispose = registry.register(limited(log, limit=1))
    await run_tool_calls(registry, [call("a1"), call("a2")])
    assert log.peak["lim"] == 1
    dispose()
    registry.register(limited(log, limit=3))
    await run_tool_calls(registry, [call(f"b{i}") for i in range(3)])
    assert log.peak["lim"] == 3
    assert len({log.at("start", f"b{i}") for i in range(3)}) == 1


@no_deadlock
async def test_a_scopes_variant_shares_the_names_limit(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Limits are per tool name: a scope's shadowing variant counts against it too."""
    log = Log()
    registry = registry_with(limited(log, limit=1))
    scope = registry.scope()
    scope.register(limited(log, limit=1))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(run_tool_calls, registry, [call("g")])
        nursery.start_soon(lambda: run_tool_calls(registry, [call("s")], agent=scope))
    assert log.peak["lim"] == 1


# -- aborts, timeouts, cancellation ----------------------------------------------------


async def abort_after(signal: CancelSignal, seconds: float) -> None:
    await trio.sleep(seconds)
    signal.cancel("stop")


@pytest.mark.parametrize("how", ["pooled", "wrapped"])
@no_deadlock
async def test_abort_while_waiting_for_the_token_is_aborted_before_dispatch(
    autojump_clock: trio.testing.MockClock, how: str
) -> None:
    """The waiting body never starts; the token is not leaked (the next batch runs)."""
    log = Log()
    registry = registry_with(limited(log, limit=1))
    if how == "wrapped":

        async def wrap(
            view: ToolDispatchExecution, next_: Callable[[], Awaitable[ToolExecutionResult]]
        ) -> ToolExecutionResult:
            return await next_()

        registry.on_execute(wrap)
    signal = CancelSignal()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(abort_after, signal, 1)
        results = await run_tool_calls(registry, [call("a", d=5), call("b")], signal=signal)
    assert log.ids("start") == ["a"]
    assert results[0].error is not None
    assert results[0].error.code == "ABORTED"
    assert results[1] == ABORTED_BEFORE_DISPATCH
    assert registry.statistics().waiting == 0
    with trio.fail_after(10):
        (after,) = await run_tool_calls(registry, [call("c")])
    assert text(after) == "lim:c"


@no_deadlock
async def test_abort_while_holding_the_token_and_waiting_for_a_slot(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The token arrives, the pool is full, then the abort: the body never runs."""
    log = Log()
    registry = registry_with(limited(log, limit=1), limited(log, "other", None))

    async def wrap(
        view: ToolDispatchExecution, next_: Callable[[], Awaitable[ToolExecutionResult]]
    ) -> ToolExecutionResult:
        return await next_()

    registry.on_execute(wrap)  # every call runs under a scope of its own
    signal = CancelSignal()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(run_tool_calls, registry, [call("held", d=1)])
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(abort_after, signal, 2)
        results = await run_tool_calls(
            registry,
            [call("l"), call("o1", "other", 5), call("o2", "other", 5)],
            signal=signal,
            max_parallel=2,
        )
    assert results[0] == ABORTED_BEFORE_DISPATCH
    assert "l" not in log.ids("start")
    assert registry._compiler._limiters["lim"].borrowed_tokens == 0


@no_deadlock
async def test_abort_of_a_direct_execute_waiting_for_the_token(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """execute(): the caller's signal ends the wait with ABORTED_BEFORE_DISPATCH."""
    log = Log()
    registry = registry_with(limited(log, limit=1))
    signal = CancelSignal()
    outcomes: dict[str, ToolExecutionResult] = {}

    async def run(call_id: str, signal: CancelSignal) -> None:
        outcomes[call_id] = await registry.execute(
            ToolExecutionInput(call_id, "lim", {"d": 2}, signal)
        )

    async with trio.open_nursery() as nursery:
        nursery.start_soon(run, "holder", CancelSignal())
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(run, "waiter", signal)
        await trio.sleep(1)
        assert registry.statistics().waiting == 1
        signal.cancel("stop")
    assert outcomes["waiter"] == ABORTED_BEFORE_DISPATCH
    assert text(outcomes["holder"]) == "lim:holder"
    assert log.ids("start") == ["holder"]
    assert registry.statistics().waiting == 0


@no_deadlock
async def test_the_wait_for_the_token_counts_against_the_timeout(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The timeout wrapper encloses dispatch: a call stuck behind its limit times out.

    The policy is installed on a scope, so only the waiting call has a deadline.
    """
    log = Log()
    registry = registry_with(msgspec.structs.replace(limited(log, limit=1), timeout_ms=1500))
    scope = registry.scope()
    install_timeout_policy(scope)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(registry.execute, ToolExecutionInput("holder", "lim", {"d": 5}))
        await trio.testing.wait_all_tasks_blocked()
        (result,) = await run_tool_calls(registry, [call("late")], agent=scope)
        assert trio.current_time() - log.t0 == 1.5  # the budget, not the holder's 5 s
    assert result.error is not None
    assert result.error.code == "TOOL_TIMEOUT"
    assert log.ids("start") == ["holder"]


@no_deadlock
async def test_an_enclosing_cancel_scope_while_waiting_leaks_no_token(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Cancelled from outside mid-wait: Cancelled propagates; the limiter is free after."""
    log = Log()
    registry = registry_with(limited(log, limit=1))
    with trio.move_on_after(1) as scope:
        await run_tool_calls(registry, [call("a", d=5), call("b")])
    assert scope.cancelled_caught
    assert registry.statistics().waiting == 0
    assert registry._compiler._limiters["lim"].borrowed_tokens == 0
    stats = registry.statistics()
    assert (stats.started, stats.committed, stats.abandoned, stats.in_flight) == (2, 0, 2, 0)


@no_deadlock
async def test_streaming_calls_of_a_limited_tool(autojump_clock: trio.testing.MockClock) -> None:
    """open_tool_batch: later submissions queue behind the limit, results in model order."""
    log = Log()
    registry = registry_with(limited(log, limit=1))
    async with open_tool_batch(registry) as batch:
        for i in range(3):
            batch.submit(call(f"c{i}"))
            await trio.sleep(0.25)
        batch.close()
        pairs = [(c.id, text(r)) async for c, r in batch]
    assert pairs == [(f"c{i}", f"lim:c{i}") for i in range(3)]
    assert [log.at("start", f"c{i}") for i in range(3)] == [0, 1, 2]


@pytest.mark.spec("B126")
@pytest.mark.parametrize("where", ["batch", "execute"])
@no_deadlock
async def test_abort_while_a_retry_attempt_waits_for_the_token_is_aborted(
    autojump_clock: trio.testing.MockClock, where: str
) -> None:
    """B126 (issue 10, defect 7): the body ran in the first attempt, so an abort that
    reaches the second attempt while it waits for the tool's token is ABORTED."""
    from toolnursery import ToolError, install_retry_policy

    attempts: dict[str, int] = {}

    async def body(args: Any, ctx: ToolRunContext) -> str:
        attempts[ctx.call_id] = attempts.get(ctx.call_id, 0) + 1
        if ctx.call_id == "c1":
            await trio.sleep(0.1)
            raise ToolError("flaky", code="FLAKY")
        await trio.sleep(10)  # holds the only token through c1's backoff and beyond
        return "held"

    registry = ToolRegistry()
    registry.register(
        ToolDefinition(
            "t",
            "t",
            {"type": "object"},
            body,
            is_concurrency_safe=lambda args: True,
            idempotent=True,
            max_concurrency=1,
        )
    )
    install_retry_policy(registry, codes=["FLAKY"], backoff_ms=100, jitter=0)
    signal = CancelSignal()
    results: dict[str, ToolExecutionResult] = {}
    async with trio.open_nursery() as nursery:

        async def abort() -> None:
            await trio.sleep(1)
            signal.cancel("stop")

        nursery.start_soon(abort)
        if where == "batch":
            c1, c2 = await run_tool_calls(
                registry, [ToolCall("c1", "t", "{}"), ToolCall("c2", "t", "{}")], signal=signal
            )
            results = {"c1": c1, "c2": c2}
        else:

            async def run(call_id: str, own: CancelSignal) -> None:
                results[call_id] = await registry.execute(ToolExecutionInput(call_id, "t", {}, own))

            nursery.start_soon(run, "c1", signal)
            await trio.sleep(0.05)  # c1 takes the token first
            nursery.start_soon(run, "c2", CancelSignal())
    assert attempts["c1"] == 1  # the second attempt never got the token
    assert results["c1"].error == ToolErrorInfo("AbortError", "ABORTED")
    assert results["c1"].content == (TextContent("Error: tool call aborted"),)
