"""Scheduler invariants over random batches (hypothesis, on a mock clock).

Each example is a whole batch script: calls that are ``parallel`` or ``exclusive``,
with random durations, bodies that raise, calls a pre-execute listener denies (some
after a delay), a random cap, maybe an execute wrapper, and maybe an abort at a random
moment; run either with ``run_tool_calls`` or streamed into ``open_tool_batch``. Every example runs in its own
``trio.run`` on a ``MockClock(autojump_threshold=0)``, so time is exact and free.

Invariants: one result per call, in model order; no exclusive body overlaps any other
body; never more than ``max_parallel`` bodies at once; pre-execute and post-execute
see model order; nothing is running after return; calls the abort prevented from
starting are synthetic ``ABORTED_BEFORE_DISPATCH`` results, and only those.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from support import code, live_tasks, text
from toolnursery import (
    Accept,
    CancelSignal,
    Deny,
    HookContext,
    TextContent,
    ToolCall,
    ToolDefinition,
    ToolDispatchExecution,
    ToolErrorInfo,
    ToolExecution,
    ToolExecutionResult,
    ToolRegistry,
    ToolRunContext,
    open_tool_batch,
    run_tool_calls,
)
from toolnursery._core._decisions import PostToolDecision, PreToolDecision
from toolnursery.log import ContextEvent, RecorderEvent, ToolCallEvent, ToolResultEvent

ABORTED_BEFORE_DISPATCH = ToolExecutionResult(
    (TextContent("Error: tool call aborted before dispatch"),),
    True,
    ToolErrorInfo("AbortError", "ABORTED_BEFORE_DISPATCH"),
)
PRE_DELAY = 0.25


@dataclass(frozen=True)
class Spec:
    exclusive: bool
    duration: float
    fate: str  # "ok" | "raise" | "deny"
    pre_delay: float
    submit_delay: float


@dataclass(frozen=True)
class Script:
    specs: tuple[Spec, ...]
    cap: int
    abort_at: float | None
    streaming: bool
    wrapped: bool  # an execute wrapper: bodies run under a scope of their own


specs = st.builds(
    Spec,
    exclusive=st.booleans(),
    duration=st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0]),
    fate=st.sampled_from(["ok", "ok", "raise", "deny"]),
    pre_delay=st.sampled_from([0.0, 0.0, PRE_DELAY]),
    submit_delay=st.sampled_from([0.0, 0.0, 0.5]),
)
scripts = st.builds(
    Script,
    specs=st.lists(specs, max_size=12).map(tuple),
    cap=st.integers(1, 5),
    abort_at=st.none() | st.sampled_from([0.0, 0.1, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 5.0]),
    streaming=st.booleans(),
    wrapped=st.booleans(),
)


class BoomError(Exception):
    pass


class World:
    """The registry for one example, and everything its hooks and bodies observed."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.calls = [
            ToolCall(
                f"c{i}",
                "x" if spec.exclusive else "p",
                json.dumps({"d": spec.duration, "fate": spec.fate}),
            )
            for i, spec in enumerate(script.specs)
        ]
        self.spec = {c.id: s for c, s in zip(self.calls, script.specs, strict=True)}
        self.bodies: list[tuple[str, str]] = []  # ("start" | "end" | "cancelled", call id)
        self.live: set[str] = set()
        self.pre: list[str] = []
        self.post: list[str] = []
        self.events: list[tuple[RecorderEvent, float]] = []
        self.registry = ToolRegistry()
        for name, parallel in (("p", True), ("x", False)):
            self.registry.register(
                ToolDefinition(
                    name,
                    name,
                    {"type": "object"},
                    self.body,
                    is_concurrency_safe=(lambda args: True) if parallel else None,
                )
            )
        self.registry.on_pre_execute(self.pre_execute)
        self.registry.on_post_execute(self.post_execute)
        if script.wrapped:
            self.registry.on_execute(self.wrapper)

    async def body(self, args: Any, ctx: ToolRunContext) -> str:
        call_id = ctx.call_id
        self.bodies.append(("start", call_id))
        self.live.add(call_id)
        completed = False
        try:
            await trio.sleep(args["d"])
            completed = True
        finally:
            self.live.discard(call_id)
            self.bodies.append(("end" if completed else "cancelled", call_id))
        if args["fate"] == "raise":
            raise BoomError(f"boom {call_id}")
        return f"ok:{call_id}"

    async def pre_execute(
        self, execution: ToolExecution, next_: Callable[[], Awaitable[PreToolDecision]]
    ) -> PreToolDecision:
        spec = self.spec[execution.call_id]
        self.pre.append(execution.call_id)
        if spec.pre_delay:
            await trio.sleep(spec.pre_delay)
        if spec.fate == "deny":
            return Deny(f"denied {execution.call_id}")
        return await next_()

    async def wrapper(
        self,
        view: ToolDispatchExecution,
        next_: Callable[[], Awaitable[ToolExecutionResult]],
    ) -> ToolExecutionResult:
        return await next_()

    async def post_execute(
        self,
        execution: ToolExecution,
        result: ToolExecutionResult,
        next_: Callable[[], Awaitable[PostToolDecision]],
    ) -> PostToolDecision:
        self.post.append(execution.call_id)
        context = HookContext((TextContent(f"ctx-{execution.call_id}"),), "policy")
        return Accept(additional_contexts=(context,))

    def record(self, event: RecorderEvent, /) -> None:
        self.events.append((event, trio.current_time()))


