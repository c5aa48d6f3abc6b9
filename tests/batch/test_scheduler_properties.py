"""Scheduler invariants over random batches (hypothesis, on a mock clock).

Each example is a whole batch script: calls that are ``parallel`` or ``exclusive``,
with random durations, bodies that raise, calls a pre-execute listener denies (some
after a delay), a random cap, maybe an execute wrapper, and maybe an abort at a random
moment; run either with ``run_tool_calls`` or streamed into ``open_tool_batch``. Every example runs in its own
run of each driver (``tests/drivers.py``: ``trio.run`` on a ``MockClock(autojump_threshold=0)``,
or the native asyncio driver on a virtual-clock loop), so time is exact and free; the same
scripts also run on the batch machine alone, with no loop at all.

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

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drivers import DRIVERS, Driver, TrioDriver
from support import code, text
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
)
from toolnursery._core._decisions import PostToolDecision, PreToolDecision
from toolnursery._core._lifecycle import RESOLVED, Slot
from toolnursery._core._outcomes import failure_result
from toolnursery._machine._batch import INLINE, POOL, BatchMachine
from toolnursery._pipeline._call import CallRecord
from toolnursery._pipeline._dispatch import resolve_dispatch, settle_dispatch
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


def definitions_of(body: Any, driver: Driver | None = None) -> list[ToolDefinition]:
    """The script's two tools, ``p`` (parallel) and ``x`` (exclusive), running ``body``."""
    return [
        ToolDefinition(
            name,
            name,
            {"type": "object"},
            body if driver is None else driver.tool(body),
            is_concurrency_safe=(lambda args: True) if parallel else None,
        )
        for name, parallel in (("p", True), ("x", False))
    ]


TRIO = TrioDriver()


class World:
    """The registry for one example, and everything its hooks and bodies observed."""

    def __init__(self, script: Script, driver: Driver = TRIO) -> None:
        self.script = script
        self.driver = driver
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
        for definition in self.definitions():
            self.registry.register(definition)
        self.registry.on_pre_execute(self.pre_execute)
        self.registry.on_post_execute(self.post_execute)
        if script.wrapped:
            self.registry.on_execute(self.wrapper)

    def definitions(self) -> list[ToolDefinition]:
        return definitions_of(self.body, self.driver)

    async def body(self, args: Any, ctx: ToolRunContext) -> str:
        call_id = ctx.call_id
        self.bodies.append(("start", call_id))
        self.live.add(call_id)
        completed = False
        try:
            await self.driver.sleep(args["d"])
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
            await self.driver.sleep(spec.pre_delay)
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
        self.events.append((event, self.now()))

    def now(self) -> float:
        return self.driver.now()


async def run_batch(world: World, signal: CancelSignal) -> list[ToolExecutionResult]:
    script = world.script
    driver = world.driver
    if not script.streaming:
        return await driver.run_tool_calls(
            world.registry,
            world.calls,
            signal=signal,
            max_parallel=script.cap,
            recorder=world,
        )
    async with driver.open_tool_batch(
        world.registry, signal=signal, max_parallel=script.cap, recorder=world
    ) as batch:
        for tool_call, spec in zip(world.calls, script.specs, strict=True):
            if spec.submit_delay:
                await driver.sleep(spec.submit_delay)
            batch.submit(tool_call)
        batch.close()
        pairs = [(c, r) async for c, r in batch]
    assert [c for c, _ in pairs] == world.calls
    return [r for _, r in pairs]


async def cancel_at(driver: Driver, signal: CancelSignal, when: float | None) -> None:
    if when is None:
        await driver.sleep_forever()  # alive throughout: the task count stays put
    else:
        await driver.sleep(when)
        signal.cancel("abort")
        await driver.sleep_forever()


