"""Cancellation semantics and precedence of one ``execute()``.

Reference behaviours B116–B126 (B127 and B128 are batch/turn-level and belong to the
scheduler's tests), plus the trio-specific rules: the registry's own cancel scope is
absorbed into ``ABORTED``, a ``Cancelled`` from the caller's scope propagates, and no
started body is abandoned. The tests that take the ``driver`` fixture run on both drivers
(``tests/drivers.py``): ``registry.execute`` under trio and ``toolnursery.aio.execute`` on
the native asyncio driver; where the drivers differ, the test says so and asserts each side.
"""

from __future__ import annotations

import threading
from typing import Any

import msgspec
import pytest
import trio
import trio.testing

from drivers import ASYNCIO, TRIO, Driver, current, neutral
from toolnursery import (
    Accept,
    CancelSignal,
    Deny,
    HookContext,
    TextContent,
    ToolDefinition,
    ToolDispatchExecution,
    ToolError,
    ToolErrorInfo,
    ToolExecution,
    ToolExecutionInput,
    ToolExecutionResult,
    ToolRegistry,
    ToolReturn,
    ToolRunContext,
    ToolTimeoutError,
)

ABORTED_WIRE = {
    "content": [{"type": "text", "text": "Error: tool call aborted"}],
    "isError": True,
    "error": {"name": "AbortError", "code": "ABORTED"},
}
BEFORE_DISPATCH_WIRE = {
    "content": [{"type": "text", "text": "Error: tool call aborted before dispatch"}],
    "isError": True,
    "error": {"name": "AbortError", "code": "ABORTED_BEFORE_DISPATCH"},
}


def tool(body: Any, name: str = "echo") -> ToolDefinition:
    """A definition of ``body``, loop-neutral: the tests that take the ``driver`` fixture
    run it on both drivers (it awaits only through the driver)."""
    return ToolDefinition(name, "test tool", {"type": "object"}, neutral(body))


def wire(result: ToolExecutionResult, *, contexts: bool = True) -> Any:
    data = msgspec.json.decode(msgspec.json.encode(result))
    if not contexts:
        data.pop("additionalContexts", None)
    return data


def labels(result: ToolExecutionResult) -> list[str]:
    return [c.content[0].text for c in result.additional_contexts]  # type: ignore[union-attr]


def context(label: str) -> HookContext:
    return HookContext((TextContent(label),), "test")


class Runner:
    """Runs one execute() in a nursery task and keeps its result."""

    def __init__(self) -> None:
        self.results: list[ToolExecutionResult] = []

    async def run(self, registry: ToolRegistry, input_: ToolExecutionInput) -> None:
        self.results.append(await current().execute(registry, input_))

    @property
    def result(self) -> ToolExecutionResult:
        (result,) = self.results
        return result


async def ok_body(args: Any, ctx: ToolRunContext) -> str:
    return "ok"


# -- B116: pre-aborted entry -----------------------------------------------------------


@pytest.mark.spec("B116")
def test_pre_aborted_entry_skips_every_phase_and_publishes_once(driver: Driver) -> None:
    """B116: exact ABORTED_BEFORE_DISPATCH shape; no phase runs; one frozen observation."""

    async def main() -> None:
        registry = ToolRegistry()
        ran: list[str] = []

        async def body(args: Any, ctx: ToolRunContext) -> str:
            ran.append("body")
            return "ok"

        async def pre(e: Any, n: Any) -> Any:
            ran.append("pre")
            return await n()

        async def wrap(v: Any, n: Any) -> Any:
            ran.append("execute")
            return await n()

        async def post(e: Any, r: Any, n: Any) -> Any:
            ran.append("post")
            return await n()

        observed: list[tuple[ToolExecution, ToolExecutionResult]] = []
        registry.register(tool(body))
        registry.on_pre_execute(pre)
        registry.guard(lambda e: ran.append("guard"))
        registry.on_execute(wrap)
        registry.on_post_execute(post)
        registry.on_result(lambda e, r: observed.append((e, r)))
        signal = CancelSignal()
        signal.cancel("already stopped")
        result = await driver.execute(
            registry, ToolExecutionInput("c1", "echo", {"a": [1]}, signal)
        )
        assert wire(result) == BEFORE_DISPATCH_WIRE
        assert ran == []
        ((execution, seen),) = observed
        assert seen is result
        if driver.name == "trio":
            assert execution.signal is signal
        else:  # aio.execute fuses the input's signal with the awaiting task's cancellation
            assert execution.signal.cancelled
            assert execution.signal.reason == "already stopped"
        assert execution.token is not None
        assert execution.arguments == {"a": (1,)}
        with pytest.raises(TypeError):
            execution.arguments["a"] = 2
        with pytest.raises(AttributeError):
            execution.call_id = "other"  # type: ignore[misc]

    driver.run(main)