async def run_batch(world: World, signal: CancelSignal) -> list[ToolExecutionResult]:
    script = world.script
    if not script.streaming:
        return await run_tool_calls(
            world.registry,
            world.calls,
            signal=signal,
            max_parallel=script.cap,
            recorder=world,
        )
    async with open_tool_batch(
        world.registry, signal=signal, max_parallel=script.cap, recorder=world
    ) as batch:
        for tool_call, spec in zip(world.calls, script.specs, strict=True):
            if spec.submit_delay:
                await trio.sleep(spec.submit_delay)
            batch.submit(tool_call)
        batch.close()
        pairs = [(c, r) async for c, r in batch]
    assert [c for c, _ in pairs] == world.calls
    return [r for _, r in pairs]


async def cancel_at(signal: CancelSignal, when: float) -> None:
    await trio.sleep(when)
    signal.cancel("abort")


async def check(script: Script) -> None:
    world = World(script)
    ids = [c.id for c in world.calls]
    signal = CancelSignal()
    before = live_tasks()
    async with trio.open_nursery() as nursery:
        if script.abort_at is not None:
            nursery.start_soon(cancel_at, signal, script.abort_at)
        results = await run_batch(world, signal)
        finished = trio.current_time()
        aborted = signal.cancelled
        nursery.cancel_scope.cancel()

    # Quiescence: no body and no scheduler task outlives the call.
    assert world.live == set()
    assert live_tasks() == before

    # One result per call, in model order.
    assert len(results) == len(ids)

    # Bodies: exclusive ones overlap nothing; never more than the cap at once.
    running: set[str] = set()
    for kind, call_id in world.bodies:
        if kind == "start":
            if world.spec[call_id].exclusive:
                assert not running, (call_id, running)
            else:
                assert not any(world.spec[r].exclusive for r in running), (call_id, running)
            running.add(call_id)
            assert len(running) <= script.cap
        else:
            running.remove(call_id)
    assert not running

    # Prepare and commit in model order: the prepared calls are a prefix of the batch,
    # and every one of them (denials included) passes post-execute, in order.
    prepared = len(world.pre)
    assert world.pre == ids[:prepared]
    assert world.post == world.pre
    if not aborted:
        assert prepared == len(ids)

    started = {call_id for kind, call_id in world.bodies if kind == "start"}
    cancelled = {call_id for kind, call_id in world.bodies if kind == "cancelled"}
    for call_id, result in zip(ids, results, strict=True):
        spec = world.spec[call_id]
        if call_id not in world.pre:
            # Never started: synthetic, and only because of the abort.
            assert aborted
            assert result == ABORTED_BEFORE_DISPATCH
            continue
        if spec.fate == "deny":
            assert text(result) == f"Error: denied {call_id}"
            assert result.error is None
        elif call_id in cancelled:
            assert code(result) == "ABORTED"
        elif call_id not in started:
            assert aborted  # prepared, then the abort overtook dispatch
            assert code(result) == "ABORTED_BEFORE_DISPATCH"
        elif spec.fate == "raise":
            assert text(result) == f"Error: boom {call_id}"
        elif not aborted:
            assert text(result) == f"ok:{call_id}"
            assert not result.is_error
        else:
            # A success that committed after the abort is replaced by ABORTED.
            assert text(result) == f"ok:{call_id}" or code(result) == "ABORTED"
        assert [c.content for c in result.additional_contexts] == [(TextContent(f"ctx-{call_id}"),)]

    # Durable order: per call tool_call then tool_result, results in model order,
    # every context after the last result and in model order.
    kinds = [type(e).__name__ for e, _ in world.events]
    calls_logged = [e.index for e, _ in world.events if isinstance(e, ToolCallEvent)]
    results_logged = [e.index for e, _ in world.events if isinstance(e, ToolResultEvent)]
    assert calls_logged == list(range(len(ids)))
    assert results_logged == list(range(len(ids)))
    position = {
        (type(e).__name__, getattr(e, "index", None)): i
        for i, (e, _) in enumerate(world.events)
        if not isinstance(e, ContextEvent)
    }
    for index in range(len(ids)):
        assert position[("ToolCallEvent", index)] < position[("ToolResultEvent", index)]
    contexts = [e for e, _ in world.events if isinstance(e, ContextEvent)]
    assert [e.call_id for e in contexts] == world.post
    if contexts:
        assert kinds.index("ContextEvent") > max(
            i for i, k in enumerate(kinds) if k == "ToolResultEvent"
        )

    # Abort stops starting: a synthetic pair is recorded only after the abort, and
    # the batch ends no later than a pending pre-execute delay (or the last submission).
    if aborted:
        assert script.abort_at is not None
        for event, at in world.events:
            if isinstance(event, ToolCallEvent) and event.call.id not in world.pre:
                assert at >= script.abort_at
        last_submit = sum(s.submit_delay for s in script.specs) if script.streaming else 0.0
        assert finished <= max(script.abort_at + PRE_DELAY, last_submit)


@settings(max_examples=200, deadline=None)
@given(script=scripts)
def test_scheduler_invariants(script: Script) -> None:
    """Order, barriers, cap, one result per call, abort and quiescence on random batches."""
    trio.run(check, script, clock=trio.testing.MockClock(autojump_threshold=0))