async def check(script: Script, driver: Driver) -> None:
    world = World(script, driver)
    ids = [c.id for c in world.calls]
    signal = CancelSignal()
    async with driver.background(cancel_at, driver, signal, script.abort_at):
        before = driver.tasks()
        results = await run_batch(world, signal)
        finished = driver.now()
        aborted = signal.cancelled
        # Quiescence: no body and no scheduler task outlives the call.
        assert driver.tasks() == before
    assert world.live == set()

    check_outcome(world, ids, results, aborted)

    # Abort stops starting: a synthetic pair is recorded only after the abort, and
    # the batch ends no later than a pending pre-execute delay (or the last submission).
    if aborted:
        assert script.abort_at is not None
        for event, at in world.events:
            if isinstance(event, ToolCallEvent) and event.call.id not in world.pre:
                assert at >= script.abort_at
        last_submit = sum(s.submit_delay for s in script.specs) if script.streaming else 0.0
        assert finished <= max(script.abort_at + PRE_DELAY, last_submit)


def check_outcome(
    world: World, ids: list[str], results: list[ToolExecutionResult], aborted: bool
) -> None:
    """What every run of a script keeps, through the trio driver or the machine alone."""
    script = world.script
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


@pytest.mark.parametrize("driver", DRIVERS, ids=str)
@settings(max_examples=200, deadline=None)
@given(script=scripts)
def test_scheduler_invariants(driver: Driver, script: Script) -> None:
    """Order, barriers, cap, one result per call, abort and quiescence on random batches,
    on each driver."""
    driver.run(check, script, driver)


# -- the same scripts on the batch machine alone ----------------------------------------


class MachineWorld(World):
    """A script's world for the batch machine with no event loop: the clock is the
    simulation's; the policy hooks decide without suspending (a suspending hook is the
    driver's to await, which the machine alone has not), the bodies are simulated."""

    def __init__(self, script: Script) -> None:
        self.clock = 0.0
        super().__init__(script)

    def now(self) -> float:
        return self.clock

    def definitions(self) -> list[ToolDefinition]:
        return SIMULATED  # the bodies never run here: the same definitions every example

    async def pre_execute(
        self, execution: ToolExecution, next_: Callable[[], Awaitable[PreToolDecision]]
    ) -> PreToolDecision:
        self.pre.append(execution.call_id)
        if self.spec[execution.call_id].fate == "deny":
            return Deny(f"denied {execution.call_id}")
        return await next_()


async def _never_runs(args: Any, ctx: ToolRunContext) -> str:
    raise AssertionError("the simulation runs no body")


SIMULATED = definitions_of(_never_runs)
WAIT = object()  # what the simulated driver yields where the trio driver awaits