# -- B117–B119: cancellation while pre-execute awaits ----------------------------------


@pytest.mark.spec("B117", "B119")
@pytest.mark.parametrize(
    ("outcome", "expected"),
    [
        ("allow", BEFORE_DISPATCH_WIRE),
        (
            "deny",
            {
                "content": [{"type": "text", "text": "Error: policy denied the call"}],
                "isError": True,
            },
        ),
        (
            "raise",
            {"content": [{"type": "text", "text": "Error: gate interrupted"}], "isError": True},
        ),
    ],
)
def test_abort_while_pre_execute_awaits(driver: Driver, outcome: str, expected: Any) -> None:
    """B117: then allow → ABORTED_BEFORE_DISPATCH; B118: deny wins; B119: the raise wins."""

    async def main() -> None:
        registry = ToolRegistry()
        ran: list[str] = []

        async def body(args: Any, ctx: ToolRunContext) -> str:
            ran.append("body")
            return "ok"

        gate = driver.event()

        async def pre(e: Any, n: Any) -> Any:
            await gate.wait()
            if outcome == "deny":
                return Deny("policy denied the call")
            if outcome == "raise":
                raise RuntimeError("gate interrupted")
            return await n()

        posted: list[str] = []

        async def post(e: Any, r: Any, n: Any) -> Any:
            posted.append("post")
            return await n()

        registry.register(tool(body))
        registry.on_pre_execute(pre)
        registry.on_post_execute(post)
        signal = CancelSignal()
        runner = Runner()
        async with driver.open_nursery() as nursery:
            nursery.start_soon(runner.run, registry, ToolExecutionInput("c1", "echo", {}, signal))
            await driver.wait_all_tasks_blocked()
            signal.cancel("stop")
            gate.set()
        assert wire(runner.result) == expected
        assert ran == []
        # A pre-phase abort and a denial still pass post-execute; a raising listener skips it.
        assert posted == ([] if outcome == "raise" else ["post"])

    driver.run(main)


# -- B120–B122: cancellation around a wrapper ------------------------------------------


@pytest.mark.spec("B120")
def test_abort_while_wrapper_waits_before_next_skips_the_body(driver: Driver) -> None:
    """B120/B106: the wrapper then delegates; the body is not invoked → exactly
    ``Error: tool call aborted before dispatch`` with AbortError/ABORTED_BEFORE_DISPATCH."""

    async def main() -> None:
        registry = ToolRegistry()
        ran: list[str] = []

        async def body(args: Any, ctx: ToolRunContext) -> str:
            ran.append("body")
            return "ok"

        gate = driver.event()

        async def wrap(v: Any, n: Any) -> Any:
            await gate.wait()
            return await n()

        registry.register(tool(body))
        registry.on_execute(wrap)
        signal = CancelSignal()
        runner = Runner()
        async with driver.open_nursery() as nursery:
            nursery.start_soon(runner.run, registry, ToolExecutionInput("c1", "echo", {}, signal))
            await driver.wait_all_tasks_blocked()
            signal.cancel()
            gate.set()
        assert ran == []
        assert wire(runner.result) == BEFORE_DISPATCH_WIRE

    driver.run(main)


@pytest.mark.spec("B121")
def test_wrapper_short_circuit_overtaken_by_abort_keeps_its_contexts(driver: Driver) -> None:
    """B121: a short-circuit success after the abort → ABORTED_BEFORE_DISPATCH + its contexts."""

    async def main() -> None:
        registry = ToolRegistry()
        registry.register(tool(ok_body))
        gate = driver.event()

        async def wrap(v: Any, n: Any) -> Any:
            await gate.wait()
            return ToolExecutionResult(
                (TextContent("cached"),),
                False,
                additional_contexts=(context("wrapper"),),
                meta={"dropped": True},
            )

        registry.on_execute(wrap)
        signal = CancelSignal()
        runner = Runner()
        async with driver.open_nursery() as nursery:
            nursery.start_soon(runner.run, registry, ToolExecutionInput("c1", "echo", {}, signal))
            await driver.wait_all_tasks_blocked()
            signal.cancel()
            gate.set()
        assert wire(runner.result, contexts=False) == BEFORE_DISPATCH_WIRE
        assert labels(runner.result) == ["wrapper"]
        assert runner.result.meta is None

    driver.run(main)


