"""Resuming a batch after a crash: the pure plan, then the runs that use it."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolnursery import (
    HookContext,
    InterruptedCallError,
    RecorderEvent,
    ResumeError,
    TextContent,
    ToolCall,
    ToolCallEvent,
    ToolExecutionResult,
    ToolResultEvent,
)
from toolnursery._outcomes import ABORTED_BEFORE_DISPATCH_RESULT, ABORTED_RESULT, _failure
from toolnursery._recorder import ContextEvent
from toolnursery._resume import plan_resume


def ok(text: str) -> ToolExecutionResult:
    return ToolExecutionResult((TextContent(text),), False)


CALLS = [ToolCall(f"c{i}", "write" if i % 2 else "read", f'{{"n": {i}}}') for i in range(6)]


def idempotent(call: ToolCall) -> bool:
    return call.name == "read"


def test_each_kind_of_call_gets_its_action() -> None:
    events: list[RecorderEvent] = [
        ToolCallEvent("old", 0, ToolCall("x", "read")),  # another batch, finished
        ToolResultEvent("old", 0, "x", ok("x")),
        ToolCallEvent("b", 0, CALLS[0]),
        ToolCallEvent("b", 1, CALLS[1]),
        ToolResultEvent("b", 0, "c0", ok("read 0")),
        ToolCallEvent("b", 2, CALLS[2]),  # read, started: runs again
        ToolCallEvent("b", 3, CALLS[3]),  # write, started: interrupted
        ToolResultEvent("b", 1, "c1", ok("wrote 1")),
        ToolCallEvent("b", 4, CALLS[4]),
        ToolResultEvent("b", 4, "c4", ABORTED_BEFORE_DISPATCH_RESULT),
        ContextEvent("b", 1, "c1", HookContext((TextContent("ctx"),), "tool")),
        # c5 never started
    ]
    plan = plan_resume(events, CALLS, idempotent)
    assert plan.batch_id == "b"
    assert [(e.action, e.started) for e in plan.calls] == [
        ("replay", True),
        ("replay", True),
        ("run", True),
        ("interrupted", True),
        ("run", True),
        ("run", False),
    ]
    assert plan.calls[0].result == ok("read 0")
    assert plan.calls[1].result == ToolExecutionResult(
        (TextContent("wrote 1"),), False, None, (HookContext((TextContent("ctx"),), "tool"),)
    )
    interrupted = plan.calls[3].result
    assert interrupted == _failure(InterruptedCallError("write"))
    assert interrupted.error is not None
    assert (interrupted.error.name, interrupted.error.code) == (
        "InterruptedCallError",
        "INTERRUPTED",
    )
    assert (plan.count("replay"), plan.count("run"), plan.count("interrupted")) == (2, 3, 1)


def test_an_aborted_result_reruns_only_an_idempotent_tool() -> None:
    events: list[RecorderEvent] = []
    for i in (0, 1):
        events += [
            ToolCallEvent("b", i, CALLS[i]),
            ToolResultEvent("b", i, f"c{i}", ABORTED_RESULT),
        ]
    plan = plan_resume(events, CALLS[:2], idempotent)
    assert [e.action for e in plan.calls] == ["run", "replay"]
    assert plan.calls[1].result == ABORTED_RESULT


def test_the_last_matching_batch_is_resumed_and_none_matching_runs_everything_fresh() -> None:
    events: list[RecorderEvent] = [
        ToolCallEvent("first", 0, CALLS[0]),
        ToolResultEvent("first", 0, "c0", ok("first")),
        ToolCallEvent("other", 0, ToolCall("zz", "read")),
        ToolCallEvent("second", 0, CALLS[0]),
    ]
    plan = plan_resume(events, CALLS[:1], idempotent)
    assert plan.batch_id == "second"
    assert plan.calls[0].action == "run"
    fresh = plan_resume(events, [ToolCall("new", "write")], idempotent)
    assert fresh.batch_id is None
    assert [(e.action, e.started) for e in fresh.calls] == [("run", False)]
    assert plan_resume([], CALLS, idempotent).count("run") == len(CALLS)


def test_a_named_batch_must_hold_these_calls() -> None:
    events: list[RecorderEvent] = [ToolCallEvent("b", 1, CALLS[2])]
    with pytest.raises(ResumeError, match='cannot resume batch "b": the log records call'):
        plan_resume(events, CALLS, idempotent, batch_id="b")
    with pytest.raises(ResumeError, match="at index 1, and there are 1 calls"):
        plan_resume(events, CALLS[:1], idempotent, batch_id="b")
    plan = plan_resume(events, CALLS, idempotent, batch_id="unrecorded")
    assert plan.batch_id == "unrecorded"
    assert plan.count("run") == len(CALLS)


# -- properties ------------------------------------------------------------------------

STATES = ["none", "started", "ok", "failed", "aborted", "aborted_before"]


@st.composite
def histories(draw: st.DrawFn) -> tuple[list[ToolCall], list[bool], list[str], list[Any]]:
    n = draw(st.integers(1, 8))
    calls = [ToolCall(f"c{i}", f"t{i}", "") for i in range(n)]
    flags = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    states = draw(st.lists(st.sampled_from(STATES), min_size=n, max_size=n))
    # A batch records starts in model order; results commit in model order too.
    events: list[RecorderEvent] = []
    for i, state in enumerate(states):
        if state != "none":
            events.append(ToolCallEvent("b", i, calls[i]))
    results = {
        "ok": ok("done"),
        "failed": ToolExecutionResult((TextContent("Error: no"),), True),
        "aborted": ABORTED_RESULT,
        "aborted_before": ABORTED_BEFORE_DISPATCH_RESULT,
    }
    for i, state in enumerate(states):
        if state in results:
            events.append(ToolResultEvent("b", i, f"c{i}", results[state]))
    cut = draw(st.integers(0, len(events)))  # a crash may have cut the log anywhere
    kept = events[:cut]
    return calls, flags, states, kept


@settings(max_examples=200)
@given(histories())
def test_a_plan_never_runs_a_side_effect_twice_and_loses_no_committed_result(
    history: tuple[list[ToolCall], list[bool], list[str], list[RecorderEvent]],
) -> None:
    calls, flags, _, events = history

    def is_idem(call: ToolCall) -> bool:
        return flags[calls.index(call)]

    plan = plan_resume(events, calls, is_idem)
    started = {e.index for e in events if isinstance(e, ToolCallEvent)}
    committed = {e.index: e.result for e in events if isinstance(e, ToolResultEvent)}
    assert [e.index for e in plan.calls] == list(range(len(calls)))
    for entry in plan.calls:
        i = entry.index
        result = committed.get(i)
        body_may_have_run = i in started and result != ABORTED_BEFORE_DISPATCH_RESULT
        if entry.action == "run" and body_may_have_run:
            assert flags[i], "a non-idempotent tool that may have run ran again"
        if result is not None and result.error is None:
            assert entry.action == "replay"
            assert entry.result == result
        if i not in started and result is None:
            assert entry.action == "run"
        if entry.action == "interrupted":
            assert i in started
            assert result is None
            assert not flags[i]

    # Resuming records what it does; resuming again then replays every call.
    after = list(events)
    for entry in plan.calls:
        if entry.action != "replay":
            after.append(ToolCallEvent(plan.batch_id or "new", entry.index, entry.call))
            final = entry.result if entry.result is not None else ok(f"ran {entry.index}")
            after.append(ToolResultEvent(plan.batch_id or "new", entry.index, entry.call.id, final))
    again = plan_resume(after, calls, is_idem)
    assert again.count("replay") == len(calls)
    for first, second in zip(plan.calls, again.calls, strict=True):
        assert second.result == (first.result or ok(f"ran {first.index}"))