class Simulation:
    """A synchronous driver of :class:`BatchMachine` over a discrete-event clock: the
    trio driver's schedule, with ``yield`` where that one awaits; bodies end at their
    durations' ends, submissions come at their delays, the abort at its time."""

    def __init__(self, world: MachineWorld, signal: CancelSignal) -> None:
        script = world.script
        self.world = world
        self.signal = signal
        self.machine = BatchMachine(
            world.registry, signal, None, script.cap, world, clock=world.now
        )
        self.running: dict[int, tuple[float, bool]] = {}  # index -> (ends at, pooled)

    def start_body(self, call: CallRecord, pooled: bool) -> None:
        world = self.world
        call.slot = Slot.RUNNING
        call.invoked = True
        world.bodies.append(("start", call.call_id))
        world.live.add(call.call_id)
        self.running[call.index] = (world.clock + world.spec[call.call_id].duration, pooled)

    def end_body(self, index: int, *, cancelled: bool) -> None:
        world, machine = self.world, self.machine
        call = machine.calls[index]
        _, pooled = self.running.pop(index)
        world.live.discard(call.call_id)
        world.bodies.append(("cancelled" if cancelled else "end", call.call_id))
        if cancelled:
            if pooled:
                call.unwind()
            else:
                call.resolve(call.aborted(), RESOLVED)
                call.slot = Slot.SETTLED
        else:
            if world.spec[call.call_id].fate == "raise":
                resolve_dispatch(call, failure_result(BoomError(f"boom {call.call_id}")))
            else:
                settle_dispatch(call, f"ok:{call.call_id}")
            call.slot = Slot.SETTLED
        if pooled:
            machine.settled(call)
        machine.admission.check()

    def begin(
        self, call: CallRecord, keys: tuple[Any, ...], inline: bool, barrier: bool = False
    ) -> Any:
        step = self.machine.start(call, keys, inline, barrier)
        assert isinstance(step, int)  # no hook here suspends
        if step == POOL:
            assert call.wait is None  # the driver starts a call only while one may run
            self.start_body(call, pooled=True)
        elif step == INLINE:
            self.start_body(call, pooled=False)
            while call.slot is not Slot.SETTLED:
                yield WAIT
        self.machine.admission.check()

    def drain(self) -> Any:
        machine = self.machine
        while True:
            assert machine.commit_now() is None  # no post-execute here suspends
            if machine.drained():
                return
            yield WAIT

    def schedule(self) -> Any:
        machine, signal = self.machine, self.signal
        calls = machine.calls
        i = 0
        while True:
            if i >= len(calls):
                if machine.closed:
                    return
                yield WAIT
                continue
            if signal.cancelled:
                return
            keys = machine.classify(calls[i])
            if keys is None:
                yield from self.begin(calls[i], (), True, True)
                i += 1
                yield from self.drain()
                continue
            yield from self.begin(calls[i], keys, machine.closed and i == len(calls) - 1)
            i += 1
            while True:
                assert machine.commit_now() is None
                if i >= len(calls):
                    if machine.closed:
                        return
                    yield WAIT
                    continue
                if signal.cancelled:
                    return
                if machine.full():
                    yield WAIT
                    continue
                keys = machine.classify(calls[i])
                if keys is None:
                    break
                alone = machine.closed and i == len(calls) - 1 and not machine.in_flight()
                yield from self.begin(calls[i], keys, alone)
                i += 1
            yield from self.drain()

    def run(self) -> Any:
        machine = self.machine
        yield from self.schedule()
        yield from self.drain()
        while True:
            machine.finish_unstarted()
            if machine.closed:
                break
            yield WAIT
        machine.record_contexts()
        machine.fold_statistics()

    def simulate(self) -> list[ToolExecutionResult]:
        world, machine, script = self.world, self.machine, self.script_of()
        submissions: list[tuple[float, ToolCall]] = []
        at = 0.0
        for tool_call, spec in zip(world.calls, script.specs, strict=True):
            if script.streaming:
                at += spec.submit_delay
                submissions.append((at, tool_call))
            else:
                machine.add(tool_call)
        if not submissions:
            machine.closed = True
        abort_at = script.abort_at
        steps = self.run()
        for _ in steps:
            # The driver waits: the clock moves to the next event, and it happens.
            times = [end for end, _ in self.running.values()]
            if submissions:
                times.append(submissions[0][0])
            if abort_at is not None and not self.signal.cancelled:
                times.append(abort_at)
            assert times, "the driver waits for nothing: a deadlock"
            world.clock = now = max(world.clock, min(times))
            while submissions and submissions[0][0] <= now:
                machine.add(submissions.pop(0)[1])
                if not submissions:
                    machine.closed = True
            for index in [i for i, (end, _) in self.running.items() if end <= now]:
                self.end_body(index, cancelled=False)
            if abort_at is not None and abort_at <= now and not self.signal.cancelled:
                self.signal.cancel("abort")
                for index in list(self.running):
                    self.end_body(index, cancelled=True)
        return machine.results

    def script_of(self) -> Script:
        return self.world.script


def check_on_the_machine(script: Script) -> None:
    world = MachineWorld(script)
    signal = CancelSignal()
    simulation = Simulation(world, signal)
    results = simulation.simulate()
    ids = [c.id for c in world.calls]
    assert world.live == set()
    check_outcome(world, ids, results, signal.cancelled)
    machine = simulation.machine
    machine.admission.check()
    assert (machine.admission.running, machine.admission.waiting) == (0, 0)
    statistics = machine.statistics()
    assert statistics.started == statistics.committed == len(ids)
    if signal.cancelled:
        for event, at in world.events:
            if isinstance(event, ToolCallEvent) and event.call.id not in world.pre:
                assert script.abort_at is not None
                assert at >= script.abort_at


@settings(max_examples=500, deadline=None)  # cheap without a loop: more schedules
@given(script=scripts)
def test_scheduler_invariants_on_the_batch_machine(script: Script) -> None:
    """The same scripts and invariants on the batch machine alone: no event loop runs."""
    check_on_the_machine(script)
