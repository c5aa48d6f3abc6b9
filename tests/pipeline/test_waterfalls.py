"""The waterfalls of one call on their own: pre- and post-execute listeners, what a
decision becomes (approval included), and the result observers.

``test_pipeline.py`` checks them inside ``execute()``; here each function gets a frozen
execution and plain async listeners.
"""

from __future__ import annotations

import logging
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
    ToolExecution,
    ToolExecutionResult,
    ToolExecutionToken,
    ToolRegistry,
)
from toolnursery._core._outcomes import UnreachableError
from toolnursery._pipeline._waterfalls import (
    apply_post,
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
