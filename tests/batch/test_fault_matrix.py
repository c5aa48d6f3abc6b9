"""The fault matrix: every phase of a call x every way it can fail.

A batch of four calls runs through a recorder to a JSON-lines log::

    before (exclusive) | faulty (parallel) + sibling (parallel, 1 s) | after (exclusive)

and one phase of ``faulty`` misbehaves. For every cell the batch gives the documented
result for each call, exactly one result per call in model order; when the fault
escapes (a ``BaseException`` subclass, a cancelled enclosing scope) nothing is
returned and the fault propagates as itself. In every cell no task the batch started
is left (counted with a trio instrument; on asyncio, every task of the loop), and the log
is consistent: each result follows its call's start, results of a batch commit in model
order, none twice, and they are exactly the returned results. Every cell runs on both
drivers (the ``driver`` fixture, ``tests/drivers.py``): trio, and the native asyncio
driver, where the enclosing cancel scope is the awaiting task's cancellation.

The faults:

* ``raises`` — an ``Exception``;
* ``base`` — a ``BaseException`` subclass (never caught by the library);
* ``garbage`` — returns a value of the wrong type;
* ``abort`` — an async phase hangs, then the batch is aborted (its signal); a
  synchronous phase cannot hang (no checkpoint to interrupt it at), so the abort
  arrives while it runs;
* ``cancel`` — likewise, but an enclosing cancel scope is cancelled instead.

The presenters run outside the pipeline: they are exercised as a UI does, on each
result as the batch yields it (``open_tool_batch``), and they fall back to the generic
views on any failure.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from drivers import Driver
from toolnursery import (
    Allow,
    Ask,
    CancelSignal,
    ResourceKey,
    TextContent,
    ToolCall,
    ToolDefinition,
    ToolExecutionResult,
    ToolRegistry,
)
from toolnursery._core._signal import link
from toolnursery.log import JsonlRecorder, RecorderEvent, ToolCallEvent, ToolResultEvent, read_log
from toolnursery.presentation import GenericCallView, GenericResultView, call_view, result_view

PHASES = [
    "pre_execute",
    "approval",
    "guard",
    "wrapper",
    "body",
    "post_execute",
    "observer",
    "classifier",
    "key_classifier",
    "recorder",
    "presenters",
]
FAULTS = ["raises", "base", "garbage", "abort", "cancel"]
ASYNC_PHASES = {"pre_execute", "approval", "wrapper", "body", "post_execute"}
OBJECT: dict[str, Any] = {"type": "object"}


class Fault(BaseException):
    """A BaseException subclass: the library must let it through untouched."""


class LiveTasks(trio.abc.Instrument):
    """Counts the tasks spawned while installed that have not exited."""

    def __init__(self) -> None:
        self.live: set[trio.lowlevel.Task] = set()

    def task_spawned(self, task: trio.lowlevel.Task) -> None:
        self.live.add(task)

    def task_exited(self, task: trio.lowlevel.Task) -> None:
        self.live.discard(task)


@dataclass
class Rig:
    phase: str
    fault: str
    driver: Driver
    signal: CancelSignal = field(default_factory=CancelSignal)
    scope: Any = None
    entered: Any = None
    sibling_started: Any = None

    def __post_init__(self) -> None:
        # Made in the run: an asyncio event binds to the running loop.
        self.scope = self.driver.cancel_scope()
        self.entered = self.driver.event()
        self.sibling_started = self.driver.event()

    def strike(self) -> Any:
        """The fault, in a synchronous phase: raise, return garbage, or abort/cancel."""
        if self.fault == "raises":
            raise RuntimeError(f"boom in {self.phase}")
        if self.fault == "base":
            raise Fault(self.phase)
        if self.fault == "abort":
            self.signal.cancel("aborted mid-phase")
        elif self.fault == "cancel":
            self.scope.cancel()
        return GARBAGE if self.fault == "garbage" else None

    async def astrike(self, answer: Any = None, signal: CancelSignal | None = None) -> Any:
        """The fault, in an async phase: as :meth:`strike`, but abort/cancel hang first.

        A policy hook (pre-execute, approval, post-execute) handed the call's signal
        hangs until that signal fires and then gives its normal ``answer`` (within the
        abort's grace); one that ignores it is cancelled after the grace (below).
        """
        if self.fault in ("abort", "cancel"):
            self.entered.set()
            if signal is not None and self.fault == "abort":
                await signal.wait()
                return answer
            await self.driver.sleep_forever()
        return self.strike()


GARBAGE = object()
_NEXT = object()


def build(rig: Rig) -> tuple[ToolRegistry, Any]:
    """A registry whose ``faulty`` tool misbehaves in ``rig.phase``; and the agent."""
    phase = rig.phase
    driver = rig.driver

    class Approval:
        async def request(self, request: Any, /) -> Any:
            if request.tool_name == "faulty" and phase == "approval":
                return await rig.astrike("allowed-once", request.signal)
            return "allowed-once"

    registry = ToolRegistry(approval=Approval())

    async def plain(args: Any, ctx: Any) -> str:
        await driver.sleep(0)
        return f"ok {ctx.call_id}"

    async def sibling(args: Any, ctx: Any) -> str:
        rig.sibling_started.set()
        await driver.sleep(1)
        return f"ok {ctx.call_id}"

    async def faulty(args: Any, ctx: Any) -> Any:
        if phase == "body":
            return await rig.astrike()
        await driver.sleep(0)
        return "ok faulty"

    def safe(args: Any) -> Any:
        return rig.strike() if phase == "classifier" else True

    def keys(args: Any) -> Any:
        return rig.strike() if phase == "key_classifier" else [ResourceKey("k", "read")]

    def present_call(args: Any) -> Any:
        return rig.strike() if phase == "presenters" else GenericCallView(title="faulty!")

    def present_result(args: Any, result: Any) -> Any:
        return rig.strike() if phase == "presenters" else GenericResultView(title="done!")

    registry.register(ToolDefinition("plain", "p", OBJECT, driver.tool(plain)))
    registry.register(
        ToolDefinition(
            "sibling", "s", OBJECT, driver.tool(sibling), is_concurrency_safe=lambda a: True
        )
    )
    registry.register(
        ToolDefinition(
            "faulty",
            "f",
            OBJECT,
            driver.tool(faulty),
            is_concurrency_safe=None if phase == "key_classifier" else safe,
            concurrency_keys=keys,
            present_call=present_call,
            present_result=present_result,
        )
    )

    async def pre(execution: Any, next_: Callable[[], Awaitable[Any]]) -> Any:
        if execution.name != "faulty":
            return await next_()
        if phase == "pre_execute":
            return await rig.astrike(Allow(), execution.signal)
        return Ask("needs a yes") if phase == "approval" else Allow()

    def guard(execution: Any) -> Any:
        return rig.strike() if execution.name == "faulty" and phase == "guard" else None

    async def wrapper(execution: Any, next_: Callable[[], Awaitable[Any]]) -> Any:
        if execution.name == "faulty" and phase == "wrapper":
            return await rig.astrike()
        return await next_()

    async def post(execution: Any, result: Any, next_: Callable[[], Awaitable[Any]]) -> Any:
        if execution.name == "faulty" and phase == "post_execute":
            answer = await rig.astrike(_NEXT, execution.signal)
            return await next_() if answer is _NEXT else answer
        return await next_()

    def observer(execution: Any, result: Any) -> Any:
        return rig.strike() if execution.name == "faulty" and phase == "observer" else None

    registry.on_pre_execute(pre)
    registry.guard(guard)
    if phase == "wrapper":
        registry.on_execute(wrapper)
    registry.on_post_execute(post)
    registry.on_result(observer)
    return registry, registry.scope()


CALLS = [
    ToolCall("before", "plain"),
    ToolCall("faulty", "faulty"),
    ToolCall("sibling", "sibling"),
    ToolCall("after", "plain"),
]


class FaultyRecorder:
    """Forwards to the log; misbehaves on the faulty call's start event."""

    def __init__(self, rig: Rig, inner: JsonlRecorder) -> None:
        self.rig = rig
        self.inner = inner

    def record(self, event: RecorderEvent, /) -> Any:
        self.inner.record(event)
        if (
            self.rig.phase == "recorder"
            and isinstance(event, ToolCallEvent)
            and event.call.id == "faulty"
        ):
            return self.rig.strike()
        return None


@dataclass
class Outcome:
    results: list[ToolExecutionResult] | None = None
    raised: BaseException | None = None
    scope_caught: bool = False
    views: list[Any] = field(default_factory=list)
    left: int = 0
    log: list[RecorderEvent] = field(default_factory=list)


async def run_cell(rig: Rig, log: Path) -> Outcome:
    registry, agent = build(rig)
    outcome = Outcome()
    driver = rig.driver
    on_trio = driver.name == "trio"
    tasks = LiveTasks()

    async def trigger() -> None:
        await rig.entered.wait()
        await driver.wait_all_tasks_blocked()  # whatever can start has started
        if rig.fault == "abort":
            rig.signal.cancel("aborted while hanging")
        else:
            rig.scope.cancel()
        await driver.sleep_forever()

    async def idle() -> None:
        await driver.sleep_forever()

    hangs = rig.phase in ASYNC_PHASES and rig.fault in ("abort", "cancel")
    with JsonlRecorder(log) as jsonl:
        recorder = FaultyRecorder(rig, jsonl)
        async with driver.background(trigger if hangs else idle):
            if on_trio:
                trio.lowlevel.add_instrument(tasks)
            before = driver.tasks()
            try:
                async with driver.fail_after(3600):
                    with rig.scope:
                        if rig.phase == "presenters":
                            outcome.results = await present_each(
                                registry, agent, rig, recorder, outcome
                            )
                        else:
                            outcome.results = await driver.run_tool_calls(
                                registry, CALLS, signal=rig.signal, agent=agent, recorder=recorder
                            )
            except BaseException as exc:  # the test inspects whatever escaped
                outcome.raised = exc
            finally:
                if on_trio:
                    trio.lowlevel.remove_instrument(tasks)
            outcome.left = len(tasks.live) if on_trio else driver.tasks() - before
            outcome.scope_caught = rig.scope.cancelled_caught
    outcome.log = read_log(log)
    return outcome


async def present_each(
    registry: ToolRegistry, agent: Any, rig: Rig, recorder: Any, outcome: Outcome
) -> list[ToolExecutionResult]:
    """Consume the batch as a UI does: present each call and result as it commits."""
    results: list[ToolExecutionResult] = []
    async with rig.driver.open_tool_batch(
        registry, signal=rig.signal, agent=agent, recorder=recorder
    ) as batch:
        for call in CALLS:
            batch.submit(call)
        batch.close()
        async for call, result in batch:
            results.append(result)
            definition = registry.get(call.name)
            outcome.views.append(call_view(definition, {}, name=call.name))
            outcome.views.append(result_view(definition, {}, result))
            await rig.driver.checkpoint()
    return results


def leaves(exc: BaseException) -> Iterator[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from leaves(inner)
    else:
        yield exc


def summary(result: ToolExecutionResult) -> str:
    text = "".join(b.text for b in result.content if isinstance(b, TextContent))
    if not result.is_error:
        return text
    return result.error.code if result.error is not None else text


def check_log(outcome: Outcome) -> None:
    started: set[tuple[str, int]] = set()
    committed: list[tuple[str, int]] = []
    for event in outcome.log:
        key = (event.batch, event.index)
        if isinstance(event, ToolCallEvent):
            started.add(key)
        elif isinstance(event, ToolResultEvent):
            assert key in started, f"result before start: {key}"
            assert key not in committed, f"result twice: {key}"
            committed.append(key)
    assert [index for _, index in committed] == sorted(index for _, index in committed)
    recorded = [e.result for e in outcome.log if isinstance(e, ToolResultEvent)]
    if outcome.results is not None:
        stripped = [
            ToolExecutionResult(r.content, r.is_error, r.error, (), r.meta, r.structured_content)
            for r in outcome.results
        ]
        assert recorded == stripped


OK = ["ok before", "ok faulty", "ok sibling", "ok after"]
ABD = "ABORTED_BEFORE_DISPATCH"
ANY_ERROR = "Error: …"  # any error text (the body's garbage message is the tools' to word)
CANCELLED = "cancelled"  # the enclosing scope caught its Cancelled; nothing returned


def with_faulty(summary: str) -> list[str]:
    return ["ok before", summary, "ok sibling", "ok after"]


def unreachable(what: str) -> list[str]:
    return with_faulty(f"Error: unreachable variant in {what}: …")


ALL_ABD = ["ok before", ABD, ABD, ABD]
WHILE_IN_FLIGHT = ["ok before", "ok faulty", "ABORTED", ABD]  # faulty had committed

EXPECTED: dict[tuple[str, str], list[str] | str] = {
    ("pre_execute", "raises"): with_faulty("Error: boom in pre_execute"),
    ("pre_execute", "garbage"): unreachable("PreToolDecision"),
    ("pre_execute", "abort"): ALL_ABD,
    ("approval", "raises"): with_faulty("Error: boom in approval"),
    ("approval", "garbage"): unreachable("ApprovalOutcome"),
    ("approval", "abort"): ALL_ABD,
    ("guard", "raises"): with_faulty("Error: boom in guard"),
    ("guard", "garbage"): unreachable("ToolGuard result"),
    ("guard", "abort"): ALL_ABD,
    ("wrapper", "raises"): with_faulty("Error: boom in wrapper"),
    ("wrapper", "garbage"): unreachable("tools/execute result"),
    ("wrapper", "abort"): ["ok before", ABD, "ABORTED", ABD],
    ("body", "raises"): with_faulty("Error: boom in body"),
    ("body", "garbage"): with_faulty(ANY_ERROR),
    ("body", "abort"): ["ok before", "ABORTED", "ABORTED", ABD],
    ("post_execute", "raises"): with_faulty("Error: boom in post_execute"),
    ("post_execute", "garbage"): unreachable("PostToolDecision"),
    ("post_execute", "abort"): ["ok before", "ABORTED", "ABORTED", ABD],
    ("observer", "raises"): OK,
    ("observer", "garbage"): OK,
    ("observer", "abort"): WHILE_IN_FLIGHT,
    ("classifier", "raises"): OK,  # a classifier that raises makes the call exclusive
    ("classifier", "garbage"): OK,  # anything but True: not concurrency-safe
    ("classifier", "abort"): ALL_ABD,
    ("key_classifier", "raises"): OK,
    ("key_classifier", "garbage"): OK,
    ("key_classifier", "abort"): ALL_ABD,
    ("recorder", "raises"): "RuntimeError",  # an internal failure: the batch re-raises it
    ("recorder", "garbage"): OK,
    ("recorder", "abort"): ALL_ABD,
    ("presenters", "raises"): OK,
    ("presenters", "garbage"): OK,
    ("presenters", "abort"): WHILE_IN_FLIGHT,
}
for _phase in PHASES:
    EXPECTED[_phase, "base"] = "Fault"
    EXPECTED[_phase, "cancel"] = CANCELLED

CORE_PENDING: dict[tuple[str, str], str] = {}  # cells waiting for another branch


def matches(summaries: list[str], expected: list[str]) -> bool:
    if len(summaries) != len(expected):
        return False
    for got, want in zip(summaries, expected, strict=True):
        if want == ANY_ERROR:
            if not got.startswith("Error: "):
                return False
        elif want.endswith("…"):
            if not got.startswith(want[:-1]):
                return False
        elif got != want:
            return False
    return True


def cells() -> Iterator[Any]:
    for phase in PHASES:
        for fault in FAULTS:
            reason = CORE_PENDING.get((phase, fault))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            yield pytest.param(phase, fault, marks=marks, id=f"{phase}-{fault}")


@pytest.mark.parametrize(("phase", "fault"), list(cells()))
def test_fault_matrix(
    phase: str,
    fault: str,
    driver: Driver,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def main() -> Outcome:
        return await run_cell(Rig(phase, fault, driver), tmp_path / "log.jsonl")

    outcome = driver.run(main)
    expected = EXPECTED[phase, fault]
    assert outcome.left == 0, "a task the batch started is still alive"
    check_log(outcome)
    if expected == CANCELLED:
        assert (outcome.results, outcome.raised, outcome.scope_caught) == (None, None, True)
    elif isinstance(expected, str):
        assert outcome.results is None
        assert outcome.raised is not None
        assert [type(e).__name__ for e in leaves(outcome.raised)] == [expected]
    else:
        assert outcome.raised is None, repr(outcome.raised)
        assert outcome.results is not None
        summaries = [summary(r) for r in outcome.results]
        assert matches(summaries, expected), summaries
    if phase == "observer" and fault == "raises":
        assert "tools/result observer failed: boom in observer" in caplog.text
    if phase == "presenters" and outcome.results is not None:
        assert len(outcome.views) == 2 * len(CALLS)
        faulty_views = outcome.views[2:4]
        assert faulty_views == [GenericCallView(title="faulty", raw_input={}), None]


@pytest.mark.parametrize(
    ("phase", "expected"),
    [
        ("pre_execute", ALL_ABD),
        ("approval", ALL_ABD),
        ("post_execute", ["ok before", "ABORTED", "ABORTED", ABD]),
    ],
)
def test_a_policy_hook_that_ignores_the_abort_is_cancelled_after_the_grace(
    phase: str, expected: list[str], driver: Driver, tmp_path: Path
) -> None:
    """The hook sees ``Cancelled`` where it waits, ``hook_abort_grace`` (1 s by default)
    after the batch's abort; the batch then returns, one result per call."""
    cancelled_at: list[float] = []
    aborted_at: list[float] = []

    async def main() -> Outcome:
        rig = Rig(phase, "abort", driver)

        async def stubborn(answer: Any = None, signal: CancelSignal | None = None) -> Any:
            rig.entered.set()
            try:
                await driver.sleep_forever()
            except driver.Cancelled:
                cancelled_at.append(driver.now())
                raise

        rig.astrike = stubborn  # type: ignore[method-assign]
        link(rig.signal, lambda _: aborted_at.append(driver.now()))
        return await run_cell(rig, tmp_path / "log.jsonl")

    outcome = driver.run(main)
    assert outcome.raised is None
    assert outcome.results is not None
    assert [summary(r) for r in outcome.results] == expected
    assert outcome.left == 0
    check_log(outcome)
    assert len(cancelled_at) == 1
    assert cancelled_at[0] - aborted_at[0] == pytest.approx(1.0)


def test_a_wrapper_sees_cancelled_out_of_next_on_a_batch_abort(driver: Driver) -> None:
    seen: list[str] = []
    signal = CancelSignal()

    async def body(args: Any, ctx: Any) -> str:
        await driver.sleep_forever()
        raise AssertionError  # pragma: no cover

    async def wrapper(execution: Any, next_: Callable[[], Awaitable[Any]]) -> Any:
        try:
            return await next_()
        except driver.Cancelled:
            seen.append("cancelled")
            raise
        finally:
            seen.append("finally")

    registry = ToolRegistry()
    registry.register(
        ToolDefinition("t", "t", OBJECT, driver.tool(body), is_concurrency_safe=lambda a: True)
    )
    registry.on_execute(wrapper)

    async def abort_later() -> None:
        await driver.sleep(1)
        signal.cancel()
        await driver.sleep_forever()

    async def main() -> list[ToolExecutionResult]:
        async with driver.background(abort_later), driver.fail_after(60):
            results: list[ToolExecutionResult] = await driver.run_tool_calls(
                registry, [ToolCall("a", "t"), ToolCall("b", "t")], signal=signal
            )
        return results

    results = driver.run(main)
    assert [summary(r) for r in results] == ["ABORTED", "ABORTED"]
    assert seen == ["cancelled", "finally"] * 2