@pytest.mark.spec("B122")
def test_late_wrapper_success_after_the_body_is_aborted(driver: Driver) -> None:
    """B122/B107: the body succeeded, then the caller aborted while the wrapper finished → ABORTED
    with the body's deferred contexts."""

    async def main() -> None:
        registry = ToolRegistry()

        async def body(args: Any, ctx: ToolRunContext) -> str:
            ctx.defer_context(context("deferred"))
            return "ok"

        gate = driver.event()

        async def wrap(v: Any, n: Any) -> Any:
            result = await n()
            await gate.wait()
            return result

        registry.register(tool(body))
        registry.on_execute(wrap)
        signal = CancelSignal()
        runner = Runner()
        async with driver.open_nursery() as nursery:
            nursery.start_soon(runner.run, registry, ToolExecutionInput("c1", "echo", {}, signal))
            await driver.wait_all_tasks_blocked()
            signal.cancel()
            gate.set()
        assert wire(runner.result, contexts=False) == ABORTED_WIRE
        assert labels(runner.result) == ["deferred"]

    driver.run(main)


# -- B123: cancellation while post-execute awaits ---------------------------------------


@pytest.mark.spec("B123")
def test_abort_while_post_execute_awaits_is_aborted_with_all_contexts(driver: Driver) -> None:
    """B123: deferred contexts, then the post decision's, survive the ABORTED replacement."""

    async def main() -> None:
        registry = ToolRegistry()

        async def body(args: Any, ctx: ToolRunContext) -> str:
            ctx.defer_context(context("deferred"))
            return "ok"

        gate = driver.event()

        async def post(e: Any, r: Any, n: Any) -> Any:
            await gate.wait()
            return Accept(additional_contexts=[context("post")])

        registry.register(tool(body))
        registry.on_post_execute(post)
        signal = CancelSignal()
        runner = Runner()
        async with driver.open_nursery() as nursery:
            nursery.start_soon(runner.run, registry, ToolExecutionInput("c1", "echo", {}, signal))
            await driver.wait_all_tasks_blocked()
            signal.cancel()
            gate.set()
        assert wire(runner.result, contexts=False) == ABORTED_WIRE
        assert labels(runner.result) == ["deferred", "post"]

    driver.run(main)


# -- B124: failures win over cancellation -----------------------------------------------


@pytest.mark.spec("B124")
@pytest.mark.parametrize(
    ("driver", "where"),
    [(d, w) for w in ("wrapper", "body", "post") for d in (TRIO, ASYNCIO)],
    ids=str,
)
def test_failures_settling_after_the_abort_are_kept(driver: Driver, where: str) -> None:
    """B124: wrapper, tool-owned and post failures after the abort keep their own error."""

    async def main() -> None:
        registry = ToolRegistry()
        codes = {"wrapper": "WRAPPER_FAILURE", "body": "TOOL_FAILURE", "post": "POST_FAILURE"}
        gate = driver.event()

        async def body(args: Any, ctx: ToolRunContext) -> str:
            if where == "body":
                try:
                    await driver.sleep_forever()
                except driver.Cancelled:
                    raise ToolError("tool saw the abort", code="TOOL_FAILURE") from None
            return "ok"

        async def wrap(v: Any, n: Any) -> Any:
            result = await n()
            if where == "wrapper":
                await gate.wait()
                raise ToolError("wrapper failed", code="WRAPPER_FAILURE")
            return result

        async def post(e: Any, r: Any, n: Any) -> Any:
            if where == "post":
                await gate.wait()
                raise ToolError("post failed", code="POST_FAILURE")
            return await n()

        registry.register(tool(body))
        registry.on_execute(wrap)
        registry.on_post_execute(post)
        signal = CancelSignal()
        runner = Runner()
        async with driver.open_nursery() as nursery:
            nursery.start_soon(runner.run, registry, ToolExecutionInput("c1", "echo", {}, signal))
            await driver.wait_all_tasks_blocked()
            signal.cancel()
            gate.set()
        assert runner.result.is_error
        assert runner.result.error == ToolErrorInfo("ToolError", codes[where])

    driver.run(main)


# -- B125 / B089: started bodies are never abandoned -----------------------------------


