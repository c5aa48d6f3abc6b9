"""The waterfalls of one call on their own: pre- and post-execute listeners, what a
decision becomes (approval included), and the result observers.

``test_pipeline.py`` checks them inside ``execute()``; here each function gets a frozen
execution and plain async listeners.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import trio
import trio.testing

from support import context, text
from toolnursery import (
    TOOL_ABORTED_BEFORE_DISPATCH,
    Accept,
    Allow,
    ApprovalRequest,
    Ask,
    Block,
    CancelSignal,
    Deny,
    TextContent,
    ToolCall,
    ToolDefinition,
    ToolExecution,
    ToolExecutionInput,
    ToolExecutionResult,
    ToolExecutionToken,
    ToolRegistry,
    open_tool_batch,
    run_tool_calls,
)
from toolnursery._core._outcomes import UnreachableError
from toolnursery._pipeline._waterfalls import (
    Suspended,
    apply_post,
    first_step,
    notify,
    resolve_decision,
    run_post,
    run_pre,
)

RESULT = ToolExecutionResult((TextContent("body"),), False, meta={"m": 1})


def execution(*, agent: bool = True, signal: CancelSignal | None = None) -> ToolExecution:
    scope = ToolRegistry().scope() if agent else None
    return ToolExecution(
        "c1", "edit", {"path": "a"}, signal or CancelSignal(), scope, None, ToolExecutionToken()
    )


# -- pre-execute -------------------------------------------------------------------------


async def test_with_no_more_listeners_next_allows() -> None:
    log: list[str] = []

    async def first(execution: ToolExecution, next_: Callable[[], Awaitable[Any]]) -> Any:
        log.append("first")
        return await next_()

    async def second(execution: ToolExecution, next_: Callable[[], Awaitable[Any]]) -> Any:
        log.append("second")
        decision = await next_()
        log.append(f"after {type(decision).__name__}")
        return decision

    assert await run_pre((first,), execution()) == Allow()
    assert await run_pre((first, second), execution()) == Allow()
    assert log == ["first", "first", "second", "after Allow"]


async def test_listeners_run_in_order_and_one_may_decide_for_the_rest() -> None:
    log: list[str] = []

    def listener(name: str, decision: Any = None) -> Any:
        async def pre(execution: ToolExecution, next_: Callable[[], Awaitable[Any]]) -> Any:
            log.append(f"{name} sees {execution.call_id}")
            return decision if decision is not None else await next_()

        return pre

    decided = await run_pre((listener("a"), listener("b", Deny("no")), listener("c")), execution())
    assert decided == Deny("no")
    assert log == ["a sees c1", "b sees c1"]  # c never runs


async def test_a_listener_may_change_the_decision_of_those_after_it() -> None:
    async def overrules(execution: ToolExecution, next_: Callable[[], Awaitable[Any]]) -> Any:
        later = await next_()
        return Allow() if later == Ask("why") else Deny("unexpected")

    async def asks(execution: ToolExecution, next_: Callable[[], Awaitable[Any]]) -> Any:
        return Ask("why")

    assert await run_pre((overrules, asks), execution()) == Allow()


async def test_a_single_listener_is_awaited_as_its_own_coroutine() -> None:
    async def only(execution: ToolExecution, next_: Callable[[], Awaitable[Any]]) -> Any:
        return Ask()

    awaitable = run_pre((only,), execution())
    assert getattr(awaitable, "__qualname__", "").endswith("only")
    assert await awaitable == Ask()


async def test_calling_next_twice_runs_the_following_listeners_once_each() -> None:
    log: list[str] = []

    async def twice(execution: ToolExecution, next_: Callable[[], Awaitable[Any]]) -> Any:
        await next_()
        return await next_()

    async def counts(execution: ToolExecution, next_: Callable[[], Awaitable[Any]]) -> Any:
        log.append("counts")
        return await next_()

    assert await run_pre((twice, counts), execution()) == Allow()
    assert log == ["counts"]


# -- what a pre-execute decision becomes ----------------------------------------------------


class Approval:
    def __init__(self, outcome: str, *, fire: CancelSignal | None = None) -> None:
        self.outcome = outcome
        self.fire = fire
        self.requests: list[ApprovalRequest] = []

    async def request(self, request: ApprovalRequest) -> Any:
        self.requests.append(request)
        await trio.lowlevel.checkpoint()
        if self.fire is not None:
            self.fire.cancel("stop")
        return self.outcome


async def test_deny_becomes_an_error_with_its_reason() -> None:
    result = await resolve_decision(Deny("not today"), execution(), None)
    assert result is not None
    assert result.is_error
    assert text(result) == "Error: not today"


@pytest.mark.parametrize(
    ("decision", "expected"),
    [
        (Ask(), 'Error: tool "edit" requires approval (not yet supported)'),
        (Ask("a human must look"), "Error: a human must look"),
    ],
)
async def test_ask_without_an_approval_service_is_refused(decision: Ask, expected: str) -> None:
    result = await resolve_decision(decision, execution(), None)
    assert result is not None
    assert text(result) == expected


async def test_ask_without_an_agent_is_refused_before_asking() -> None:
    approval = Approval("allowed-once")
    result = await resolve_decision(Ask(), execution(agent=False), approval)
    assert result is not None
    assert text(result) == (
        'Error: tool "edit" requires approval, but the call has no agent to route it through'
    )
    assert approval.requests == []


@pytest.mark.parametrize(
    ("outcome", "expected"),
    [
        ("allowed-once", None),
        ("rejected", 'Error: the user rejected tool "edit"'),
        ("cancelled", 'Error: approval for tool "edit" was cancelled'),
        (
            "unavailable",
            'Error: tool "edit" requires approval, but no approval channel is available',
        ),
    ],
)
async def test_each_approval_outcome(outcome: str, expected: str | None) -> None:
    approval = Approval(outcome)
    call = execution()
    result = await resolve_decision(Ask("check"), call, approval)
    assert (None if result is None else text(result)) == expected
    (request,) = approval.requests
    assert request == ApprovalRequest(call.agent, "edit", "c1", "check", call.signal)  # type: ignore[arg-type]


@pytest.mark.parametrize("outcome", ["allowed-once", "cancelled"])
async def test_an_abort_during_approval_wins_over_allowed_and_cancelled(outcome: str) -> None:
    signal = CancelSignal()
    result = await resolve_decision(Ask(), execution(signal=signal), Approval(outcome, fire=signal))
    assert result is not None
    assert result.error is not None
    assert result.error.code == TOOL_ABORTED_BEFORE_DISPATCH


async def test_a_rejection_stays_a_rejection_after_an_abort() -> None:
    signal = CancelSignal()
    result = await resolve_decision(
        Ask(), execution(signal=signal), Approval("rejected", fire=signal)
    )
    assert result is not None
    assert text(result) == 'Error: the user rejected tool "edit"'


async def test_unknown_decisions_and_outcomes_are_unreachable() -> None:
    with pytest.raises(UnreachableError, match='unreachable variant in PreToolDecision: "allow"'):
        await resolve_decision("allow", execution(), None)
    with pytest.raises(UnreachableError, match='unreachable variant in ApprovalOutcome: "maybe"'):
        await resolve_decision(Ask(), execution(), Approval("maybe"))


# -- post-execute ----------------------------------------------------------------------------


async def test_post_listeners_see_the_result_and_next_accepts_at_the_end() -> None:
    seen: list[tuple[str, str]] = []

    def listener(name: str) -> Any:
        async def post(
            execution: ToolExecution,
            result: ToolExecutionResult,
            next_: Callable[[], Awaitable[Any]],
        ) -> Any:
            seen.append((name, text(result)))
            return await next_()

        return post

    assert await run_post((listener("a"),), execution(), RESULT) == Accept()
    assert await run_post((listener("b"), listener("c")), execution(), RESULT) == Accept()
    assert seen == [("a", "body"), ("b", "body"), ("c", "body")]


async def test_a_post_listener_may_block_before_the_rest_run() -> None:
    ran: list[str] = []

    async def blocks(execution: ToolExecution, result: Any, next_: Any) -> Any:
        return Block([TextContent("blocked")])

    async def later(execution: ToolExecution, result: Any, next_: Any) -> Any:
        ran.append("later")
        return await next_()

    assert await run_post((blocks, later), execution(), RESULT) == Block([TextContent("blocked")])
    assert ran == []


def test_a_plain_accept_keeps_the_result_itself() -> None:
    assert apply_post(Accept(), RESULT) is RESULT


def test_accept_replaces_content_and_appends_contexts() -> None:
    earlier = ToolExecutionResult(
        (TextContent("body"),), False, meta={"m": 1}, additional_contexts=(context("first"),)
    )
    replaced = apply_post(Accept([TextContent("new")], [context("second")]), earlier)
    assert [block.text for block in replaced.content] == ["new"]  # type: ignore[union-attr]
    assert replaced.additional_contexts == (context("first"), context("second"))
    assert replaced.meta == {"m": 1}
    assert not replaced.is_error
    emptied = apply_post(Accept([]), earlier)
    assert emptied.content == ()
    only_contexts = apply_post(Accept(additional_contexts=[context("x")]), earlier)
    assert only_contexts.content == earlier.content
    assert earlier.additional_contexts == (context("first"),)  # the original is unchanged


def test_block_makes_an_error_of_the_feedback_alone() -> None:
    earlier = ToolExecutionResult(
        (TextContent("body"),), False, meta={"m": 1}, additional_contexts=(context("first"),)
    )
    blocked = apply_post(Block([TextContent("not allowed")], [context("why")]), earlier)
    assert blocked == ToolExecutionResult(
        (TextContent("not allowed"),), True, additional_contexts=(context("why"),)
    )


def test_an_unknown_post_decision_is_unreachable() -> None:
    with pytest.raises(UnreachableError, match="PostToolDecision"):
        apply_post(Allow(), RESULT)


# -- observers --------------------------------------------------------------------------------


def test_observers_run_in_order_and_a_failing_one_is_logged_and_skipped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    seen: list[str] = []

    def first(execution: ToolExecution, result: ToolExecutionResult) -> None:
        seen.append("first " + text(result))

    def broken(execution: ToolExecution, result: ToolExecutionResult) -> None:
        raise RuntimeError("observer bug")

    def last(execution: ToolExecution, result: ToolExecutionResult) -> str:
        seen.append("last")
        return "ignored"

    with caplog.at_level(logging.WARNING, logger="toolnursery"):
        notify((first, broken, last), execution(), RESULT)
    assert seen == ["first body", "last"]
    assert [r.getMessage() for r in caplog.records] == [
        'tool "edit" (c1): tools/result observer failed: observer bug'
    ]


async def test_an_async_observer_is_refused_and_its_coroutine_closed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ran: list[str] = []

    async def asynchronous(execution: ToolExecution, result: ToolExecutionResult) -> None:
        ran.append("ran")  # pragma: no cover (never awaited)

    class Later:
        def __await__(self) -> Any:
            return iter(())

    with caplog.at_level(logging.WARNING, logger="toolnursery"):
        notify((asynchronous, lambda execution, result: Later()), execution(), RESULT)
        await trio.testing.wait_all_tasks_blocked()
    assert ran == []
    assert [r.getMessage() for r in caplog.records] == [
        'tool "edit" (c1): tools/result observer failed: '
        "observer returned an awaitable; observers must be synchronous"
    ] * 2


# -- the grace after an abort ------------------------------------------------------------


def grace_registry(*, grace: float | None = None) -> ToolRegistry:
    registry = ToolRegistry() if grace is None else ToolRegistry(hook_abort_grace=grace)

    async def body(args: Any, ctx: Any) -> str:
        return "ran"

    registry.register(ToolDefinition("t", "t", {"type": "object"}, body))
    return registry


async def abort_after(signal: CancelSignal, seconds: float) -> None:
    await trio.sleep(seconds)
    signal.cancel("stop")


def late_denial(after_abort: float, seen: list[str]) -> Callable[..., Awaitable[Any]]:
    """A pre-execute listener that ignores the abort and denies ``after_abort`` s later."""

    async def listener(execution: ToolExecution, next_: Callable[[], Awaitable[Any]]) -> Any:
        await execution.signal.wait()
        try:
            await trio.sleep(after_abort)
        except trio.Cancelled:
            seen.append(f"cancelled at {trio.current_time():.2f}")
            raise
        seen.append("denied")
        return Deny("too late?")

    return listener


@pytest.mark.spec("B118")
@pytest.mark.parametrize(
    ("after_abort", "expected"),
    [(0.999, "Error: too late?"), (1.001, "ABORTED_BEFORE_DISPATCH")],
)
async def test_a_denial_just_inside_the_grace_wins_and_one_past_it_is_cancelled(
    autojump_clock: trio.testing.MockClock, after_abort: float, expected: str
) -> None:
    registry = grace_registry()
    assert registry.hook_abort_grace == 1.0  # the default
    seen: list[str] = []
    registry.on_pre_execute(late_denial(after_abort, seen))
    signal = CancelSignal()
    begun = trio.current_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(abort_after, signal, 2)
        result = await registry.execute(ToolExecutionInput("c1", "t", {}, signal))
    ended = trio.current_time() - begun
    if expected.startswith("Error"):
        assert (text(result), result.error) == (expected, None)
        assert seen == ["denied"]
        assert ended == pytest.approx(2 + after_abort)
    else:
        assert result.error is not None
        assert result.error.code == expected
        assert seen == [f"cancelled at {begun + 3:.2f}"]  # at the abort plus the grace
        assert ended == pytest.approx(3)


@pytest.mark.parametrize("phase", ["pre_execute", "approval", "post_execute"])
async def test_a_hook_ignoring_an_abort_of_one_execute_is_cancelled_after_the_grace(
    autojump_clock: trio.testing.MockClock, phase: str
) -> None:
    seen: list[str] = []

    async def stubborn() -> None:
        try:
            await trio.sleep_forever()
        except trio.Cancelled:
            seen.append(phase)
            raise

    class Approval:
        async def request(self, request: ApprovalRequest, /) -> Any:
            await stubborn()

    registry = ToolRegistry(Approval(), hook_abort_grace=0.25)
    started = trio.Event()

    async def body(args: Any, ctx: Any) -> str:
        started.set()
        if phase == "post_execute":
            await ctx.signal.wait()
        return "ran"

    registry.register(ToolDefinition("t", "t", {"type": "object"}, body))

    async def pre(execution: ToolExecution, next_: Callable[[], Awaitable[Any]]) -> Any:
        if phase == "pre_execute":
            await stubborn()
        return Ask("needs a yes") if phase == "approval" else await next_()

    async def post(execution: ToolExecution, result: Any, next_: Callable[[], Any]) -> Any:
        if phase == "post_execute":
            await stubborn()
        return await next_()

    registry.on_pre_execute(pre)
    registry.on_post_execute(post)
    signal = CancelSignal()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(abort_after, signal, 1)
        begun = trio.current_time()
        result = await registry.execute(
            ToolExecutionInput("c1", "t", {}, signal, agent=registry.scope())
        )
    assert trio.current_time() - begun == pytest.approx(1.25)
    assert seen == [phase]
    assert result.error is not None
    code = "ABORTED" if phase == "post_execute" else TOOL_ABORTED_BEFORE_DISPATCH
    assert result.error.code == code
    assert started.is_set() == (phase == "post_execute")
    stats = registry.statistics()
    assert (stats.started, stats.committed, stats.in_flight) == (1, 1, 0)


async def test_the_batch_grace_beats_the_registrys(autojump_clock: trio.testing.MockClock) -> None:
    registry = grace_registry(grace=30)
    assert registry.hook_abort_grace == 30.0
    seen: list[str] = []
    registry.on_pre_execute(late_denial(10, seen))
    signal = CancelSignal()
    calls = [ToolCall("c1", "t", "{}"), ToolCall("c2", "t", "{}")]
    async with trio.open_nursery() as nursery:
        nursery.start_soon(abort_after, signal, 1)
        begun = trio.current_time()
        results = await run_tool_calls(registry, calls, signal=signal, hook_abort_grace=0.5)
    assert trio.current_time() - begun == pytest.approx(1.5)
    assert [r.error.code if r.error else r.text for r in results] == [
        TOOL_ABORTED_BEFORE_DISPATCH,
        TOOL_ABORTED_BEFORE_DISPATCH,
    ]
    assert len(seen) == 1
    assert seen[0].startswith("cancelled")
    # The registry's own grace (30 s) lets the denial through; and the streaming form.
    seen.clear()
    signal = CancelSignal()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(abort_after, signal, 1)
        async with open_tool_batch(registry, signal=signal) as batch:
            batch.submit(calls[0])
            batch.close()
    assert seen == ["denied"]
    assert batch.results[0].text == "Error: too late?"
    registry.hook_abort_grace = 0
    seen.clear()
    signal = CancelSignal()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(abort_after, signal, 1)
        begun = trio.current_time()
        async with open_tool_batch(registry, signal=signal, hook_abort_grace=2) as batch:
            batch.submit(calls[0])
            batch.close()
    assert trio.current_time() - begun == pytest.approx(3)
    assert batch.results[0].error is not None


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        (-0.5, ValueError, "hook_abort_grace must be a number of seconds of at least 0, got -0.5"),
        (float("nan"), ValueError, "got nan"),
        (-math.inf, ValueError, "got -inf"),
        ("1", TypeError, "hook_abort_grace must be a number of seconds, not str"),
        (True, TypeError, "not bool"),
        (None, TypeError, "not NoneType"),
    ],
)
async def test_an_invalid_grace_is_refused(
    value: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=re.escape(message)):
        ToolRegistry(hook_abort_grace=value)
    registry = grace_registry()
    with pytest.raises(error, match=re.escape(message)):
        registry.hook_abort_grace = value
    assert registry.hook_abort_grace == 1.0
    if value is None:
        return  # None is a batch's "the registry's grace"
    with pytest.raises(error, match=re.escape(message)):
        await run_tool_calls(registry, [ToolCall("c1", "t", "{}")], hook_abort_grace=value)
    with pytest.raises(error, match=re.escape(message)):
        async with open_tool_batch(registry, hook_abort_grace=value):
            pass  # pragma: no cover
    assert ToolRegistry(hook_abort_grace=0).hook_abort_grace == 0.0
    assert ToolRegistry(hook_abort_grace=math.inf).hook_abort_grace == math.inf


async def test_a_hook_that_catches_cancelled_cannot_wait_past_the_grace(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """As trio code in a cancelled scope: every later wait is cancelled at once, a
    shield inside the hook included; an answer it still gives counts."""
    seen: list[str] = []

    async def stubborn(execution: ToolExecution, next_: Callable[[], Awaitable[Any]]) -> Any:
        for attempt in range(3):
            try:
                if attempt == 2:
                    with trio.CancelScope(shield=True):
                        await trio.sleep(100)
                else:
                    await trio.sleep(100)
            except trio.Cancelled:
                seen.append(f"cancelled at {trio.current_time():.2f}")
        return Deny("still here")

    registry = grace_registry()
    registry.on_pre_execute(stubborn)
    signal = CancelSignal()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(abort_after, signal, 1)
        begun = trio.current_time()
        result = await registry.execute(ToolExecutionInput("c1", "t", {}, signal))
    assert seen == [f"cancelled at {begun + 2:.2f}"] * 3
    assert result.text == "Error: still here"

    async def reraises(execution: ToolExecution, next_: Callable[[], Awaitable[Any]]) -> Any:
        try:
            await trio.sleep(100)
        except trio.Cancelled:
            await trio.sleep(100)  # cancelled again, at once: this Cancelled goes out
        raise AssertionError  # pragma: no cover

    registry = grace_registry()
    registry.on_pre_execute(reraises)
    signal = CancelSignal()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(abort_after, signal, 1)
        begun = trio.current_time()
        result = await registry.execute(ToolExecutionInput("c1", "t", {}, signal))
    assert trio.current_time() - begun == pytest.approx(2)
    assert result.error is not None
    assert result.error.code == TOOL_ABORTED_BEFORE_DISPATCH


async def test_an_enclosing_cancellation_still_passes_through_a_hook(
    autojump_clock: trio.testing.MockClock,
) -> None:
    entered = trio.Event()

    async def slow(execution: ToolExecution, next_: Callable[[], Awaitable[Any]]) -> Any:
        entered.set()
        await trio.sleep(100)
        return await next_()  # pragma: no cover

    registry = grace_registry(grace=0)
    registry.on_pre_execute(slow)
    signal = CancelSignal()
    with trio.CancelScope() as scope:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(registry.execute, ToolExecutionInput("c1", "t", {}, signal))
            await entered.wait()
            signal.cancel("and")
            scope.cancel()  # both at once: the enclosing scope's Cancelled goes out
    assert scope.cancelled_caught
    assert registry.statistics().abandoned == 1


async def test_a_phase_that_does_not_suspend_answers_as_it_would_awaited() -> None:
    async def denies() -> Any:
        return Deny("no")

    class Awaitable_:
        def __await__(self) -> Any:
            return denies().__await__()

    assert first_step(denies()) == Deny("no")
    assert first_step(Awaitable_()) == Deny("no")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="object Deny can't be used in 'await' expression"):
        first_step(Deny("no"))  # type: ignore[arg-type]

    async def suspends() -> Any:
        await trio.lowlevel.checkpoint()
        return Allow()

    suspended = first_step(suspends())
    assert isinstance(suspended, Suspended)
    assert await suspended.rest(CancelSignal(), 1.0) == Allow()