@pytest.mark.spec("B125")
def test_success_after_the_fused_signal_fired_is_aborted(driver: Driver) -> None:
    """B125: a body that swallows the cancellation and returns success → ABORTED."""

    async def main() -> None:
        registry = ToolRegistry()
        unwound: list[str] = []

        async def body(args: Any, ctx: ToolRunContext) -> str:
            try:
                await driver.sleep_forever()
            except driver.Cancelled:
                unwound.append("cancelled")
            ctx.defer_context(context("deferred"))
            return "pretend success"

        registry.register(tool(body))
        signal = CancelSignal()
        runner = Runner()
        async with driver.open_nursery() as nursery:
            nursery.start_soon(runner.run, registry, ToolExecutionInput("c1", "echo", {}, signal))
            await driver.wait_all_tasks_blocked()
            signal.cancel()
        assert unwound == ["cancelled"]
        assert wire(runner.result, contexts=False) == ABORTED_WIRE
        assert labels(runner.result) == ["deferred"]

    driver.run(main)


@pytest.mark.spec("B089")
async def test_uncooperative_body_is_awaited_before_aborted(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """B089/B131: a shielded body runs to completion; execute waits, then ABORTED + contexts."""
    registry = ToolRegistry()
    finished_at: list[float] = []

    async def body(args: Any, ctx: ToolRunContext) -> str:
        ctx.defer_context(context("deferred"))
        with trio.CancelScope(shield=True):
            await trio.sleep(5)
        finished_at.append(trio.current_time())
        return "done anyway"

    registry.register(tool(body))
    signal = CancelSignal()
    runner = Runner()
    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(runner.run, registry, ToolExecutionInput("c1", "echo", {}, signal))
        await trio.sleep(1)
        signal.cancel()
        await trio.testing.wait_all_tasks_blocked()
        assert runner.results == []  # still waiting for the body
    assert finished_at == [pytest.approx(start + 5)]
    assert trio.current_time() == pytest.approx(start + 5)
    assert wire(runner.result, contexts=False) == ABORTED_WIRE
    assert labels(runner.result) == ["deferred"]


def test_cooperative_body_is_cancelled_at_its_next_checkpoint(driver: Driver) -> None:
    """The signal cancels the registry-owned scope: the body unwinds at once → ABORTED."""

    async def main() -> None:
        registry = ToolRegistry()
        unwound: list[float] = []

        async def body(args: Any, ctx: ToolRunContext) -> str:
            try:
                await driver.sleep(100)
            finally:
                unwound.append(driver.now())
            return "unreachable"

        registry.register(tool(body))
        signal = CancelSignal()
        runner = Runner()
        start = driver.now()
        async with driver.open_nursery() as nursery:
            nursery.start_soon(runner.run, registry, ToolExecutionInput("c1", "echo", {}, signal))
            await driver.sleep(2)
            signal.cancel()
        assert unwound == [pytest.approx(start + 2)]
        assert wire(runner.result) == ABORTED_WIRE
        assert not signal._callbacks  # the scope link was removed

    driver.run(main)


# -- B126: precedence --------------------------------------------------------------------


@pytest.mark.spec("B126")
def test_cancellation_replaces_only_success_and_drops_meta(driver: Driver) -> None:
    """B126: a success becomes ABORTED (contexts kept, meta dropped)."""

    async def main() -> None:
        registry = ToolRegistry()

        async def body(args: Any, ctx: ToolRunContext) -> Any:
            ctx.defer_context(context("deferred"))
            ctx.signal.cancel("body aborts its own caller signal")
            return ToolReturn([TextContent("ok")], meta={"k": 1})

        registry.register(tool(body))
        result = await driver.execute(registry, ToolExecutionInput("c1", "echo", {}))
        assert wire(result, contexts=False) == ABORTED_WIRE
        assert result.meta is None
        assert labels(result) == ["deferred"]

    driver.run(main)


@pytest.mark.spec("B126")
@pytest.mark.parametrize("kind", ["unknown", "timeout", "denial", "tool-error"])
def test_error_outcomes_are_never_replaced_by_cancellation(driver: Driver, kind: str) -> None:
    """B126/B170: UNKNOWN_TOOL, TOOL_TIMEOUT, denials and tool errors stand after an abort."""

    async def main() -> None:
        registry = ToolRegistry()

        async def body(args: Any, ctx: ToolRunContext) -> str:
            ctx.signal.cancel()
            raise ToolError("tool failed", code="TOOL_FAILURE")

        registry.register(tool(body))
        signal = CancelSignal()

        async def wrap(view: ToolDispatchExecution, n: Any) -> Any:
            result = await n()
            if kind == "timeout":
                signal.cancel("caller, later")
                error = ToolTimeoutError(100)
                return ToolExecutionResult(
                    (TextContent(f"Error: {error}"),), True, ToolErrorInfo(error.name, error.code)
                )
            if kind == "unknown":
                signal.cancel()
            return result

        async def pre(e: Any, n: Any) -> Any:
            if kind == "denial":
                signal.cancel()
                return Deny("denied first")
            return await n()

        registry.on_pre_execute(pre)
        registry.on_execute(wrap)
        name = "ghost" if kind == "unknown" else "echo"
        result = await driver.execute(registry, ToolExecutionInput("c1", name, {}, signal))
        expected = {
            "unknown": ToolErrorInfo("ToolNotFoundError", "UNKNOWN_TOOL"),
            "timeout": ToolErrorInfo("ToolTimeoutError", "TOOL_TIMEOUT"),
            "denial": None,
            "tool-error": ToolErrorInfo("ToolError", "TOOL_FAILURE"),
        }[kind]
        assert result.is_error
        assert result.error == expected
        if kind == "timeout":
            assert result.content == (TextContent("Error: tool call timed out after 100ms"),)

    driver.run(main)


# -- trio ownership of cancellation -------------------------------------------------------


def test_callers_own_cancel_scope_propagates_and_the_body_unwinds(driver: Driver) -> None:
    """A Cancelled from the caller's enclosing scope is not absorbed: execute() raises it."""

    async def main() -> None:
        registry = ToolRegistry()
        events: list[str] = []

        async def body(args: Any, ctx: ToolRunContext) -> str:
            try:
                await driver.sleep(10)
            finally:
                events.append("body finally")
            return "never"

        registry.register(tool(body))
        observed: list[ToolExecutionResult] = []
        registry.on_result(lambda e, r: observed.append(r))
        returned: list[ToolExecutionResult] = []
        signal = CancelSignal()
        async with driver.move_on_after(1) as scope:
            returned.append(
                await driver.execute(registry, ToolExecutionInput("c1", "echo", {}, signal))
            )
        assert scope.cancelled_caught
        assert returned == []
        # Where the drivers differ: the trio caller's Cancelled passes through and no
        # observer runs; on asyncio the call is aborted, its ABORTED result passes the
        # observers, then CancelledError propagates (docs/asyncio.md).
        assert [r.error.code for r in observed if r.error] == (
            [] if driver.name == "trio" else ["ABORTED"]
        )
        assert events == ["body finally"]
        assert not signal.cancelled
        assert not signal._callbacks

    driver.run(main)


async def test_callers_scope_and_signal_both_fired_still_propagates(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """When both the caller's scope and the signal fire, the outer Cancelled wins."""
    registry = ToolRegistry()
    signal = CancelSignal()

    async def body(args: Any, ctx: ToolRunContext) -> str:
        await trio.sleep(10)
        return "never"

    registry.register(tool(body))
    returned: list[ToolExecutionResult] = []
    with trio.CancelScope() as outer:

        async def fire_both() -> None:
            await trio.sleep(1)
            signal.cancel()
            outer.cancel()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(fire_both)
            returned.append(await registry.execute(ToolExecutionInput("c1", "echo", {}, signal)))
    assert outer.cancelled_caught
    assert returned == []


def test_cancelled_raised_in_a_wrapper_from_the_callers_scope_propagates(driver: Driver) -> None:
    """A wrapper blocked when the caller's scope (trio) or an enclosing ``asyncio.timeout``
    is cancelled: the cancellation propagates."""

    async def main() -> None:
        registry = ToolRegistry()
        registry.register(tool(ok_body))

        async def wrap(v: Any, n: Any) -> Any:
            await driver.sleep(10)
            return await n()

        registry.on_execute(wrap)
        observed: list[Any] = []
        registry.on_result(lambda e, r: observed.append(r))
        async with driver.move_on_after(1) as scope:
            await driver.execute(registry, ToolExecutionInput("c1", "echo", {}))
        assert scope.cancelled_caught
        # As above: on asyncio the aborted call (its body never ran) reaches the observers.
        assert [r.error.code for r in observed if r.error] == (
            [] if driver.name == "trio" else ["ABORTED_BEFORE_DISPATCH"]
        )

    driver.run(main)


async def test_sync_body_is_awaited_in_its_thread_not_abandoned() -> None:
    """A plain def body keeps running after the signal fires; execute waits, then ABORTED."""
    registry = ToolRegistry()
    started = trio.Event()
    release = threading.Event()
    saw_signal: list[bool] = []
    token = trio.lowlevel.current_trio_token()

    def body(args: Any, ctx: ToolRunContext) -> str:
        trio.from_thread.run_sync(started.set, trio_token=token)
        release.wait()
        saw_signal.append(ctx.signal.cancelled)
        return "finished in thread"

    registry.register(tool(body))
    signal = CancelSignal()
    runner = Runner()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(runner.run, registry, ToolExecutionInput("c1", "echo", {}, signal))
        await started.wait()
        signal.cancel()
        await trio.testing.wait_all_tasks_blocked()
        assert runner.results == []
        release.set()
    assert saw_signal == [True]
    assert wire(runner.result) == ABORTED_WIRE


async def test_signal_wait_returns_once_cancelled() -> None:
    """CancelSignal.wait() blocks until cancel(); cancel is idempotent, first reason wins."""
    signal = CancelSignal()
    woke: list[Any] = []

    async def waiter() -> None:
        await signal.wait()
        woke.append(signal.reason)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(waiter)
        await trio.testing.wait_all_tasks_blocked()
        assert woke == []
        signal.cancel("first")
        signal.cancel("second")
    assert woke == ["first"]
    assert signal.cancelled
    await signal.wait()  # already fired: returns at once
    assert "cancelled" in repr(signal)
    assert "pending" in repr(CancelSignal())


async def test_sync_body_under_a_cancelled_caller_scope_finishes_its_thread(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The worker thread is never abandoned: a caller's scope cancelled meanwhile waits for
    it; the finished call's result is returned and the Cancelled arrives at the caller's
    next checkpoint."""
    registry = ToolRegistry()
    release = threading.Event()
    finished: list[str] = []

    def body(args: Any, ctx: ToolRunContext) -> str:
        release.wait()
        finished.append("thread done")
        return "done"

    registry.register(tool(body))
    returned: list[ToolExecutionResult] = []
    living = trio.lowlevel.current_statistics().tasks_living

    async def release_later() -> None:
        await trio.sleep(2)
        release.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(release_later)
        with trio.move_on_after(1) as scope:
            returned.append(await registry.execute(ToolExecutionInput("c1", "echo", {})))
            await trio.sleep(0)  # the caller's next checkpoint
    assert finished == ["thread done"]
    assert scope.cancelled_caught
    assert [r.content for r in returned] == [(TextContent("done"),)]
    assert trio.lowlevel.current_statistics().tasks_living == living


async def test_nothing_is_left_running_after_execute(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Structured concurrency: after execute() returns — on success, abort or caller
    cancellation — no task it started is alive."""
    registry = ToolRegistry()

    async def body(args: Any, ctx: ToolRunContext) -> str:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.sleep, 1)
            nursery.start_soon(trio.sleep, 3)
        return "ok"

    registry.register(tool(body))
    living = trio.lowlevel.current_statistics().tasks_living
    assert (await registry.execute(ToolExecutionInput("c1", "echo", {}))).is_error is False
    assert trio.lowlevel.current_statistics().tasks_living == living
    signal = CancelSignal()

    async def abort_soon() -> None:
        await trio.sleep(2)
        signal.cancel()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(abort_soon)
        aborted = await registry.execute(ToolExecutionInput("c2", "echo", {}, signal))
    assert aborted.error == ToolErrorInfo("AbortError", "ABORTED")
    assert trio.lowlevel.current_statistics().tasks_living == living
    with trio.move_on_after(0.5):
        await registry.execute(ToolExecutionInput("c3", "echo", {}))
    assert trio.lowlevel.current_statistics().tasks_living == living


# -- bodies that cannot suspend run without a cancel scope ----------------------------


def test_a_body_that_cannot_suspend_still_reports_aborted_when_it_fired_its_signal(
    driver: Driver,
) -> None:
    """B127 for a scope-less body: it cancels its own signal and returns → ABORTED."""

    async def main() -> None:
        registry = ToolRegistry()

        async def pure(args: Any, ctx: ToolRunContext) -> str:
            ctx.signal.cancel("self")
            return "done anyway"

        registry.register(ToolDefinition("pure", "d", {"type": "object"}, neutral(pure)))
        result = await driver.execute(
            registry, ToolExecutionInput("c1", "pure", {}, CancelSignal())
        )
        assert result.error is not None
        assert result.error.code == "ABORTED"

    driver.run(main)
